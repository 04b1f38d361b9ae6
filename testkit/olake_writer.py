"""An OLake-like writer: commits merge-on-read batches to an Iceberg table the way OLake does.

One commit = one RowDelta holding the batch's data files, equality deletes on `_olake_id` for
updates and deletes (and for pure deletes, Flink-style, with no tombstone row), and position
deletes for a key written twice in the batch (unless `dedupe=False`, reproducing OLake #1189).
Data files are produced by Spark as a staged (WAP) append and then committed through the Java
API together with the delete files, so field ids, metrics and partitions are Iceberg's own.
"""
import datetime as dt
import itertools
import threading
import uuid
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from olake_cow.core.identifiers import qualified, quote
from olake_cow.spark.iceberg import IcebergTables

from .model import TableModel

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
OLAKE_COLUMNS = (("_op_type", "string"), ("_olake_timestamp", "timestamp"),
                 ("_cdc_timestamp", "timestamp"))


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

    # -- helpers -------------------------------------------------------------------------
    @property
    def tables(self) -> IcebergTables:
        return IcebergTables(self.spark, self.catalog)

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
                     partition_by: Sequence[str] = (), format_version: int = 2) -> None:
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
        eq_keys = list(dict.fromkeys(
            [r["_olake_id"] for r in batch if r["_op_type"] in ("u", "d")] + pure))
        t = self.tables.load(self.namespace, table)
        staged, data_files = self._stage_data(table, batch) if batch else (None, [])
        t.refresh()
        delta = t.newRowDelta()
        for f in data_files:
            delta.addRows(f)
        model = self.model(table)
        for f in self._eq_delete_files(t, eq_keys, model, batch):
            delta.addDeletes(f)
        if dedupe and batch:
            for f in self._dup_position_deletes(table, t, staged, data_files, batch):
                delta.addDeletes(f)
        if not data_files and not eq_keys:
            return None
        tag = uuid.uuid4().hex
        delta.set("olake-writer.commit", tag).commit()
        t.refresh()
        t.updateProperties().set("olake_2pc", f'{{"commit":{next(self._seq)}}}').commit()
        model.apply(batch, pure)
        # Our own snapshot, not the current one: a compactor may have truncated in between.
        for snap in reversed(list(t.snapshots())):
            if snap.summary().get("olake-writer.commit") == tag:
                self._record(table, int(snap.snapshotId()))
                return int(snap.snapshotId())
        raise RuntimeError(f"writer: commit {tag} not found in {table}'s snapshots")

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

    def rewrite_files(self, table: str, options: Optional[Dict[str, str]] = None) -> None:
        """Another tool compacts OLake's table (`rewrite_data_files`: a `replace` snapshot)."""
        opts = {"rewrite-all": "true", **(options or {})}
        text = ", ".join(f"'{k}', '{v}'" for k, v in opts.items())
        ident = f"{quote(self.namespace)}.{quote(table)}".replace("'", "\\'")
        self.spark.sql(f"CALL {quote(self.catalog)}.system.rewrite_data_files(table => '{ident}', "
                       f"options => map({text}))")
        self._record(table, self.current_id(table))

    def _stage_data(self, table: str, batch: List[Dict[str, Any]]) -> tuple:
        """(staged snapshot, its data files) of a WAP append of the batch."""
        schema = self.spark.table(self.q(table)).schema
        data = [tuple(r.get(f.name) for f in schema.fields) for r in batch]
        df = self.spark.createDataFrame(data, schema=schema)
        wap = f"olake-writer-{uuid.uuid4().hex}"
        self.spark.conf.set("spark.wap.id", wap)
        try:
            df.writeTo(self.q(table)).append()
        finally:
            self.spark.conf.unset("spark.wap.id")
        t = self.tables.load(self.namespace, table)
        staged = [s for s in t.snapshots() if s.summary().get("wap.id") == wap]
        if not staged:
            raise RuntimeError(f"writer: staged append {wap} not found")
        return staged[0], list(staged[0].addedDataFiles(t.io()))

    def _factory(self, t, equality: bool):
        jvm = self.spark._jvm
        schema = t.schema()
        cols = jvm.java.util.ArrayList()
        cols.add("_olake_id")
        del_schema = schema.select(cols)
        ids = self.spark.sparkContext._gateway.new_array(jvm.int, 1)
        ids[0] = schema.findField("_olake_id").fieldId()
        if equality:
            fac = jvm.org.apache.iceberg.data.GenericAppenderFactory(schema, t.spec(), ids, del_schema, None)
        else:
            fac = jvm.org.apache.iceberg.data.GenericAppenderFactory(schema, t.spec())
        files = jvm.org.apache.iceberg.io.OutputFileFactory.builderFor(t, 1, next(self._seq)) \
            .format(jvm.org.apache.iceberg.FileFormat.PARQUET).build()
        return fac, files, del_schema

    def _eq_delete_files(self, t, keys: List[str], model: TableModel,
                         batch: List[Dict[str, Any]]) -> list:
        """Equality deletes, written in the partition of the row they must remove."""
        if not keys:
            return []
        jvm = self.spark._jvm
        fac, files, del_schema = self._factory(t, equality=True)
        spec, schema = t.spec(), t.schema()
        parquet = jvm.org.apache.iceberg.FileFormat.PARQUET
        proto = jvm.org.apache.iceberg.data.GenericRecord.create(del_schema)
        if spec.isUnpartitioned():
            groups: Dict[str, Tuple[Any, List[str]]] = {"": (None, keys)}
        else:
            groups = {}
            latest = {r["_olake_id"]: r for r in batch}
            source_cols = [str(schema.findColumnName(f.sourceId())) for f in spec.fields()]
            wrapper = jvm.org.apache.iceberg.data.InternalRecordWrapper(schema.asStruct())
            for k in keys:
                old = model.rows.get(k) or latest.get(k) or {"_olake_id": k}
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
            w = fac.newEqDeleteWriter(target, parquet, pk)
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

    def _dup_position_deletes(self, table: str, t, staged, data_files: list,
                              batch: List[Dict[str, Any]]) -> list:
        counts: Dict[str, int] = {}
        for r in batch:
            counts[r["_olake_id"]] = counts.get(r["_olake_id"], 0) + 1
        if all(c == 1 for c in counts.values()):
            return []
        from pyspark.sql import functions as F

        paths = {str(f.location()): f for f in data_files}
        staged_id = int(staged.snapshotId())
        df = (self.spark.read.format("iceberg").option("snapshot-id", staged_id)
              .load(self.q(table))
              .select("_file", "_pos", "_olake_id", "_cdc_timestamp", "_olake_timestamp")
              .where(F.col("_file").isin(list(paths))))
        rows = df.collect()
        best: Dict[str, Any] = {}
        for r in rows:
            k = r["_olake_id"]
            cur = best.get(k)
            if cur is None or (r["_cdc_timestamp"], r["_olake_timestamp"], r["_pos"]) > \
                    (cur["_cdc_timestamp"], cur["_olake_timestamp"], cur["_pos"]):
                best[k] = r
        doomed: Dict[str, List[int]] = {}
        for r in rows:
            if best[r["_olake_id"]] is not r and counts.get(r["_olake_id"], 0) > 1:
                doomed.setdefault(r["_file"], []).append(int(r["_pos"]))
        jvm = self.spark._jvm
        fac, files, _ = self._factory(t, equality=False)
        parquet = jvm.org.apache.iceberg.FileFormat.PARQUET
        out = []
        for path, positions in sorted(doomed.items()):
            data_file = paths[path]
            part = data_file.partition() if not t.spec().isUnpartitioned() else None
            target = files.newOutputFile(t.spec(), part) if part is not None else files.newOutputFile()
            w = fac.newPosDeleteWriter(target, parquet, part)
            for pos in sorted(positions):
                pd = jvm.org.apache.iceberg.deletes.PositionDelete.create()
                pd.set(path, jvm.java.lang.Long.valueOf(pos), None)
                w.write(pd)
            w.close()
            out.append(w.toDeleteFile())
        return out
