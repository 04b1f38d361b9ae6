"""Spark side of a change set: resolve it per key (core/resolution.py states the rule), count its
effect, merge it into the mirror."""
from functools import reduce
from typing import Any, List, Optional, Sequence, Tuple

from ..core.identifiers import quote, sql_string
from ..core.modes import DeleteMode
from ..core.resolution import ACTION, KEY, ORDER_COLUMNS

DataFrame = Any  # pyspark.sql.DataFrame (pyspark is imported lazily)
PART = "__olake_cow_part"  # which part of a change set a row came from: later parts win
IS_DELETE = "__olake_cow_is_delete"  # a key with no visible row left in its part



def newest_order(columns: Sequence[str]) -> List[Any]:
    from pyspark.sql import functions as F

    return [F.col(quote(c)).desc_nulls_last() for c in ORDER_COLUMNS if c in columns]


def latest_per_key(rows: DataFrame, by: Sequence[Any] = ()) -> DataFrame:
    """One row per `_olake_id`: the newest change (a change set may hold two visible rows for a
    key, OLake #1189). `by`: columns the rows are already partitioned by (kept as they are)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = newest_order(rows.columns) or [F.lit(1)]
    window = Window.partitionBy(*by, F.col(KEY)).orderBy(*order)
    ranked = rows.withColumn("__olake_cow_rn", F.row_number().over(window))
    return ranked.where(F.col("__olake_cow_rn") == 1).drop("__olake_cow_rn")


def partition_clustered_latest(rows: DataFrame, partition_sql: Sequence[str]) -> DataFrame:
    """`latest_per_key` with the rows hash-partitioned by a partition spec's values
    (`partition_sql`, key_partition_sql) and sorted by them and key: each partition's rows in one
    task, in the mirror's sort order, as Iceberg's clustered writer takes them."""
    from pyspark.sql import functions as F

    names = [f"__olake_cow_p{i}" for i in range(len(partition_sql))]
    with_parts = rows.select("*", *(F.expr(e).alias(n) for e, n in zip(partition_sql, names)))
    by = [F.col(n) for n in names]
    return latest_per_key(with_parts.repartition(*by), by).drop(*names)


SAMPLED_KEYS_PER_PARTITION = 200


def range_bounds(sorted_keys: Sequence[str], partitions: int) -> List[str]:
    """The keys that split `sorted_keys` into `partitions` ranges of about equal size (distinct,
    ascending; fewer when the sample has fewer distinct keys)."""
    if partitions <= 1 or not sorted_keys:
        return []
    picks = [sorted_keys[len(sorted_keys) * i // partitions] for i in range(1, partitions)]
    return sorted(set(picks) - {sorted_keys[0]})


_MASK = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def spark_int_hash(value: int, seed: int = 42) -> int:
    """Spark's hash() of an INT (Murmur3_x86_32.hashInt with HashPartitioning's seed 42)."""
    k1 = _rotl((value & _MASK) * 0xCC9E2D51 & _MASK, 15) * 0x1B873593 & _MASK
    h1 = (_rotl(seed ^ k1, 13) * 5 + 0xE6546B64) & _MASK
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _MASK
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def placing_ids(partitions: int) -> List[int]:
    """For each partition p, an int whose Spark hash lands in p (pmod(hash(x), n) == p): a column
    holding these values and hash-partitioned into n partitions puts each row where we chose."""
    first: dict = {}
    x = 0
    while len(first) < partitions:
        first.setdefault(spark_int_hash(x) % partitions, x)  # Python's % is pmod for a positive n
        x += 1
    return [first[p] for p in range(partitions)]


def range_partitioned_latest(session: Any, rows: DataFrame, partitions: int,
                             expected_rows: int, sample_from: Optional[DataFrame] = None) -> Tuple[DataFrame, str]:
    """`latest_per_key` with the rows range-partitioned by key into `partitions` and sorted by key
    within them, for a new mirror. The ranges come from a sample of the key column alone (Spark's
    own range partitioning would run the whole scan a second time to sample it); each row is then
    placed by a hash partitioning whose values we chose, so one shuffle serves the per-key
    resolution and the mirror's sort order. Returns (frame, the partition column to drop)."""
    from pyspark.sql import functions as F

    pid = "__olake_cow_range"
    if partitions <= 1:
        placed = rows.withColumn(pid, F.lit(0)).repartition(1, F.col(pid))
    else:
        fraction = min(1.0, SAMPLED_KEYS_PER_PARTITION * partitions / max(1, expected_rows))
        keys = (rows if sample_from is None else sample_from).select(KEY)
        sample = sorted(r[0] for r in keys.sample(False, fraction, seed=17).collect() if r[0] is not None)
        bounds = range_bounds(sample, partitions)
        ids = placing_ids(len(bounds) + 1)
        expr = F.lit(ids[-1])
        for bound, value in reversed(list(zip(bounds, ids))):
            expr = F.when(F.col(KEY) < F.lit(bound), F.lit(value)).otherwise(expr)
        placed = rows.withColumn(pid, expr.cast("int")).repartition(len(ids), F.col(pid))
    return latest_per_key(placed, by=[F.col(pid)]), pid


def upsert_action(rows: DataFrame, delete_mode: DeleteMode) -> Any:
    """ACTION for rows: 'U', or 'D' for a tombstone (`_op_type='d'`) in hard delete mode."""
    from pyspark.sql import functions as F

    if delete_mode == DeleteMode.HARD and "_op_type" in rows.columns:
        return F.when(F.col("_op_type") == F.lit("d"), F.lit("D")).otherwise(F.lit("U"))
    return F.lit("U")


