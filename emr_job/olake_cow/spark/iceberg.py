"""Thin adapter over Iceberg's Java API (through py4j) for what Spark SQL cannot do atomically:
loading metadata in one read, the marked truncate, publishing with the checkpoint in one commit,
mirror creation and evolution, and reading which files a snapshot added or removed."""
import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..core.checkpoint import CHECKPOINT_PROPERTY
from ..core.errors import SchemaEvolutionError, TableNotFoundError
from ..core.renames import field_names, renames
from ..core.snapshots import BOUNDARY_KEY, MISSING, TableState, state_from_metadata

TARGET_FILE_SIZE = "write.target-file-size-bytes"
DEFAULT_TARGET_FILE_MB = 128  # smaller than Iceberg's 512: a copy-on-write merge rewrites whole files
_WRITE_MODES = ("write.delete.mode", "write.update.mode", "write.merge.mode")


def target_file_size(mb: int) -> str:
    """The TARGET_FILE_SIZE property value for `mb` megabytes."""
    return str(mb * 1024 * 1024)


def write_mode_properties(merge_on_read: bool) -> Dict[str, str]:
    mode = "merge-on-read" if merge_on_read else "copy-on-write"
    return {key: mode for key in _WRITE_MODES}


def _java_class_name(exc: BaseException) -> str:
    java = getattr(exc, "java_exception", None)
    if java is None:
        return ""
    try:
        return str(java.getClass().getName())
    except Exception:  # noqa: BLE001 - py4j proxies may be gone
        return ""


def is_java_error(exc: BaseException, *simple_names: str) -> bool:
    name = _java_class_name(exc)
    return any(name.endswith("." + n) or name == n for n in simple_names)


def java_message(exc: BaseException) -> str:
    java = getattr(exc, "java_exception", None)
    try:
        return str(java.getMessage()) if java is not None else str(exc)
    except Exception:  # noqa: BLE001
        return str(exc)


