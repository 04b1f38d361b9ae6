"""An OLake-like writer: commits merge-on-read batches to an Iceberg table the way OLake does.

One commit = one RowDelta holding the batch's data files and the deletes of the rows they replace,
in the table's delete mode, as OLake writes them:
  equality  (OLake up to v0.9, and its default) equality deletes on `_olake_id` for updates and
            deletes (and for pure deletes, Flink-style, with no tombstone row);
  position  (OLake v0.10, format version 2) position deletes of the live rows of those keys;
  dv        (OLake v0.11, format version 3) deletion vectors of those rows, one per data file,
            merged with the data file's earlier vector, which the commit replaces.
A key written twice in the batch loses its older copies through position deletes (deletion vectors
in format 3) unless `dedupe=False`, reproducing OLake #1189. `switch_delete_mode` is OLake's
migrator: one commit that replaces every equality-delete file by position deletes or deletion
vectors of exactly the rows they deleted (a `replace` snapshot, or a row delta).
Data files are written on the JVM by Iceberg's own Parquet writer (values parsed by Iceberg's
SingleValueParser from one JSON text, no Spark job: a Spark append cost 0.3 s a commit) and
committed through the Java API together with the delete files, so field ids, metrics and partitions
are Iceberg's own. A batch of more than FAST_ROWS rows, or a value that JSON form cannot carry, is
written by Spark as a staged (WAP) append instead.
"""
import base64
import datetime as dt
import decimal
import itertools
import json
import math
import threading
import uuid
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from olake_cow.core.identifiers import qualified, quote
from olake_cow.spark.catalog import IcebergCatalog

from .model import TableModel

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
DELETE_MODES = ("equality", "position", "dv")
OLAKE_COLUMNS = (("_op_type", "string"), ("_olake_timestamp", "timestamp"),
                 ("_cdc_timestamp", "timestamp"))


# Batches up to this many rows are written without a Spark job (`_write_data`); larger ones (bench
# and demo backfills) by Spark, whose tasks write in parallel.
FAST_ROWS = 5000


class _NoIcebergJson(ValueError):
    """A value `_iceberg_json` cannot carry exactly: the batch goes through Spark instead."""


def _iceberg_json(typ: Any, value: Any) -> Any:
    """`value` of the Iceberg type `typ` (its JSON form in the table's schema) as Iceberg's
    single-value JSON (SingleValueParser): structs keyed by field id, maps as key and value lists,
    decimals as strings of the column's scale, binary as hex, timestamps with six fraction digits
    (naive ones are UTC, as in `_json_value`)."""
    if value is None:
        return None
    if isinstance(typ, dict):
        kind = typ["type"]
        if kind == "struct":
            return {str(f["id"]): _iceberg_json(f["type"], value.get(f["name"])) for f in typ["fields"]}
        if kind == "list":
            return [_iceberg_json(typ["element"], v) for v in value]
        if kind == "map":
            if any(v is None for v in value.values()):
                raise _NoIcebergJson("a null map value")  # SingleValueParser builds an ImmutableMap
            return {"keys": [_iceberg_json(typ["key"], k) for k in value],
                    "values": [_iceberg_json(typ["value"], v) for v in value.values()]}
        raise _NoIcebergJson(f"type {kind}")
    if typ.startswith("decimal("):
        scale = int(typ[:-1].split(",")[1])
        exact = decimal.Decimal(value).quantize(decimal.Decimal(1).scaleb(-scale))
        if exact != decimal.Decimal(value):
            raise _NoIcebergJson(f"{value} has more than {scale} decimal places")
        return format(exact, "f")
    if typ in ("float", "double"):
        if not math.isfinite(value):
            raise _NoIcebergJson("a float that is not finite")
        return value
    if typ == "binary":
        return bytes(value).hex()
    if typ == "timestamptz":
        return _utc_text(value)
    if typ == "timestamp":
        return _naive_text(value)
    if typ == "date":
        if isinstance(value, dt.datetime):
            raise _NoIcebergJson("a datetime in a date column")
        return value.isoformat()
    if typ in ("string", "int", "long", "boolean"):
        return value
    raise _NoIcebergJson(f"type {typ}")


def _utc_text(value: dt.datetime) -> str:
    """A timestamp with a zone as UTC text with six fraction digits (a naive one is UTC)."""
    utc = value.astimezone(dt.timezone.utc) if value.tzinfo else value
    return utc.replace(tzinfo=None).isoformat(timespec="microseconds") + "+00:00"


