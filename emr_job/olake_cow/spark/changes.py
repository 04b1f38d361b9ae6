"""Spark side of a change set: resolve it per key, count its effect, merge it into the mirror."""
from functools import reduce
from typing import Any, List, Optional, Sequence, Tuple

from ..core.identifiers import quote, sql_string

KEY = "_olake_id"
ACTION = "__olake_cow_action"  # 'U' upsert the row, 'D' delete the key
PART = "__olake_cow_part"  # which part of a change set a row came from: later parts win
IS_DELETE = "__olake_cow_is_delete"  # a key with no visible row left in its part
ORDER_COLUMNS = ("_cdc_timestamp", "_olake_timestamp")



def newest_order(columns: Sequence[str]) -> List[Any]:
    from pyspark.sql import functions as F

    return [F.col(quote(c)).desc_nulls_last() for c in ORDER_COLUMNS if c in columns]


def latest_per_key(rows, ranged: bool = False):
    """One row per `_olake_id`: the newest change (a change set may hold two visible rows for a
    key, OLake #1189). `ranged`: range-partition by key first, so the one shuffle also sorts the
    rows for a new mirror."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if ranged:
        rows = rows.repartitionByRange(F.col(KEY))  # AQE sizes it to the data
    order = newest_order(rows.columns) or [F.lit(1)]
    ranked = rows.withColumn("__olake_cow_rn", F.row_number().over(Window.partitionBy(F.col(KEY)).orderBy(*order)))
    return ranked.where(F.col("__olake_cow_rn") == 1).drop("__olake_cow_rn")


def upsert_action(rows, delete_mode: str):
    """ACTION for rows: 'U', or 'D' for a tombstone (`_op_type='d'`) in hard delete mode."""
    from pyspark.sql import functions as F

    if delete_mode == "hard" and "_op_type" in rows.columns:
        return F.when(F.col("_op_type") == F.lit("d"), F.lit("D")).otherwise(F.lit("U"))
    return F.lit("U")


def compose(row_parts: List[Any], key_parts: List[Any], delete_mode: str, schema):
    """The resolved change set of several parts (intervals of the source's history, oldest first):
    `row_parts[i]`, `key_parts[i]`: visible rows and deleted keys of part i, each with a PART
    column. Per key the last part touching it decides; within a part a visible row beats a
    deletion, and the newest row wins."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    frames = [r.withColumn(IS_DELETE, F.lit(0)) for r in row_parts] + \
                     [k.withColumn(IS_DELETE, F.lit(1)) for k in key_parts]
    if not frames:
        return None
    combined = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)
    for f in schema.fields:  # key-only parts: give every column its table type
        if f.name not in combined.columns:
            combined = combined.withColumn(f.name, F.lit(None).cast(f.dataType))
    order = [F.col(PART).desc(), F.col(IS_DELETE).asc()] + newest_order(combined.columns)
    ranked = combined.withColumn("__olake_cow_rn", F.row_number().over(Window.partitionBy(F.col(KEY)).orderBy(*order)))
    latest = ranked.where(F.col("__olake_cow_rn") == 1)
    action = F.when(F.col(IS_DELETE) == F.lit(1), F.lit("D")).otherwise(upsert_action(latest, delete_mode))
    return latest.withColumn(ACTION, action).drop("__olake_cow_rn", PART, IS_DELETE)


def range_condition(alias: str, keys: Optional[Tuple[str, str]]) -> str:
    """A predicate on the mirror's key that Iceberg turns into file pruning (min/max statistics):
    a mirror sorted by key keeps a change set of nearby keys to a few files."""
    if keys is None:
        return "false"
    return (f"{alias}{quote(KEY)} >= {sql_string(keys[0])} AND "
            f"{alias}{quote(KEY)} <= {sql_string(keys[1])}")


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
