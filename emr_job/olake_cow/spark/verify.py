"""`--verify`: compare a readonly mirror with its source resolved by Spark at the snapshot the
mirror holds. A full scan of both tables: row counts, keys missing from or extra in the mirror,
and rows that differ (an order-independent hash per key over the mirror's columns)."""
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List

from ..core.identifiers import quote
from ..core.modes import DeleteMode
from .changes import KEY, latest_per_key

EXAMPLES = 5


@dataclass
class VerifyResult:
    source_snapshot: int
    source_rows: int = 0
    mirror_rows: int = 0
    missing_keys: int = 0  # in the source, not in the mirror
    extra_keys: int = 0  # in the mirror, not in the source
    differing_rows: int = 0  # same key, other values
    duplicate_keys: int = 0  # keys the mirror holds more than once
    examples: Dict[str, List[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.missing_keys or self.extra_keys or self.differing_rows or self.duplicate_keys
                    or self.source_rows != self.mirror_rows)

    def describe(self) -> str:
        if self.ok:
            return f"equal ({self.mirror_rows} rows)"
        return (f"{self.source_rows} source rows, {self.mirror_rows} mirror rows; {self.missing_keys} missing, "
                f"{self.extra_keys} extra, {self.differing_rows} differing, {self.duplicate_keys} duplicate key(s)")

    def to_dict(self) -> Dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def _hashed(frame: Any, columns: List[str], types: Dict[str, str]) -> Any:
    from pyspark.sql import functions as F

    values = F.struct(*[F.col(quote(c)).cast(types[c]).alias(c) for c in columns])
    return frame.select(F.col(KEY), F.sha2(F.to_json(values), 256).alias("__olake_cow_hash"))


def verify_mirror(session: Any, source_q: str, mirror_q: str, snapshot_id: int,
                  delete_mode: DeleteMode) -> VerifyResult:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    mirror = session.table(mirror_q)
    source = latest_per_key(session.sql(f"SELECT * FROM {source_q} VERSION AS OF {int(snapshot_id)}"))
    if delete_mode == DeleteMode.HARD and "_op_type" in source.columns:
        source = source.where(F.col("_op_type").isNull() | (F.col("_op_type") != F.lit("d")))
    types = {f.name: f.dataType for f in mirror.schema.fields}
    columns = [c for c in mirror.columns if c in set(source.columns)]
    src = _hashed(source, columns, types).alias("s")
    mir = _hashed(mirror, columns, types).alias("m")
    joined = src.join(mir, on=KEY, how="full_outer").select(
        F.col(KEY), F.col("s.__olake_cow_hash").alias("sh"), F.col("m.__olake_cow_hash").alias("mh"))
    kind = (F.when(F.col("mh").isNull(), F.lit("missing")).when(F.col("sh").isNull(), F.lit("extra"))
            .when(F.col("sh") != F.col("mh"), F.lit("differing")))
    joined = joined.withColumn("kind", kind).cache()
    try:
        row = joined.agg(F.count("sh").alias("src"), F.count("mh").alias("mir"),
                         *[F.sum((F.col("kind") == F.lit(k)).cast("long")).alias(k)
                           for k in ("missing", "extra", "differing")]).collect()[0]
        first = F.row_number().over(Window.partitionBy("kind").orderBy(KEY))
        examples: Dict[str, List[str]] = {}
        for r in joined.where(F.col("kind").isNotNull()).withColumn("n", first).where(F.col("n") <= EXAMPLES) \
                .orderBy("kind", KEY).collect():
            examples.setdefault(r["kind"], []).append(r[KEY])
        duplicates = joined.where(F.col("mh").isNotNull()).groupBy(KEY).count().where(F.col("count") > 1).count()
    finally:
        joined.unpersist()
    return VerifyResult(snapshot_id, source_rows=int(row["src"]), mirror_rows=int(row["mir"]),
                        missing_keys=int(row["missing"] or 0), extra_keys=int(row["extra"] or 0),
                        differing_rows=int(row["differing"] or 0), duplicate_keys=duplicates, examples=examples)