class IcebergTables:
    """Java catalog access for one Spark session and catalog."""

    def __init__(self, session, catalog: str) -> None:
        self.session = session
        self.catalog_name = catalog
        self.jvm = session._jvm
        # Catalog plugins read the conf of the thread's active session, not of their owner.
        self.jvm.org.apache.spark.sql.SparkSession.setActiveSession(session._jsparkSession)
        spark_catalog = session._jsparkSession.sessionState().catalogManager().catalog(catalog)
        self.catalog = spark_catalog.icebergCatalog()
        self._idents: Dict[Tuple[str, str], Any] = {}  # a run looks the same few tables up many times

    def _namespace(self, namespace: str):
        arr = self.session.sparkContext._gateway.new_array(self.jvm.java.lang.String, 1)
        arr[0] = namespace
        return self.jvm.org.apache.iceberg.catalog.Namespace.of(arr)

    def ident(self, namespace: str, table: str):
        """The table's identifier (immutable on the Java side, so kept: four py4j calls each)."""
        found = self._idents.get((namespace, table))
        if found is None:
            found = self.jvm.org.apache.iceberg.catalog.TableIdentifier.of(self._namespace(namespace), table)
            self._idents[(namespace, table)] = found
        return found

    def load(self, namespace: str, table: str):
        try:
            return self.catalog.loadTable(self.ident(namespace, table))
        except Exception as exc:  # py4j wraps the Java exception
            if is_java_error(exc, "NoSuchTableException", "NoSuchNamespaceException"):
                raise TableNotFoundError(f"table {namespace}.{table} does not exist") from None
            raise

    def state(self, namespace: str, table: str) -> TableState:
        try:
            t = self.load(namespace, table)
        except TableNotFoundError:
            return MISSING
        meta = t.operations().current()
        text = self.jvm.org.apache.iceberg.TableMetadataParser.toJson(meta)
        return state_from_metadata(json.loads(text), str(meta.metadataFileLocation()))

    def lists_by_prefix(self, namespace: str, table: str) -> bool:
        """Whether the table's FileIO can list files under a prefix (SupportsPrefixOperations)."""
        io = self.load(namespace, table).io()
        # Through the FileIO's own class loader: Iceberg's jar is not on the system class path.
        kind = self.jvm.java.lang.Class.forName("org.apache.iceberg.io.SupportsPrefixOperations", True,
                                                io.getClass().getClassLoader())
        return bool(kind.isInstance(io))

    def namespace_exists(self, namespace: str) -> bool:
        return bool(self.catalog.namespaceExists(self._namespace(namespace)))

    def create_namespace(self, namespace: str) -> None:
        if not self.namespace_exists(namespace):
            try:
                self.catalog.createNamespace(self._namespace(namespace))
            except Exception:
                # Tables of one run create it concurrently; some catalogs (JDBC) then fail with a
                # SQL error instead of AlreadyExistsException.
                if not self.namespace_exists(namespace):
                    raise

    def list_tables(self, namespace: str) -> List[str]:
        if not self.namespace_exists(namespace):
            raise TableNotFoundError(f"namespace {namespace!r} does not exist in catalog "
                                     f"{self.catalog_name!r}")
        return sorted(str(i.name()) for i in self.catalog.listTables(self._namespace(namespace)))

    # --- source -----------------------------------------------------------------------------
    def truncate(self, namespace: str, table: str, run_id: str) -> int:
        """Truncate mode: delete every file of the current snapshot, marking the snapshot as a
        boundary. On a concurrent commit Iceberg retries on the new base, so the parent always
        holds exactly what was removed."""
        t = self.load(namespace, table)
        always = self.jvm.org.apache.iceberg.expressions.Expressions.alwaysTrue()
        t.newDelete().deleteFromRowFilter(always).set(BOUNDARY_KEY, run_id).commit()
        t.refresh()
        return int(t.currentSnapshot().snapshotId())

    def added_data_sequence(self, namespace: str, table: str, snapshot_id: int) -> Optional[int]:
        """Data sequence number of the first data file a snapshot added (a rewrite gives all its
        outputs the sequence number of the snapshot it started from)."""
        t = self.load(namespace, table)
        snap = t.snapshot(int(snapshot_id))
        if snap is None:
            return None
        it = snap.addedDataFiles(t.io()).iterator()
        if not it.hasNext():
            return None
        seq = it.next().dataSequenceNumber()
        return int(seq) if seq is not None else None

    def data_file_bounds(self, namespace: str, table: str,
                         field_id: int) -> List[Tuple[str, Optional[str], Optional[str], int]]:
        """(path, lower bound, upper bound of a string column, size in bytes) of every data file of
        the table's current snapshot, from its manifests (a few py4j calls per file: for small tables)."""
        t = self.load(namespace, table)
        if t.currentSnapshot() is None:
            return []
        out = []
        scan = t.newScan().includeColumnStats().planFiles()  # a scan drops column stats unless asked
        try:
            it = scan.iterator()
            while it.hasNext():
                f = it.next().file()
                out.append((str(f.location()), self._bound(f.lowerBounds(), field_id),
                            self._bound(f.upperBounds(), field_id),
                            int(f.fileSizeInBytes())))
        finally:
            scan.close()
        return out

    def live_files_after(self, namespace: str, table: str, snapshot_id: int, after_seq: int,
                         key_field_id: Optional[int], path_field_id: int, most: int) -> Optional[List[Dict]]:
        """The data and delete files live in a snapshot with a data sequence number above
        `after_seq`, read from its manifests (what the `entries` metadata table gives, without a
        Spark job); None when the manifests that can hold them list more than `most` files (a
        few py4j calls per file: for the small sets a run usually reads)."""
        t = self.load(namespace, table)
        snap = t.snapshot(int(snapshot_id))
        if snap is None:
            return []
        iceberg, io, specs = self.jvm.org.apache.iceberg, t.io(), t.specs()
        manifests = [m for m in snap.allManifests(io) if int(m.sequenceNumber()) > after_seq]
        listed = 0
        for m in manifests:
            added, existing = m.addedFilesCount(), m.existingFilesCount()
            if added is None or existing is None:
                return None
            listed += int(added) + int(existing)
        if listed > most:
            return None
        bound = self._bound
        out = []
        for m in manifests:
            deletes = str(m.content().name()) == "DELETES"
            reader = (iceberg.ManifestFiles.readDeleteManifest(m, io, specs) if deletes
                      else iceberg.ManifestFiles.read(m, io, specs))
            try:
                it = reader.iterator()  # live entries only (added and existing)
                while it.hasNext():
                    f = it.next()
                    seq = f.dataSequenceNumber()
                    if seq is None or int(seq) <= after_seq:
                        continue
                    lower, upper = f.lowerBounds(), f.upperBounds()
                    eq = f.equalityFieldIds() if deletes else None
                    out.append({"seq": int(seq), "content": int(f.content().id()), "path": str(f.location()),
                                "format": str(f.format().name()), "size": int(f.fileSizeInBytes()),
                                "records": int(f.recordCount()),
                                "ref": (str(f.referencedDataFile()) if deletes and f.referencedDataFile() is not None
                                        else None),
                                "eq": tuple(int(i) for i in eq) if eq is not None else (),
                                "lo": bound(lower, key_field_id, True), "hi": bound(upper, key_field_id, True),
                                "ref_lo": bound(lower, path_field_id, False) if deletes else None,
                                "ref_hi": bound(upper, path_field_id, False) if deletes else None})
            finally:
                reader.close()
        return out

    def _bound(self, bounds, field_id: Optional[int], text: bool = True):
        """One column's bound from a file's lower or upper bounds map: decoded as a string, or the
        raw bytes; None when absent."""
        value = bounds.get(field_id) if bounds is not None and field_id is not None else None
        if value is None:
            return None
        iceberg = self.jvm.org.apache.iceberg
        if text:
            return str(iceberg.types.Conversions.fromByteBuffer(iceberg.types.Types.StringType.get(), value))
        return bytes(iceberg.util.ByteBuffers.toByteArray(value))

    def removed_data_files(self, namespace: str, table: str, snapshot_id: int) -> List[Tuple[str, int]]:
        """(path, data sequence number) of the data files a snapshot removed."""
        t = self.load(namespace, table)
        snap = t.snapshot(int(snapshot_id))
        if snap is None:
            return []
        return [(str(f.location()), int(f.dataSequenceNumber())) for f in snap.removedDataFiles(t.io())]

    # --- mirror -----------------------------------------------------------------------------
    def publish(self, namespace: str, table: str, staged_id: int, checkpoint: str) -> int:
        """Fast-forward (or, for appends, cherry-pick) a staged snapshot and set the checkpoint
        property in the same commit; returns the new current id."""
        t = self.load(namespace, table)
        tx = t.newTransaction()
        tx.manageSnapshots().cherrypick(int(staged_id)).commit()
        tx.updateProperties().set(CHECKPOINT_PROPERTY, checkpoint).commit()
        tx.commitTransaction()
        t.refresh()
        return int(t.currentSnapshot().snapshotId())

    def set_checkpoint(self, namespace: str, table: str, value: str) -> None:
        self.set_properties(namespace, table, {CHECKPOINT_PROPERTY: value})

    def set_property(self, namespace: str, table: str, key: str, value: str) -> None:
        self.set_properties(namespace, table, {key: value})

    def set_properties(self, namespace: str, table: str, values: Mapping[str, str]) -> None:
        t = self.load(namespace, table)
        update = t.updateProperties()
        for key, value in values.items():
            update = update.set(key, value)
        update.commit()

    def set_properties_sql(self, namespace: str, table: str, values: Mapping[str, str]) -> None:
        """Through Spark SQL, which also upgrades the format version when it is among them."""
        from ..core.identifiers import qualified, sql_string

        pairs = ", ".join(f"{sql_string(k)}={sql_string(v)}" for k, v in values.items())
        self.session.sql(f"ALTER TABLE {qualified(self.catalog_name, namespace, table)} SET TBLPROPERTIES ({pairs})")

    def create_mirror(self, source_ns: str, source: str, ns: str, table: str,
                      location: Optional[str], properties: Mapping[str, str]) -> None:
        """Create the mirror with the source's current schema, partition spec and sort order
        (sorted by `_olake_id` when the source has none)."""
        src = self.load(source_ns, source)
        schema = src.schema()
        props = self.jvm.java.util.HashMap()
        for k, v in properties.items():
            props.put(k, v)
        builder = (self.catalog.buildTable(self.ident(ns, table), schema)
                   .withPartitionSpec(src.spec()).withSortOrder(self._wanted_order(src, schema))
                   .withProperties(props))
        if location:
            builder = builder.withLocation(location)
        builder.create()

    def drop(self, namespace: str, table: str) -> None:
        self.catalog.dropTable(self.ident(namespace, table), True)

    def evolve_mirror(self, source_ns: str, source: str, ns: str, table: str) -> List[str]:
        """Make the mirror follow the source: new columns (nested ones too) and allowed type
        promotions, the partition spec (Iceberg partition evolution) and the sort order. Columns
        only the mirror has are kept. Returns what changed; SchemaEvolutionError when the source
        changed a type in a way Iceberg cannot promote."""
        src, mirror = self.load(source_ns, source), self.load(ns, table)
        changed = []
        if self._follow_renames(src, mirror):
            mirror.refresh()
            changed.append("renamed columns")
        update = mirror.updateSchema().unionByNameWith(src.schema())
        try:
            wanted = update.apply()
        except Exception as exc:  # noqa: BLE001 - IllegalArgumentException through py4j
            raise SchemaEvolutionError(f"{source_ns}.{source}: the source's schema cannot be applied to the "
                                       f"mirror: {java_message(exc)}") from None
        if not wanted.sameSchema(mirror.schema()):
            update.commit()
            mirror.refresh()
            changed.append("schema")
        if self._spec_terms(src) != self._spec_terms(mirror):
            self._follow_spec(src, mirror)
            mirror.refresh()
            changed.append("partition spec")
        order = self._wanted_order(src, mirror.schema())
        if self._order_terms(order, mirror.schema()) != self._order_terms(mirror.sortOrder(), mirror.schema()):
            replace = mirror.replaceSortOrder()
            null_order = self.jvm.org.apache.iceberg.NullOrder
            for transform, column, direction, nulls in self._order_terms(order, mirror.schema()):
                term = self._term(transform, column)
                nulls_java = null_order.valueOf(nulls)
                replace = replace.asc(term, nulls_java) if direction == "ASC" else replace.desc(term, nulls_java)
            replace.commit()
            changed.append("sort order")
        return changed

    def _follow_renames(self, src, mirror) -> bool:
        """Rename the mirror's columns the source renamed (core/renames.py); whether any was."""
        to_json = self.jvm.org.apache.iceberg.SchemaParser.toJson
        current, held = json.loads(to_json(src.schema())), json.loads(to_json(mirror.schema()))
        if set(field_names(current).values()) <= set(field_names(held).values()):
            return False  # every source name is in the mirror: no older schema is needed
        schemas = [json.loads(to_json(s)) for s in src.schemas().values()]
        found = renames(schemas, int(src.schema().schemaId()), held)
        if not found:
            return False
        update = mirror.updateSchema()
        for old, new in found:
            update = update.renameColumn(old, new)
        update.commit()
        return True

    def _wanted_order(self, src, schema):
        order = src.sortOrder()
        if order.isUnsorted():
            order = self.jvm.org.apache.iceberg.SortOrder.builderFor(schema).asc("_olake_id").build()
        return order

    def _term(self, transform: str, column: str):
        exprs = self.jvm.org.apache.iceberg.expressions.Expressions
        name, _, arg = transform.partition("[")
        if name == "identity":
            return exprs.ref(column)
        if name in ("bucket", "truncate"):
            return getattr(exprs, name)(column, int(arg.rstrip("]")))
        if name in ("year", "month", "day", "hour"):
            return getattr(exprs, name)(column)
        raise SchemaEvolutionError(f"partition or sort transform {transform!r} on {column!r} is not supported")

    @staticmethod
    def _spec_terms(t) -> List[Tuple[str, str]]:
        schema = t.schema()
        return sorted((str(f.transform().toString()), str(schema.findColumnName(f.sourceId())))
                      for f in t.spec().fields() if str(f.transform().toString()) != "void")

    def _follow_spec(self, src, mirror) -> None:
        want = set(self._spec_terms(src))
        schema = mirror.schema()
        update = mirror.updateSpec()
        have = set()
        for f in mirror.spec().fields():
            term = (str(f.transform().toString()), str(schema.findColumnName(f.sourceId())))
            if term[0] == "void":
                continue
            have.add(term)
            if term not in want:
                update = update.removeField(f.name())
        for transform, column in sorted(want - have):
            update = update.addField(self._term(transform, column))
        update.commit()

    @staticmethod
    def _order_terms(order, schema) -> List[Tuple[str, str, str, str]]:
        return [(str(f.transform().toString()), str(schema.findColumnName(f.sourceId())),
                 str(f.direction().name()), str(f.nullOrder().name())) for f in order.fields()]

    def spec_string(self, namespace: str, table: str) -> str:
        """Partition spec as 'transform(column)' terms, comparable across tables."""
        return ",".join(f"{transform}({column})" for transform, column in self._spec_terms(self.load(namespace, table)))
