"""Small immutable records of Iceberg table metadata, and lineage helpers over them."""
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple

# Summary key the job sets on the source truncate that closes a change set (truncate mode only).
BOUNDARY_KEY = "olake-cow.boundary"
# On a table's first truncate only: the snapshot it was planned on, when no truncate came before it
# (core/truncate.py). A first build after older snapshots were expired may start there.
FIRST_BOUNDARY_KEY = "olake-cow.first-boundary-after"


class Operation(str, Enum):
    """Iceberg snapshot operations (the `operation` summary key)."""

    APPEND = "append"
    REPLACE = "replace"  # files rewritten, table content unchanged
    OVERWRITE = "overwrite"
    DELETE = "delete"


class Summary:
    """Snapshot-summary keys the job reads."""

    ADDED_DATA_FILES = "added-data-files"
    DELETED_DATA_FILES = "deleted-data-files"
    ADDED_DELETE_FILES = "added-delete-files"
    REMOVED_DELETE_FILES = "removed-delete-files"
    ADDED_EQ_DELETE_FILES = "added-equality-delete-files"
    ADDED_POS_DELETE_FILES = "added-position-delete-files"
    ADDED_DVS = "added-dvs"
    ADDED_RECORDS = "added-records"
    DELETED_RECORDS = "deleted-records"
    ADDED_FILES_SIZE = "added-files-size"
    REMOVED_FILES_SIZE = "removed-files-size"
    TOTAL_RECORDS = "total-records"
    TOTAL_DATA_FILES = "total-data-files"
    TOTAL_DELETE_FILES = "total-delete-files"
    TOTAL_FILES_SIZE = "total-files-size"
    TOTAL_EQ_DELETES = "total-equality-deletes"
    TOTAL_POS_DELETES = "total-position-deletes"
    ADDED_POS_DELETES = "added-position-deletes"
    REMOVED_POS_DELETES = "removed-position-deletes"
    WAP_ID = "wap.id"
    PUBLISHED_WAP_ID = "published-wap-id"
    SOURCE_SNAPSHOT_ID = "source-snapshot-id"  # the staged snapshot a cherry-pick published


def exact_rows(summary: Mapping[str, str], format_version: int) -> Optional[int]:
    """The rows a snapshot shows, when its summary (a Java engine's or the core's record) tells them
    exactly, else None: its records when it holds no delete file; in a format-version 3 table without
    equality deletes, its records less the positions its deletion vectors delete (a rewritten data
    file's vector goes with it). Format-version 2 position deletes are not counted: a rewrite leaves
    them behind, dangling, in the summary's totals. A rewrite that keeps content keeps this count."""
    records, deletes = summary.get(Summary.TOTAL_RECORDS), summary.get(Summary.TOTAL_DELETE_FILES)
    if records is None or deletes is None or not str(records).isdigit():
        return None
    if str(deletes) == "0":
        return int(records)
    if format_version < 3 or str(summary.get(Summary.TOTAL_EQ_DELETES)) != "0":
        return None
    positions = str(summary.get(Summary.TOTAL_POS_DELETES))
    return int(records) - int(positions) if positions.isdigit() else None


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    parent_id: Optional[int]
    timestamp_ms: int
    operation: str
    summary: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    sequence_number: Optional[int] = None  # None in format-version 1 tables

    def summary_int(self, key: str, default: int = 0) -> int:
        try:
            return int(self.summary.get(key, default))
        except (TypeError, ValueError):
            return default

    @property
    def is_boundary(self) -> bool:
        return BOUNDARY_KEY in self.summary

    @property
    def adds_files(self) -> bool:
        return (self.summary_int(Summary.ADDED_DATA_FILES) > 0
                or self.summary_int(Summary.ADDED_DELETE_FILES) > 0)

    @property
    def changes_files(self) -> bool:
        """Adds or removes any data or delete file (a schema-only or empty commit does neither)."""
        return self.adds_files or self.removes_data_files or self.summary_int(Summary.REMOVED_DELETE_FILES) > 0

    @property
    def removes_data_files(self) -> bool:
        return self.summary_int(Summary.DELETED_DATA_FILES) > 0

    @property
    def changes_content(self) -> bool:
        """Whether the snapshot can change what the table holds. A `replace` (another tool's
        rewrite_data_files, rewrite_manifests, delete-file rewrites) never does, by Iceberg's spec."""
        return self.changes_files and self.operation != Operation.REPLACE.value


@dataclass(frozen=True)
class TableState:
    """What the planner needs to know about one table, read in one metadata load."""

    exists: bool
    uuid: Optional[str] = None
    current_id: Optional[int] = None
    snapshots: Tuple[Snapshot, ...] = ()
    properties: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    metadata_location: Optional[str] = None
    # the table's location (its folders are under it unless its properties say otherwise)
    location: Optional[str] = field(default=None, compare=False, hash=False)
    key_field_id: Optional[int] = None  # field id of `_olake_id` in the current schema
    key_type: str = "string"  # its Iceberg type ("string" in every table OLake writes)
    key_required: bool = True  # OLake's is required: no row can have a NULL key
    format_version: int = 2
    columns: Tuple[str, ...] = ()  # top-level columns of the current schema, in order
    partitioned: bool = False  # a partition spec of the table has fields (its files may be partitioned)
    # top-level field id -> name in the current schema, and (id, name) of every schema the table had
    fields: Mapping[int, str] = field(default_factory=dict, compare=False, hash=False)
    past_fields: FrozenSet[Tuple[int, str]] = field(default_factory=frozenset, compare=False, hash=False)
    types: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)  # column -> type, current
    # the first column (dotted path) of the current schema holding a list of structs or a map with
    # struct keys or values (None: none), which pyiceberg cannot carry unchanged (core/engines.py)
    struct_collection: Optional[str] = None
    # snapshots a branch or tag points at (expiry keeps them)
    referenced: FrozenSet[int] = field(default_factory=frozenset, compare=False, hash=False)

    def by_id(self) -> Dict[int, Snapshot]:
        return {s.snapshot_id: s for s in self.snapshots}

    def snapshot(self, snapshot_id: Optional[int]) -> Optional[Snapshot]:
        if snapshot_id is None:
            return None
        return self.by_id().get(snapshot_id)


