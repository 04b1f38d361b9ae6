"""The OLake-like writer's two ways of writing a batch's data files (testkit/olake_writer.py): Iceberg's
Parquet writer on the JVM (small batches), and a Spark append (large ones, or a value Iceberg's JSON
form cannot carry). Every test's source goes through one of them, so they must leave the same table:
the same rows and values of every type, one file per partition in the same key order, and the same
older copies of a key written twice deleted (the copy with the later _cdc_timestamp is kept)."""
import datetime as dt
from decimal import Decimal

import pytest

from testkit import olake_writer

pytestmark = [pytest.mark.spark]

COLUMNS = [("i", "int"), ("l", "bigint"), ("s", "string"), ("d", "decimal(12,3)"), ("f", "float"),
           ("x", "double"), ("b", "boolean"), ("day", "date"), ("ts", "timestamp"), ("tn", "timestamp_ntz"),
           ("bin", "binary"), ("st", "struct<a:int,c:struct<x:double>>"), ("arr", "array<string>"),
           ("mp", "map<string,int>")]
UTC = dt.timezone.utc


def row(i: int, op: str = "r", second: int = 0) -> dict:
    at = dt.datetime(2026, 2, 1, tzinfo=UTC) + dt.timedelta(seconds=second)  # the same in both tables
    return {"_olake_id": str(i), "_op_type": op, "_cdc_timestamp": at, "_olake_timestamp": at,
            "i": -i, "l": 2**40 + i, "s": f"név-{i}" if i % 3 else None,
            "d": Decimal(i) / 8 - 3, "f": i / 4, "x": i / 3, "b": i % 2 == 0, "day": dt.date(2026, 1, 1 + i % 28),
            # an aware timestamp in another zone, and a naive one (UTC), on different days
            "ts": (dt.datetime(2026, 3, 1 + i % 3, 23, 30, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=-5)))
                   if i % 2 else dt.datetime(2026, 3, 1 + i % 3, 1, 2, 3, 999999)),
            "tn": dt.datetime(2025, 12, 31, 23, 59, 59, i), "bin": bytes([i % 256, 0, 255]),
            "st": {"a": i, "c": {"x": -i / 7}} if i % 4 else None, "arr": [f"a{i}", None, ""][: i % 4],
            "mp": {f"k{i}": i, "z": 0} if i % 5 else {}}


def table_state(spark, q: str) -> list:
    """Every data file's live rows in position order, with its partition (not its name): the table's
    layout."""
    files: dict = {}
    for r in spark.sql(f"SELECT *, _partition, _file, _pos FROM {q}").collect():
        files.setdefault(r["_file"], []).append(r.asDict(recursive=True))
    layout = [sorted([{k: v for k, v in r.items() if k != "_file"} for r in rows], key=lambda r: r["_pos"])
              for rows in files.values()]
    return sorted(layout, key=repr)


@pytest.mark.parametrize("partition_by", [[], ["bucket(3, _olake_id)", "days(ts)"]],
                         ids=["unpartitioned", "partitioned"])
@pytest.mark.parametrize("delete_mode", ["equality", "dv"])
def test_the_writers_jvm_and_spark_paths_write_the_same_table(catalog_lake, monkeypatch, partition_by, delete_mode):
    lake = catalog_lake
    batches = [
        [row(i) for i in range(40)],
        # updates, deletes, new keys, and a key written twice (its older copy is deleted)
        [row(i, "u", 1) for i in range(0, 40, 3)] + [dict(row(5, "d", 1), s="gone")]
        + [row(i, "c", 1) for i in range(40, 46)] + [dict(row(7, "u", 3), s="newer"), dict(row(7, "u", 2), s="older")],
        # a null map value: Iceberg's JSON form (an ImmutableMap) cannot carry it, so this batch goes to Spark
        [dict(row(50, "c", 4), mp={"k": None}), row(8, "u", 4)],
    ]
    states = {}
    for path, fast_rows in (("jvm", olake_writer.FAST_ROWS), ("spark", -1)):
        monkeypatch.setattr(olake_writer, "FAST_ROWS", fast_rows)
        lake.writer.create_table(path, COLUMNS, partition_by=partition_by, delete_mode=delete_mode)
        for batch in batches:
            lake.writer.commit(path, batch)
        states[path] = table_state(lake.writer.spark, lake.writer.q(path))
    jvm, spark = states["jvm"], states["spark"]
    assert jvm == spark
    by_key = {r["_olake_id"]: r for rows in jvm for r in rows}
    assert len(by_key) == 47  # 40 keys, 6 new, one more in the last batch
    assert by_key["7"]["s"] == "newer" and by_key["5"]["_op_type"] == "d" and by_key["50"]["mp"] == {"k": None}
    assert by_key["3"]["d"] == Decimal("-2.625") and by_key["9"]["bin"] == bytes([9, 0, 255])
    # the model the tests check mirrors against holds the same rows
    model = lake.writer.model("jvm").rows
    assert sorted(model) == sorted(by_key)
