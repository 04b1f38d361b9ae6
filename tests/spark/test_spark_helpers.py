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


def test_the_jvm_end_of_each_threads_py4j_connection_sends_without_delay(spark):
    """Py4J replies longer than its 8 KB buffer waited 40 ms for a delayed ACK (Nagle):
    session.py4j_no_delay turns that off on the JVM's socket of the calling thread's connection."""
    import threading

    from olake_cow.spark.session import py4j_no_delay

    def no_delay_of_this_thread():
        jvm = spark._jvm
        target = jvm.java.lang.Class.forName("java.lang.Thread").getDeclaredField("target")
        target.setAccessible(True)
        return bool(target.get(jvm.java.lang.Thread.currentThread()).getSocket().getTcpNoDelay())

    found = {}

    def in_a_new_thread():
        found["before"] = no_delay_of_this_thread()  # a new thread: a new connection
        found["ok"] = py4j_no_delay(spark)
        found["after"] = no_delay_of_this_thread()

    worker = threading.Thread(target=in_a_new_thread)
    worker.start()
    worker.join()
    assert found == {"before": False, "ok": True, "after": True}