def _naive_text(value: dt.datetime) -> str:
    """A timestamp without zone as text with six fraction digits (a zone given is dropped)."""
    return value.replace(tzinfo=None).isoformat(timespec="microseconds")


def _micros(value: Any) -> Any:
    """A timestamp as UTC microseconds (naive ones are UTC), to order a key's copies."""
    if value is None:
        return None
    aware = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    return (aware - EPOCH) // dt.timedelta(microseconds=1)


# How `_json_value` spells the values Spark's JSON reader must parse back exactly.
JSON_OPTIONS = {"mode": "FAILFAST", "dateFormat": "yyyy-MM-dd",
                "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
                "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"}


def _json_value(typ, value: Any) -> Any:
    """`value` of Spark type `typ` as JSON that Spark's reader (JSON_OPTIONS) parses to the same
    value: decimals as strings, binary as base64, timestamps with six fraction digits (naive ones
    are UTC), structs by field name."""
    if value is None:
        return None
    kind = typ.typeName()
    if kind == "struct":  # rows and structs are dicts
        return {f.name: _json_value(f.dataType, value.get(f.name)) for f in typ.fields}
    if kind == "array":
        return [_json_value(typ.elementType, v) for v in value]
    if kind == "map":
        if typ.keyType.typeName() != "string":
            raise TypeError(f"writer: a map keyed by {typ.keyType.simpleString()} has no JSON form")
        return {k: _json_value(typ.valueType, v) for k, v in value.items()}
    if kind == "decimal":
        return str(value)
    if kind == "binary":
        return base64.b64encode(bytes(value)).decode("ascii")
    if kind == "timestamp":
        return _utc_text(value)
    if kind == "timestamp_ntz":
        return _naive_text(value)
    if kind == "date":
        return value.isoformat()
    return value