MISSING = TableState(exists=False)


def ancestors(state: TableState, head: Optional[int] = None) -> Tuple[List[Snapshot], bool]:
    """The ancestry of `head` (default: the current snapshot), oldest first, and whether it
    reaches the table's first snapshot (False when older snapshots were expired)."""
    by_id = state.by_id()
    chain: List[Snapshot] = []
    seen = set()
    cur = state.current_id if head is None else head
    while cur is not None and cur in by_id and cur not in seen:
        seen.add(cur)
        snap = by_id[cur]
        chain.append(snap)
        cur = snap.parent_id
    chain.reverse()
    complete = cur is None
    return chain, complete


def snapshots_from_metadata(meta: Mapping[str, Any]) -> Tuple[Snapshot, ...]:
    """Snapshot records from an Iceberg table-metadata JSON object."""
    out = []
    for s in meta.get("snapshots") or ():
        summary = dict(s.get("summary") or {})
        seq = s.get("sequence-number")
        out.append(Snapshot(
            snapshot_id=int(s["snapshot-id"]),
            parent_id=int(s["parent-snapshot-id"]) if s.get("parent-snapshot-id") is not None else None,
            timestamp_ms=int(s.get("timestamp-ms") or 0),
            operation=str(summary.get("operation") or ""),
            summary=summary,
            sequence_number=int(seq) if seq is not None else None,
        ))
    return tuple(out)


def _current_schema(meta: Mapping[str, Any]) -> Mapping[str, Any]:
    schemas = {s.get("schema-id"): s for s in meta.get("schemas") or ()}
    return schemas.get(meta.get("current-schema-id")) or meta.get("schema") or {}


def _key_field(meta: Mapping[str, Any]) -> Mapping[str, Any]:
    for f in _current_schema(meta).get("fields") or ():
        if f.get("name") == "_olake_id":
            return f
    return {}


def _schema_fields(meta: Mapping[str, Any]) -> Dict[str, Any]:
    """The TableState fields of its schemas: the current one's top-level columns (names, field ids,
    types) and the (id, name) of every schema's."""
    current = _current_schema(meta).get("fields") or ()
    return {
        "columns": tuple(str(f.get("name")) for f in current),
        "fields": {int(f["id"]): str(f.get("name")) for f in current},
        "types": {str(f.get("name")): _type_name(f.get("type")) for f in current},
        "past_fields": frozenset((int(f["id"]), str(f.get("name"))) for schema in meta.get("schemas") or ()
                                 for f in schema.get("fields") or ()),
        "struct_collection": _struct_collection(current, ""),
    }


def _struct_collection(fields: Any, prefix: str) -> Optional[str]:
    for f in fields:
        found = _collection_in(f.get("type"), f"{prefix}{f.get('name')}")
        if found:
            return found
    return None


def _collection_in(typ: Any, name: str) -> Optional[str]:
    """`name` when the type (as metadata JSON spells it) is or holds a list of structs or a map with
    struct keys or values; the dotted path of a nested one; None when it holds neither."""
    if not isinstance(typ, Mapping):
        return None
    kind = typ.get("type")
    if kind == "struct":
        return _struct_collection(typ.get("fields") or (), f"{name}.")
    if kind == "list":
        return name if _is_struct(typ.get("element")) else _collection_in(typ.get("element"), name)
    if kind == "map":
        if _is_struct(typ.get("key")) or _is_struct(typ.get("value")):
            return name
        return _collection_in(typ.get("value"), name)
    return None


def _is_struct(typ: Any) -> bool:
    return isinstance(typ, Mapping) and typ.get("type") == "struct"


def _type_name(typ: Any) -> str:
    """A primitive type as Iceberg spells it (`long`, `decimal(10, 2)`); a nested one by its kind."""
    return str(typ.get("type")) if isinstance(typ, Mapping) else str(typ)


def state_from_metadata(meta: Mapping[str, Any], metadata_location: Optional[str] = None) -> TableState:
    current = meta.get("current-snapshot-id")
    if current is not None and int(current) < 0:  # format v1 writes -1 for "none"
        current = None
    key = _key_field(meta)
    return TableState(
        exists=True,
        uuid=meta.get("table-uuid"),
        current_id=int(current) if current is not None else None,
        snapshots=snapshots_from_metadata(meta),
        properties=dict(meta.get("properties") or {}),
        metadata_location=metadata_location,
        location=meta.get("location"),
        key_field_id=int(key["id"]) if key else None,
        key_type=str(key.get("type", "string")),
        key_required=bool(key.get("required", True)),
        format_version=int(meta.get("format-version") or 1),
        partitioned=any(spec.get("fields") for spec in meta.get("partition-specs") or ()),
        **_schema_fields(meta),
        referenced=frozenset(int(r["snapshot-id"]) for r in (meta.get("refs") or {}).values()
                             if isinstance(r, dict) and r.get("snapshot-id") is not None),
    )