def compose(row_parts: List[DataFrame], key_parts: List[DataFrame], delete_mode: DeleteMode,
            schema: Any, single_task: bool = False) -> Optional[DataFrame]:
    """The resolved change set of several parts (intervals of the source's history, oldest first):
    `row_parts[i]`, `key_parts[i]`: visible rows and deleted keys of part i, each with a PART
    column. Per key the last part touching it decides; within a part a visible row beats a
    deletion, and the newest row wins. `single_task`: resolved in one task, without a shuffle."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    frames = [r.withColumn(IS_DELETE, F.lit(0)) for r in row_parts] + \
                     [k.withColumn(IS_DELETE, F.lit(1)) for k in key_parts]
    if not frames:
        return None
    combined = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)
    if key_parts:  # key-only parts: every column gets its table type (one projection, one analysis)
        have = set(combined.columns)
        missing = {f.name: F.lit(None).cast(f.dataType) for f in schema.fields if f.name not in have}
        if missing:
            combined = combined.withColumns(missing)
    if single_task:
        # One partition satisfies the window's clustering by key: no exchange, no second stage,
        # no adaptive re-planning. A small change set costs its cold run mostly such stages.
        combined = combined.coalesce(1)
    order = [F.col(PART).desc(), F.col(IS_DELETE).asc()] + newest_order(combined.columns)
    ranked = combined.withColumn("__olake_cow_rn", F.row_number().over(Window.partitionBy(F.col(KEY)).orderBy(*order)))
    latest = ranked.where(F.col("__olake_cow_rn") == 1)
    action = F.when(F.col(IS_DELETE) == F.lit(1), F.lit("D")).otherwise(upsert_action(latest, delete_mode))
    return latest.withColumn(ACTION, action).drop("__olake_cow_rn", PART, IS_DELETE)


def interval_condition(alias: str, intervals: Sequence[Tuple[str, str]]) -> str:
    """A predicate on the mirror's key that Iceberg turns into file pruning (min/max statistics):
    rows inside one of the key `intervals`; none at all for an empty list."""
    if not intervals:
        return "false"
    k = f"{alias}{quote(KEY)}"
    terms = [f"({k} >= {sql_string(lo)} AND {k} <= {sql_string(hi)})" for lo, hi in intervals]
    return terms[0] if len(terms) == 1 else "(" + " OR ".join(terms) + ")"


def key_condition(alias: str, keys: Sequence[Optional[str]], listed: bool = True) -> str:
    """A predicate on the mirror's key, as SQL text (Column.isin makes a py4j call per key: 20,000
    keys took 45.3 s against 1.6 s): rows of one of `keys` (a null key matches none), or with
    `listed=False` every other row, a null key's included (a MERGE never matches it either)."""
    k = f"{alias}{quote(KEY)}"
    values = ", ".join(sql_string(v) for v in keys if v is not None)
    if not values:
        return "false" if listed else "true"
    return f"{k} IN ({values})" if listed else f"({k} IS NULL OR {k} NOT IN ({values}))"


def merge_sql(mirror_q: str, view_q: str, mirror_columns: Sequence[str],
              change_columns: Sequence[str], intervals: Optional[Sequence[Tuple[str, str]]] = None,
              keys: Optional[Sequence[str]] = None) -> str:
    """MERGE of a resolved change set: at most one source row per key, so the MERGE is valid.
    `intervals`: key intervals that hold every mirror row a change can match (core/pruning.py);
    `keys`: the change set's keys, when few. Adding them to the ON clause changes no result but
    lets Iceberg skip every other mirror file, and filters the mirror's rows before the join."""
    present = {c.lower() for c in change_columns}
    sets = ", ".join(
        f"t.{quote(c)} = " + (f"s.{quote(c)}" if c.lower() in present else "NULL")
        for c in mirror_columns if c != KEY)
    cols = [c for c in mirror_columns if c.lower() in present]
    insert_cols = ", ".join(quote(c) for c in cols)
    insert_vals = ", ".join(f"s.{quote(c)}" for c in cols)
    k, a = quote(KEY), quote(ACTION)
    pruning = f" AND {interval_condition('t.', intervals)}" if intervals is not None else ""
    if keys and intervals != ():
        pruning += f" AND {key_condition('t.', keys)}"
    return (f"MERGE INTO {mirror_q} t USING {view_q} s ON t.{k} = s.{k}{pruning} "
            f"WHEN MATCHED AND s.{a} = 'D' THEN DELETE "
            f"WHEN MATCHED THEN UPDATE SET {sets} "
            f"WHEN NOT MATCHED AND s.{a} = 'U' THEN INSERT ({insert_cols}) VALUES ({insert_vals})")


def aligned_rows(changes: DataFrame, mirror_schema: Any) -> DataFrame:
    """Upsert rows of a change set with exactly the mirror's columns (missing ones null)."""
    return conformed(changes.where(f"{quote(ACTION)} = 'U'"), mirror_schema)


def conformed(rows: DataFrame, schema: Any) -> DataFrame:
    """`rows` with exactly the columns of `schema`, of its types (missing ones null)."""
    from pyspark.sql import functions as F

    have = {f.name.lower(): f for f in rows.schema.fields}  # the rows' columns, by name in any case
    pairs = [(have.get(f.name.lower()), f) for f in schema.fields]
    if all(c is not None and c.dataType == f.dataType for c, f in pairs):
        # Every column there with the mirror's type: one projection in one py4j call (the Column
        # API below makes a few per column: a table of 200 rows spent 70 ms there).
        return rows.selectExpr(*(f"{quote(c.name)} AS {quote(f.name)}" for c, f in pairs if c is not None))
    cols = [F.lit(None).cast(f.dataType).alias(f.name) if c is None
            else F.col(quote(c.name)).cast(f.dataType).alias(f.name) for c, f in pairs]
    return rows.select(*cols)