class OlakeWriter:
    def __init__(self, session, catalog: str, namespace: str, remember: bool = False) -> None:
        self.spark = session  # its own session: the writer sets spark.wap.id on it
        self.catalog, self.namespace = catalog, namespace
        self.models: Dict[str, TableModel] = {}
        self._clock = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
        self._seq = itertools.count(1)
        # remember=True: the resolved table after each snapshot this writer committed (tests that
        # check a mirror against the source snapshot it holds).
        self.remember = remember
        self._history: Dict[str, Dict[int, List[Dict[str, Any]]]] = {}
        self._lock = threading.Lock()
        self.delete_modes: Dict[str, str] = {}  # table -> equality | position | dv
        # Where an equality delete goes in a partitioned table: "row", the partition of the row it
        # removes (Iceberg's scope); "record", the partition of the record carrying the change, as
        # OLake's writers route it (a row whose partition changed stays visible to Iceberg readers).
        self.deletes_in = "row"

    # -- helpers -------------------------------------------------------------------------
    @property
    def tables(self) -> IcebergCatalog:
        return IcebergCatalog(self.spark, self.catalog)

    def q(self, table: str) -> str:
        return qualified(self.catalog, self.namespace, table)

    def tick(self) -> dt.datetime:
        self._clock += dt.timedelta(seconds=1)
        return self._clock

    def model(self, table: str) -> TableModel:
        return self.models.setdefault(table, TableModel())

    def _record(self, table: str, snapshot_id: Optional[int]) -> None:
        if self.remember and snapshot_id is not None:
            rows = [dict(r) for r in self.model(table).rows.values()]
            with self._lock:
                self._history.setdefault(table, {})[snapshot_id] = rows

    def expected_at(self, table: str, snapshot_id: int, delete_mode: str = "keep") -> Optional[List[Dict[str, Any]]]:
        """The resolved table right after `snapshot_id` (None if this writer did not commit it)."""
        with self._lock:
            rows = self._history.get(table, {}).get(snapshot_id)
        if rows is None:
            return None
        kept = [r for r in rows if delete_mode == "keep" or r.get("_op_type") != "d"]
        return sorted(kept, key=lambda r: r["_olake_id"])

    def current_id(self, table: str) -> int:
        return int(self.tables.load(self.namespace, table).currentSnapshot().snapshotId())

    # -- DDL -----------------------------------------------------------------------------
    def create_table(self, table: str, columns: Sequence[Tuple[str, str]],
                     partition_by: Sequence[str] = (), format_version: int = 2, delete_mode: str = "equality") -> None:
        """`delete_mode`: equality, position (format version 2) or dv (format version 3 is then used)."""
        if delete_mode not in DELETE_MODES:
            raise ValueError(f"delete_mode must be one of {DELETE_MODES}, got {delete_mode!r}")
        if delete_mode == "dv":
            format_version = 3
        self.tables.create_namespace(self.namespace)
        cols = ", ".join([f"{quote('_olake_id')} string NOT NULL"]
                         + [f"{quote(n)} {t}" for n, t in list(columns) + list(OLAKE_COLUMNS)])
        part = f" PARTITIONED BY ({', '.join(partition_by)})" if partition_by else ""
        self.spark.sql(f"CREATE TABLE {self.q(table)} ({cols}) USING iceberg{part} "
                       f"TBLPROPERTIES ('format-version'='{format_version}', 'write.wap.enabled'='true', "
                       "'olake_2pc'='{}')")
        self.spark.sql(f"ALTER TABLE {self.q(table)} SET IDENTIFIER FIELDS {quote('_olake_id')}")
        self.spark.sql(f"ALTER TABLE {self.q(table)} WRITE ORDERED BY {quote('_olake_id')}")
        self.models[table] = TableModel()
        self.delete_modes[table] = delete_mode

    def drop_table(self, table: str) -> None:
        self.spark.sql(f"DROP TABLE IF EXISTS {self.q(table)} PURGE")
        self.models.pop(table, None)

    def add_column(self, table: str, name: str, typ: str) -> None:
        self.spark.sql(f"ALTER TABLE {self.q(table)} ADD COLUMN {quote(name)} {typ}")

    def widen_column(self, table: str, name: str, typ: str) -> None:
        self.spark.sql(f"ALTER TABLE {self.q(table)} ALTER COLUMN {quote(name)} TYPE {typ}")

    def rename_column(self, table: str, name: str, new_name: str) -> None:
        """A user (or another tool) renames a column of OLake's table: the rows keep their values
        under the new name."""
        self.spark.sql(f"ALTER TABLE {self.q(table)} RENAME COLUMN {quote(name)} TO {quote(new_name)}")
        with self._lock:
            for row in self.models[table].rows.values():
                if name in row:
                    row[new_name] = row.pop(name)

    # -- commits -------------------------------------------------------------------------
    def backfill(self, table: str, rows: Iterable[Mapping[str, Any]], chunk: int = 0) -> None:
        """Full refresh: append-only commits of `r` rows (one per chunk)."""
        rows = [dict(r, _op_type="r", _cdc_timestamp=EPOCH) for r in rows]
        chunks = [rows[i:i + chunk] for i in range(0, len(rows), chunk)] if chunk else [rows]
        for part in chunks:
            self.commit(table, part)

    def commit(self, table: str, rows: Sequence[Mapping[str, Any]] = (),
               pure_deletes: Iterable[str] = (), dedupe: bool = True) -> Optional[int]:
        """One OLake commit. Rows carry `_olake_id`, `_op_type` (r/c/u/d) and columns;
        `_olake_timestamp`/`_cdc_timestamp` are filled in when missing."""
        now = self.tick()
        batch: List[Dict[str, Any]] = []
        for r in rows:
            row = dict(r)
            row.setdefault("_olake_timestamp", now)
            if "_cdc_timestamp" not in row:
                row["_cdc_timestamp"] = self.tick()
            batch.append(row)
        pure = list(dict.fromkeys(pure_deletes))
        mode = self.delete_modes.get(table, "equality")
        if pure and mode != "equality":
            raise ValueError("pure deletes (no tombstone) are an equality-delete writer's shape (Flink); OLake's "
                             "position and dv modes write a tombstone row (_op_type 'd') for a delete")
        replaced = list(dict.fromkeys(
            [r["_olake_id"] for r in batch if r["_op_type"] in ("u", "d")] + pure))
        t = self.tables.load(self.namespace, table)
        # position and dv modes: where the replaced keys' live rows are, before this batch lands
        live = self._live_positions(table, replaced) if mode != "equality" and replaced else {}
        data_files, placed = self._write_data(t, table, batch) if batch else ([], {})
        t.refresh()
        delta = t.newRowDelta()
        if t.currentSnapshot() is not None:  # a deletion vector it replaces was read from this snapshot
            delta = delta.validateFromSnapshot(t.currentSnapshot().snapshotId())
        for f in data_files:
            delta.addRows(f)
        model = self.model(table)
        if mode == "equality":
            for f in self._eq_delete_files(t, replaced, model, batch):
                delta.addDeletes(f)
        positions = {path: list(rows) for path, rows in live.items()}
        if dedupe and batch:
            for path, rows in _older_copies(placed).items():
                positions.setdefault(path, []).extend(rows)
        added, removed = self._position_deletes(t, positions, {str(f.location()): f for f in data_files})
        for f in added:
            delta.addDeletes(f)
        for f in removed:
            delta.removeDeletes(f)
        if not data_files and not added and not (mode == "equality" and replaced):
            return None
        tag = uuid.uuid4().hex
        delta.set("olake-writer.commit", tag).commit()
        t.refresh()
        t.updateProperties().set("olake_2pc", f'{{"commit":{next(self._seq)}}}').commit()
        model.apply(batch, pure)
        # Our own snapshot, not always the current one: a compactor may have truncated in between.
        # The current one first: listing a long history through py4j costs a call per snapshot.
        current = t.currentSnapshot()
        found = [current] if current.summary().get("olake-writer.commit") == tag else [
            snap for snap in t.snapshots() if snap.summary().get("olake-writer.commit") == tag]
        if not found:
            raise RuntimeError(f"writer: commit {tag} not found in {table}'s snapshots")
        self._record(table, int(found[-1].snapshotId()))
        return int(found[-1].snapshotId())

    # -- what other tools and users do to OLake's table ---------------------------------------
    def delete_where(self, table: str, where_sql: str, matches: Callable[[Mapping[str, Any]], bool],
                     mode: str = "merge-on-read") -> int:
        """A user's `DELETE FROM table WHERE ...` through Spark (merge-on-read: position deletes, or
        deletion vectors on a format-version 3 table; copy-on-write: rewritten files). `matches`
        is the same predicate in Python, applied to the model. Returns the new snapshot id."""
        self.spark.sql(f"ALTER TABLE {self.q(table)} SET TBLPROPERTIES ('write.delete.mode'='{mode}')")
        self.spark.sql(f"DELETE FROM {self.q(table)} WHERE {where_sql}")
        model = self.model(table)
        for key in [k for k, r in model.rows.items() if matches(r)]:
            del model.rows[key]
        snapshot_id = self.current_id(table)
        self._record(table, snapshot_id)
        return snapshot_id

    def rewrite_files(self, table: str, options: Optional[Dict[str, str]] = None) -> Optional[int]:
        """Another tool compacts OLake's table (`rewrite_data_files`: a `replace` snapshot). Returns
        that snapshot's id (None: nothing to rewrite), found by its operation, not as the current
        snapshot: a job's truncate may commit right after it."""
        before = {int(s.snapshotId()) for s in self.tables.load(self.namespace, table).snapshots()}
        opts = {"rewrite-all": "true", **(options or {})}
        text = ", ".join(f"'{k}', '{v}'" for k, v in opts.items())
        ident = f"{quote(self.namespace)}.{quote(table)}".replace("'", "\\'")
        self.spark.sql(f"CALL {quote(self.catalog)}.system.rewrite_data_files(table => '{ident}', "
                       f"options => map({text}))")
        ours = [int(s.snapshotId()) for s in self.tables.load(self.namespace, table).snapshots()
                if int(s.snapshotId()) not in before and s.operation() == "replace"]
        snapshot_id = ours[-1] if ours else None
        self._record(table, snapshot_id)
        return snapshot_id

    def _write_data(self, t, table: str, batch: List[Dict[str, Any]]) -> Tuple[list, Dict[str, list]]:
        """(data files, path -> its rows as (key, _cdc_timestamp, _olake_timestamp) by position) of
        the batch: one file per partition, sorted by `_olake_id` (the table's write order), written
        by Iceberg's Parquet writer on the JVM; through Spark when the batch is large or holds a
        value Iceberg's JSON form cannot carry."""
        if len(batch) > FAST_ROWS:
            return self._stage_data(table, batch)
        schema = t.schema()
        ice = self.spark._jvm.org.apache.iceberg
        struct = json.loads(str(ice.SchemaParser.toJson(schema)))
        rows = sorted(batch, key=lambda r: r["_olake_id"])  # stable: a key's copies keep batch order
        try:
            text = json.dumps([_iceberg_json(struct, r) for r in rows])
        except _NoIcebergJson:
            return self._stage_data(table, batch)
        list_type = getattr(ice.types, "Types$ListType").ofRequired(0, schema.asStruct())
        records = ice.SingleValueParser.fromJson(list_type, text)  # internal values: what InternalWriter takes
        spec = t.spec()
        groups: Dict[str, Tuple[Any, Any, List[int]]] = {}  # partition path -> (key, records, row indexes)
        if spec.isUnpartitioned():
            groups[""] = (None, records, list(range(len(rows))))
        else:
            jvm = self.spark._jvm
            key = ice.PartitionKey(spec, schema)
            for i in range(len(rows)):
                record = records.get(i)
                key.partition(record)
                path = str(spec.partitionToPath(key))
                if path not in groups:
                    groups[path] = (key.copy(), jvm.java.util.ArrayList(), [])
                groups[path][1].add(record)
                groups[path][2].append(i)
        files = ice.io.OutputFileFactory.builderFor(t, 1, next(self._seq)).format(ice.FileFormat.PARQUET).build()
        out, placed = [], {}
        for path in sorted(groups):
            key, group, indexes = groups[path]
            target = (files.newOutputFile(spec, key) if key is not None else files.newOutputFile())
            target = target.encryptingOutputFile()
            appender = ice.InternalData.write(ice.FileFormat.PARQUET, target).schema(schema).build()
            appender.addAll(group)
            appender.close()
            builder = (ice.DataFiles.builder(spec).withPath(target.location()).withFormat(ice.FileFormat.PARQUET)
                       .withFileSizeInBytes(appender.length()).withMetrics(appender.metrics())
                       .withSplitOffsets(appender.splitOffsets()))
            data_file = (builder.withPartition(key) if key is not None else builder).build()
            out.append(data_file)
            placed[str(data_file.location())] = [
                (rows[i]["_olake_id"], _micros(rows[i]["_cdc_timestamp"]), _micros(rows[i]["_olake_timestamp"]))
                for i in indexes]
        return out, placed

    def _stage_data(self, table: str, batch: List[Dict[str, Any]]) -> Tuple[list, Dict[str, list]]:
        """`_write_data` through Spark: a staged (WAP) append of the batch, whose data files the
        commit takes; where each row landed is read back only if a key is written twice."""
        schema = self.spark.table(self.q(table)).schema
        # One task, sorted within it: no range shuffle (its sampling job and shuffle cost a
        # second per commit, most of a Spark test's time), one file per partition as before.
        df = self._frame(schema, batch).coalesce(1)
        wap = f"olake-writer-{uuid.uuid4().hex}"
        self.spark.conf.set("spark.wap.id", wap)
        try:
            df.writeTo(self.q(table)).option("distribution-mode", "none").append()
        finally:
            self.spark.conf.unset("spark.wap.id")
        t = self.tables.load(self.namespace, table)
        staged = [s for s in t.snapshots() if s.summary().get("wap.id") == wap]
        if not staged:
            raise RuntimeError(f"writer: staged append {wap} not found")
        data_files = list(staged[0].addedDataFiles(t.io()))
        if len({r["_olake_id"] for r in batch}) == len(batch):
            return data_files, {}
        paths = [str(f.location()) for f in data_files]
        from pyspark.sql import functions as F

        found = (self.spark.sql(f"SELECT _file, _pos, _olake_id, _cdc_timestamp, _olake_timestamp FROM {self.q(table)} "
                                f"VERSION AS OF {int(staged[0].snapshotId())}")
                 .where(F.col("_file").isin(paths)).orderBy("_file", "_pos").collect())
        placed: Dict[str, list] = {}
        for r in found:
            placed.setdefault(r["_file"], []).append((r["_olake_id"], r["_cdc_timestamp"], r["_olake_timestamp"]))
        return data_files, placed

    def _frame(self, schema, batch: List[Dict[str, Any]]):
        """The batch as a DataFrame parsed on the JVM from one JSON array: a DataFrame made from
        Python rows is a Python RDD, whose worker start and pickling cost about 0.5 s a commit
        (0.75 s against 0.2 s measured). FAILFAST: a value the JSON cannot carry is an error."""
        from pyspark.sql import DataFrame

        jvm = self.spark._jvm
        text = json.dumps([_json_value(schema, r) for r in batch])
        lines = jvm.java.util.ArrayList()
        lines.add(text)  # one text, a top-level array: one row per element, in order
        data = self.spark._jsparkSession.createDataset(lines, jvm.org.apache.spark.sql.Encoders.STRING())
        java_schema = jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json())
        reader = self.spark._jsparkSession.read().schema(java_schema)
        for key, value in JSON_OPTIONS.items():
            reader = reader.option(key, value)
        return DataFrame(reader.json(data), self.spark)

    def _factory(self, t, equality: bool):
        """(delete writers, output files, equality-delete schema). Iceberg up to 1.10 writes deletes
        through GenericAppenderFactory; 1.11 removed it for GenericFileWriterFactory, whose builder
        became public then: the same files either way."""
        jvm = self.spark._jvm
        ice = jvm.org.apache.iceberg
        schema = t.schema()
        cols = jvm.java.util.ArrayList()
        cols.add("_olake_id")
        del_schema = schema.select(cols)
        ids = self.spark.sparkContext._gateway.new_array(jvm.int, 1)
        ids[0] = schema.findField("_olake_id").fieldId()
        files = ice.io.OutputFileFactory.builderFor(t, 1, next(self._seq)).format(ice.FileFormat.PARQUET).build()
        if _has_class(jvm, "org.apache.iceberg.data.GenericAppenderFactory"):
            fac = (ice.data.GenericAppenderFactory(schema, t.spec(), ids, del_schema, None) if equality
                   else ice.data.GenericAppenderFactory(schema, t.spec()))
            return _AppenderDeletes(fac, ice.FileFormat.PARQUET), files, del_schema
        builder = getattr(ice.data, "GenericFileWriterFactory$Builder")(t).deleteFileFormat(ice.FileFormat.PARQUET)
        if equality:
            builder = builder.equalityDeleteRowSchema(del_schema).equalityFieldIds(ids)
        return _FactoryDeletes(builder.build()), files, del_schema

    def _eq_delete_files(self, t, keys: List[str], model: TableModel,
                         batch: List[Dict[str, Any]]) -> list:
        """Equality deletes, written in the partition of the row they must remove (or, with
        `deletes_in="record"`, of the batch's record for the key)."""
        if not keys:
            return []
        jvm = self.spark._jvm
        fac, files, del_schema = self._factory(t, equality=True)
        spec, schema = t.spec(), t.schema()
        proto = jvm.org.apache.iceberg.data.GenericRecord.create(del_schema)
        if spec.isUnpartitioned():
            groups: Dict[str, Tuple[Any, List[str]]] = {"": (None, keys)}
        else:
            groups = {}
            latest = {r["_olake_id"]: r for r in batch}
            source_cols = [str(schema.findColumnName(f.sourceId())) for f in spec.fields()]
            wrapper = jvm.org.apache.iceberg.data.InternalRecordWrapper(schema.asStruct())
            for k in keys:
                row, record = model.rows.get(k), latest.get(k)
                old = (record or row) if self.deletes_in == "record" else (row or record)
                old = old or {"_olake_id": k}
                rec = jvm.org.apache.iceberg.data.GenericRecord.create(schema)
                for c in source_cols:
                    rec.setField(c, self._java_value(schema.findType(c), old.get(c)))
                pk = jvm.org.apache.iceberg.PartitionKey(spec, schema)
                pk.partition(wrapper.wrap(rec))
                path = str(spec.partitionToPath(pk))
                groups.setdefault(path, (pk, []))[1].append(k)
        out = []
        for _, (pk, group_keys) in groups.items():
            target = files.newOutputFile(spec, pk) if pk is not None else files.newOutputFile()
            w = fac.equality(target, spec, pk)
            for k in group_keys:
                rec = proto.copy()
                rec.setField("_olake_id", k)
                w.write(rec)
            w.close()
            out.append(w.toDeleteFile())
        return out

    def _java_value(self, typ, value: Any) -> Any:
        if value is None:
            return None
        jvm = self.spark._jvm
        name = str(typ.typeId().toString())
        if name == "LONG":
            return jvm.java.lang.Long.valueOf(int(value))
        if name == "TIMESTAMP":
            v = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
            if typ.shouldAdjustToUTC():
                return jvm.java.time.OffsetDateTime.parse(v.isoformat())
            return jvm.java.time.LocalDateTime.parse(v.replace(tzinfo=None).isoformat())
        if name == "DATE":
            return jvm.java.time.LocalDate.parse(value.isoformat())
        return value

    def _live_positions(self, table: str, keys: List[str]) -> Dict[str, List[int]]:
        """data file -> positions of the live rows of `keys` (what OLake's position modes delete)."""
        from pyspark.sql import functions as F

        rows = (self.spark.read.format("iceberg").load(self.q(table))
                .select("_file", "_pos").where(F.col("_olake_id").isin(keys)).collect())
        found: Dict[str, List[int]] = {}
        for r in rows:
            found.setdefault(r["_file"], []).append(int(r["_pos"]))
        return found

    def _tasks(self, t) -> Dict[str, Any]:
        """data file path -> its scan task (the file, and the delete files that apply to it)."""
        tasks = {}
        it = t.newScan().planFiles().iterator()
        while it.hasNext():
            task = it.next()
            tasks[str(task.file().location())] = task
        return tasks

    def _position_deletes(self, t, positions: Dict[str, List[int]], new_files: Dict[str, Any]) -> Tuple[list, list]:
        """(delete files to add, delete files they replace) deleting `positions`: position-delete
        files in format version 2, deletion vectors in 3 (each merged with the file's earlier one)."""
        positions = {path: sorted(set(rows)) for path, rows in positions.items() if rows}
        if not positions:
            return [], []
        jvm = self.spark._jvm
        tasks = self._tasks(t) if set(positions) - set(new_files) else {}
        data = {path: (new_files.get(path) or tasks[path].file()) for path in positions}
        spec_of = t.specs()
        if int(t.operations().current().formatVersion()) >= 3:
            return self._deletion_vectors(t, positions, data, tasks)
        fac, files, _ = self._factory(t, equality=False)
        out = []
        for path, rows in sorted(positions.items()):
            data_file = data[path]
            spec = spec_of.get(data_file.specId())
            part = data_file.partition() if not spec.isUnpartitioned() else None
            target = files.newOutputFile(spec, part) if part is not None else files.newOutputFile()
            w = fac.position(target, spec, part)
            for pos in rows:
                pd = jvm.org.apache.iceberg.deletes.PositionDelete.create()
                pd.set(path, jvm.java.lang.Long.valueOf(pos))  # (path, pos): both 1.10 and 1.12 have it
                w.write(pd)
            w.close()
            out.append(w.toDeleteFile())
        return out, []

    def _deletion_vectors(self, t, positions: Dict[str, List[int]], data: Dict[str, Any],
                          tasks: Dict[str, Any]) -> Tuple[list, list]:
        jvm = self.spark._jvm
        ice = jvm.org.apache.iceberg
        # each data file's earlier deletion vector, loaded so the new one holds its positions too
        earlier: Dict[str, Any] = {}
        previous: Dict[str, Any] = {}
        for path in positions:
            task = tasks.get(path)
            for d in (list(task.deletes()) if task is not None else []):
                if str(d.format().toString()) == "PUFFIN" and str(d.referencedDataFile()) == path:
                    previous[path] = d
        if previous:
            io = t.io()
            loader = ice.data.BaseDeleteLoader(_JavaFunction(lambda d: io.newInputFile(d.location())))
            for path, d in previous.items():
                single = jvm.java.util.ArrayList()
                single.add(d)
                earlier[path] = loader.loadPositionDeletes(single, path)
        files = ice.io.OutputFileFactory.builderFor(t, 1, next(self._seq)).format(ice.FileFormat.PUFFIN).build()
        writer = ice.deletes.BaseDVFileWriter(files, _JavaFunction(lambda path: earlier.get(str(path))))
        specs = t.specs()
        for path, rows in sorted(positions.items()):
            spec = specs.get(data[path].specId())
            for pos in rows:
                writer.delete(path, pos, spec, data[path].partition())
        writer.close()
        result = writer.result()
        return list(result.deleteFiles()), list(result.rewrittenDeleteFiles())

    def switch_delete_mode(self, table: str, mode: str, commit: str = "rewrite") -> int:
        """OLake's migrator: one commit that replaces every equality-delete file of the table by
        position deletes (`position`, format 2) or deletion vectors (`dv`, format 3) of exactly the
        rows they deleted; later commits use `mode`. `commit`: "rewrite" (a RewriteFiles commit, a
        `replace` snapshot, as the migrator writes it) or "row_delta". Returns the new snapshot id."""
        if mode not in ("position", "dv") or commit not in ("rewrite", "row_delta"):
            raise ValueError(f"switch to position or dv, by rewrite or row_delta; got {mode!r}, {commit!r}")
        t = self.tables.load(self.namespace, table)
        version = int(t.operations().current().formatVersion())
        if (mode == "dv") != (version >= 3):
            raise ValueError(f"{mode} deletes need format version {3 if mode == 'dv' else 2}; {table} has {version}")
        tasks = self._tasks(t)
        equality = self._equality_delete_files(t)
        keys_of: Dict[str, set] = {}
        positions: Dict[str, List[int]] = {}
        for path, task in tasks.items():
            keys: set = set()
            for d in task.deletes():
                if str(d.content().toString()) == "EQUALITY_DELETES":
                    location = str(d.location())
                    if location not in keys_of:
                        keys_of[location] = set(parquet_column(location, "_olake_id", t.io()))
                    keys |= keys_of[location]
            if keys:
                rows = [i for i, k in enumerate(parquet_column(path, "_olake_id", t.io())) if k in keys]
                if rows:
                    positions[path] = rows
        added, removed = self._position_deletes(t, positions, {})
        tag = uuid.uuid4().hex
        if commit == "rewrite":
            update = t.newRewrite().validateFromSnapshot(t.currentSnapshot().snapshotId())
            for f in list(equality) + removed:
                update = update.deleteFile(f)
            for f in added:
                update = update.addFile(f)
        else:
            update = t.newRowDelta().validateFromSnapshot(t.currentSnapshot().snapshotId())
            for f in list(equality) + removed:
                update = update.removeDeletes(f)
            for f in added:
                update = update.addDeletes(f)
        update.set("olake-writer.commit", tag).commit()
        self.delete_modes[table] = mode
        snapshot_id = self.current_id(table)
        self._record(table, snapshot_id)
        return snapshot_id

    def _equality_delete_files(self, t) -> list:
        """Every live equality-delete file of the current snapshot."""
        ice = self.spark._jvm.org.apache.iceberg
        found = []
        for manifest in t.currentSnapshot().deleteManifests(t.io()):
            reader = ice.ManifestFiles.readDeleteManifest(manifest, t.io(), t.specs())
            it = reader.iterator()
            while it.hasNext():
                f = it.next()
                if str(f.content().toString()) == "EQUALITY_DELETES":
                    found.append(f.copy())
            reader.close()
        return found


