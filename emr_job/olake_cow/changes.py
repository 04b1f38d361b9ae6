"""Spark side of one change set: read it once, resolve it per key, count its effect, merge it."""
import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from .errors import UnsupportedDeleteError
from .identifiers import quote, sql_string

KEY = "_olake_id"
ACTION = "__olake_cow_action"  # 'U' upsert the row, 'D' delete the key
ORDER_COLUMNS = ("_cdc_timestamp", "_olake_timestamp")
_GLOB = re.compile(r"([\\*?\[\]{}])")


@dataclass(frozen=True)
class ChangeStats:
    inserted: int  # upserted keys the mirror did not have
    updated: int  # upserted keys the mirror had
    deleted: int  # deleted keys the mirror had
    delete_keys: int  # keys removed by equality deletes alone

    def expected_records(self, parent_records: int, rebuild: bool) -> int:
        if rebuild:
            return self.inserted
        return parent_records + self.inserted - self.deleted


def escape_glob(path: str) -> str:
    """Hadoop expands glob characters in read paths; table names may contain them."""
    return _GLOB.sub(r"\\\1", path)


def read_change_set(session, source_q: str, change_id: Optional[int], key_field_id: int,
                    delete_mode: str, rebuild: bool = False):
    """The resolved change set: one row per key with ACTION ('U' upsert, 'D' delete), including
    keys removed by equality deletes alone. Persisted, so the source is scanned once.

    `rebuild`: only the rows of a new mirror, range-partitioned and sorted by key on the way (the
    one shuffle serves both the per-key resolution and the mirror's sort order), not persisted:
    the source is scanned once, by the write itself."""
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    visible = session.sql(f"SELECT * FROM {source_q} VERSION AS OF {int(change_id)}") \
        if change_id is not None else session.sql(f"SELECT * FROM {source_q} LIMIT 0")
    if rebuild:
        visible = visible.repartitionByRange(F.col(KEY))  # AQE sizes it to the data
    order = [F.col(quote(c)).desc_nulls_last() for c in ORDER_COLUMNS if c in visible.columns]
    ranked = visible.withColumn("__olake_cow_rn", F.row_number().over(
        Window.partitionBy(F.col(KEY)).orderBy(*(order or [F.lit(1)]))))
    latest = ranked.where(F.col("__olake_cow_rn") == 1).drop("__olake_cow_rn")
    if delete_mode == "hard" and "_op_type" in visible.columns:
        action = F.when(F.col("_op_type") == F.lit("d"), F.lit("D")).otherwise(F.lit("U"))
    else:
        action = F.lit("U")
    changes = latest.withColumn(ACTION, action)
    if rebuild:
        return changes  # keys deleted by equality deletes alone are not in a new mirror anyway

    delete_paths = _equality_delete_paths(session, source_q, change_id, key_field_id)
    if delete_paths:
        keys = session.read.parquet(*[escape_glob(p) for p in delete_paths]).select(KEY).distinct()
        delete_only = keys.join(latest.select(KEY), on=KEY, how="left_anti") \
            .withColumn(ACTION, F.lit("D"))
        changes = changes.unionByName(delete_only, allowMissingColumns=True)
    changes = changes.persist(StorageLevel.MEMORY_AND_DISK)
    return changes


def key_range(changes) -> Optional[Tuple[str, str]]:
    """(lowest, highest) key of a change set, None when it is empty."""
    from pyspark.sql import functions as F

    row = changes.agg(F.min(KEY).alias("lo"), F.max(KEY).alias("hi")).collect()[0]
    return None if row["lo"] is None else (str(row["lo"]), str(row["hi"]))


def range_condition(alias: str, keys: Optional[Tuple[str, str]]) -> str:
    """A predicate on the mirror's key that Iceberg turns into file pruning (min/max statistics):
    a mirror sorted by key keeps a change set of nearby keys to a few files."""
    if keys is None:
        return "false"
    return (f"{alias}{quote(KEY)} >= {sql_string(keys[0])} AND "
            f"{alias}{quote(KEY)} <= {sql_string(keys[1])}")


