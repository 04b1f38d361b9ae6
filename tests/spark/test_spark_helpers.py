"""The few facts about Spark the job's own code relies on, checked against Spark itself."""
import pytest

from olake_cow.spark.changes import placing_ids, spark_int_hash

pytestmark = [pytest.mark.spark]


def test_the_python_hash_is_sparks_and_placing_ids_land_in_their_partitions(spark):
    from pyspark.sql import functions as F

    values = [0, 1, -1, 7, 42, 2**31 - 1, -(2**31), 123456789]
    got = spark.createDataFrame([(v,) for v in values], "v INT").select(F.hash("v").alias("h")).collect()
    assert [r["h"] for r in got] == [spark_int_hash(v) for v in values]
    ids = placing_ids(8)
    placed = (spark.createDataFrame([(i, x) for i, x in enumerate(ids)], "want INT, x INT")
              .repartition(8, "x").select("want", F.spark_partition_id().alias("got")).collect())
    assert sorted((r["want"], r["got"]) for r in placed) == [(p, p) for p in range(8)]