def _older_copies(placed: Dict[str, list]) -> Dict[str, List[int]]:
    """data file -> positions of the older copies of a key written twice in the batch: the copy with
    the latest (_cdc_timestamp, _olake_timestamp, position) is kept (a key written once is its own)."""
    best: Dict[str, Tuple[Any, ...]] = {}
    for path, rows in placed.items():
        for pos, (key, cdc, olake) in enumerate(rows):
            if key not in best or (cdc, olake, pos) > best[key][:3]:
                best[key] = (cdc, olake, pos, path)
    doomed: Dict[str, List[int]] = {}
    for path, rows in placed.items():
        for pos, (key, cdc, olake) in enumerate(rows):
            if best[key] != (cdc, olake, pos, path):
                doomed.setdefault(path, []).append(pos)
    return doomed


class _JavaFunction:
    """A java.util.function.Function in Python (py4j calls back into it: PySpark's client server)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def apply(self, value: Any) -> Any:
        return self.fn(value)

    class Java:
        implements = ["java.util.function.Function"]


def parquet_column(location: str, column: str, io=None) -> List[Any]:
    """One column of a Parquet file of the table (local, or S3 through the endpoint and keys of the
    table's S3FileIO `io`), in row order (a row's index is its position)."""
    from urllib.parse import urlparse

    import pyarrow.parquet as pq

    if not location.startswith("s3://"):
        path = urlparse(location).path if location.startswith("file:") else location
        return pq.read_table(path, columns=[column]).column(column).to_pylist()
    from pyarrow import fs

    props = dict(io.properties())
    endpoint = props.get("s3.endpoint", "")
    s3 = fs.S3FileSystem(access_key=props.get("s3.access-key-id"), secret_key=props.get("s3.secret-access-key"),
                         region=props.get("client.region") or props.get("s3.region") or "us-east-1",
                         endpoint_override=endpoint.split("://")[-1] or None,
                         scheme=endpoint.split("://")[0] if "://" in endpoint else "https")
    return pq.read_table(location[len("s3://"):], columns=[column], filesystem=s3).column(column).to_pylist()


def _has_class(jvm, name: str) -> bool:
    from py4j.java_gateway import JavaClass

    found = jvm
    for part in name.split("."):
        found = getattr(found, part)
    return isinstance(found, JavaClass)


class _AppenderDeletes:
    """Delete writers of Iceberg's GenericAppenderFactory (Iceberg 1.10 and before)."""

    def __init__(self, factory, parquet) -> None:
        self.factory, self.parquet = factory, parquet

    def equality(self, target, spec, partition):
        return self.factory.newEqDeleteWriter(target, self.parquet, partition)

    def position(self, target, spec, partition):
        return self.factory.newPosDeleteWriter(target, self.parquet, partition)


class _FactoryDeletes:
    """Delete writers of Iceberg's GenericFileWriterFactory (Iceberg 1.11 and after)."""

    def __init__(self, factory) -> None:
        self.factory = factory

    def equality(self, target, spec, partition):
        return self.factory.newEqualityDeleteWriter(target, spec, partition)

    def position(self, target, spec, partition):
        return self.factory.newPositionDeleteWriter(target, spec, partition)