def _equality_delete_paths(session, source_q: str, change_id: Optional[int],
                           key_field_id: int) -> List[str]:
    """Equality-delete files live in the change-set snapshot. The previous boundary (a truncate)
    removed every older delete file, so these are exactly the change set's own."""
    if change_id is None:
        return []
    rows = session.sql(
        f"SELECT file_path, equality_ids FROM {source_q}.{quote('delete_files')} "
        f"VERSION AS OF {int(change_id)} WHERE content = 2").collect()
    for row in rows:
        if list(row["equality_ids"] or []) != [key_field_id]:
            raise UnsupportedDeleteError(
                f"equality delete file {row['file_path']} deletes by field ids {row['equality_ids']}, "
                f"not by _olake_id (field id {key_field_id}); only _olake_id deletes are supported")
    return [r["file_path"] for r in rows]


def change_stats(changes, mirror_keys) -> ChangeStats:
    """Counts of a merge's effect; `mirror_keys`: the mirror's key column (pruned to the change set's
    key range). A rebuild takes its count from its commit instead (it scans the source once)."""
    from pyspark.sql import functions as F

    upsert = F.col(ACTION) == F.lit("U")
    present = mirror_keys.select(F.col(KEY), F.lit(True).alias("__in_mirror"))
    joined = changes.select(KEY, ACTION).join(present, on=KEY, how="left")
    hit = F.col("__in_mirror").isNotNull()
    row = joined.agg(
        F.sum((upsert & ~hit).cast("long")).alias("ins"),
        F.sum((upsert & hit).cast("long")).alias("upd"),
        F.sum((~upsert & hit).cast("long")).alias("del"),
        F.sum((~upsert).cast("long")).alias("dk"),
    ).collect()[0]
    return ChangeStats(int(row["ins"] or 0), int(row["upd"] or 0), int(row["del"] or 0),
                       int(row["dk"] or 0))


def merge_sql(mirror_q: str, view_q: str, mirror_columns: Sequence[str],
              change_columns: Sequence[str], keys: Optional[Tuple[str, str]] = None) -> str:
    """MERGE of a resolved change set: at most one source row per key, so the MERGE is valid.
    `keys`: the change set's key range; every change lies inside it, so adding it to the ON clause
    changes no result but lets Iceberg skip the mirror files outside it."""
    present = {c.lower() for c in change_columns}
    sets = ", ".join(
        f"t.{quote(c)} = " + (f"s.{quote(c)}" if c.lower() in present else "NULL")
        for c in mirror_columns if c != KEY)
    cols = [c for c in mirror_columns if c.lower() in present]
    insert_cols = ", ".join(quote(c) for c in cols)
    insert_vals = ", ".join(f"s.{quote(c)}" for c in cols)
    k, a = quote(KEY), quote(ACTION)
    pruning = f" AND {range_condition('t.', keys)}" if keys else ""
    return (f"MERGE INTO {mirror_q} t USING {view_q} s ON t.{k} = s.{k}{pruning} "
            f"WHEN MATCHED AND s.{a} = 'D' THEN DELETE "
            f"WHEN MATCHED THEN UPDATE SET {sets} "
            f"WHEN NOT MATCHED AND s.{a} = 'U' THEN INSERT ({insert_cols}) VALUES ({insert_vals})")


def aligned_rows(changes, mirror_schema):
    """Upsert rows of a change set with exactly the mirror's columns (missing ones null)."""
    from pyspark.sql import functions as F

    rows = changes.where(F.col(ACTION) == F.lit("U"))
    have = {c.lower(): c for c in rows.columns}
    cols = []
    for f in mirror_schema.fields:
        if f.name.lower() in have:
            cols.append(F.col(quote(have[f.name.lower()])).cast(f.dataType).alias(f.name))
        else:
            cols.append(F.lit(None).cast(f.dataType).alias(f.name))
    return rows.select(*cols)
