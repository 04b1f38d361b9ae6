"""The job's main scenarios, run by each real-catalog module (test_glue.py, test_hive.py) on its own
catalog: a first build, incremental updates and deletes of every kind OLake and users make, --verify,
and a recreated source; every mirror read by Spark and the independent readers, against the model.
And a user's edits of the mirror whose handling goes through the catalog (a forged marker, a dropped
column, unusable properties), which test_own.py runs on the file-system and JDBC catalogs."""
import re

from olake_cow.core.identity import MADE_BY_PROPERTY
from testkit.lakes import make, rows

ONE_READER = ("pyiceberg",)  # besides Spark: what these check is whose table it is, not how engines read it


def kept(lake, table_q):
    """What a user keeps of a table: its rows, its columns and its snapshots."""
    spark = lake.writer.spark
    data = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {table_q}").collect())
    schema = [(f.name, f.dataType.simpleString()) for f in spark.table(table_q).schema.fields]
    history = [r[0] for r in spark.sql(f"SELECT snapshot_id FROM {table_q}.snapshots").collect()]
    return data, schema, history


def keeps_data(advice):
    """No advice to drop, move or remove a table or its files (saying not to is fine)."""
    return not re.search(r"\b(drop|move|remove|delete)\b (the|it|this|them|that)\b",
                         advice.replace("Do not drop the mirror", ""), re.IGNORECASE)


def made_by_marker_alone(lake):
    """A table at the mirror's name carrying only the made-by marker (no source named, no checkpoint)
    is refused, one property being no proof, and the user keeps its rows, schema and snapshots."""
    make(lake)
    spark = lake.writer.spark
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {lake.catalog}.{lake.cow_ns}")
    spark.sql(f"CREATE TABLE {lake.mirror_q('t')} (_olake_id string, v int, note string) USING iceberg "
              f"TBLPROPERTIES ('{MADE_BY_PROPERTY}'='olake-cow')")
    spark.sql(f"INSERT INTO {lake.mirror_q('t')} VALUES ('1', 1, 'mine'), ('2', 2, 'also mine')")
    before = kept(lake, lake.mirror_q("t"))
    code, result = lake.run_summary()
    assert code == 2 and "was not made by olake-cow" in result["error"] and "names no source" in result["error"]
    assert keeps_data(result["error"])
    assert kept(lake, lake.mirror_q("t")) == before


def mirror_column_dropped(lake):
    """A column a user dropped from a readonly mirror (a schema change, no data commit) is repaired
    from OLake's table: every row has it again, not NULL."""
    make(lake)
    assert lake.run() == 0
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} DROP COLUMN s")
    code, result = lake.run_summary()  # the source is quiet: the repair alone
    assert code == 0 and result["repaired"] == 1
    assert any("column s of the mirror was dropped by someone else" in n for n in result["notes"])
    lake.assert_mirror_matches("t", engines=ONE_READER)  # every row has its `s` again
    code, result = lake.run_summary()
    assert code == 0 and result["status"] == "up_to_date" and result["repaired"] == 0


def unusable_mirror_properties(lake):
    """Properties a user set on the mirror to what the job cannot use are reset, not failed at
    every run, and the merge is audited as usual: its merges unstaged, a file size that is none, the
    other format's write modes (a cow merge would write deletes, a dv merge rewrite files: either
    fails its audit), Avro data files (pyiceberg, DuckDB and Snowflake read none), Hadoop's LZ4 (DuckDB
    reads none)."""
    make(lake)
    assert lake.run() == 0
    fmt = lake.fmt
    other = "copy-on-write" if fmt == "dv" else "merge-on-read"
    modes = ("write.delete.mode", "write.update.mode", "write.merge.mode")
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} SET TBLPROPERTIES ('write.wap.enabled'='false', "
                          "'write.target-file-size-bytes'='lots', 'write.format.default'='avro', "
                          "'write.parquet.compression-codec'='lz4', "
                          + ", ".join(f"'{k}'='{other}'" for k in modes) + ")")
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"},
                             {"_olake_id": "2", "_op_type": "d"}], pure_deletes=["3"])
    code, result = lake.run_summary()
    assert code == 0 and result["status"] == "merged", result
    props = lake.mirror("t").properties
    assert props["write.wap.enabled"] == "true" and props["write.target-file-size-bytes"] == str(128 * 1024 * 1024)
    assert props["write.format.default"] == "parquet" and props["write.parquet.compression-codec"] == "zstd"
    assert {props[k] for k in modes} == {"merge-on-read" if fmt == "dv" else "copy-on-write"}, props
    lake.assert_mirror_matches("t", engines=("pyiceberg", "duckdb"))  # no Avro (neither), no Hadoop LZ4 (DuckDB)


def build_update_delete_verify(lake):
    """First build, then OLake commits (updates, tombstones, inserts, pure equality deletes, a key
    written twice: a position delete) and a user's DELETE (position deletes on the source), merged
    incrementally; --verify compares the mirror with the source resolved by Spark (readonly mode: in
    truncate mode the source no longer holds what the mirror does)."""
    w = lake.writer
    w.create_table("t", [("v", "int"), ("s", "string")])
    w.backfill("t", rows(0, 60), chunk=20)
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    w.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"}, {"_olake_id": "2", "_op_type": "d"},
                   {"_olake_id": "70", "_op_type": "c", "v": 70}], pure_deletes=["3", "4"])
    w.commit("t", [{"_olake_id": "5", "_op_type": "u", "v": 51}, {"_olake_id": "5", "_op_type": "u", "v": 52},
                   {"_olake_id": "71", "_op_type": "c", "v": 71}])
    user_deleted = set()
    if lake.mode == "readonly":  # in truncate mode those rows have left the source for the mirror
        w.delete_where("t", "v >= 10 AND v < 13", lambda r: r.get("v") is not None and 10 <= r["v"] < 13)
        user_deleted = {"10", "11", "12"}
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    assert ({"2", "3", "4"} | user_deleted).isdisjoint(r["_olake_id"] for r in lake.mirror_rows("t")
                                                       if r["_op_type"] != "d")
    w.commit("t", [{"_olake_id": "6", "_op_type": "u", "v": 600}], pure_deletes=["7"])
    assert lake.run(*(["--verify"] if lake.mode == "readonly" else [])) == 0
    lake.assert_mirror_matches("t")


def recreated_source(lake):
    """OLake drops and recreates the table (a full refresh): the mirror is rebuilt from the new one."""
    w = lake.writer
    w.create_table("r", [("v", "int"), ("s", "string")])
    w.backfill("r", rows(0, 20))
    w.commit("r", [{"_olake_id": "1", "_op_type": "u", "v": 5}])
    assert lake.run("--tables", "r") == 0
    w.drop_table("r")
    w.create_table("r", [("v", "int"), ("s", "string")])
    w.backfill("r", rows(100, 110))
    assert lake.run("--tables", "r") == 0
    lake.assert_mirror_matches("r")
    assert {r["_olake_id"] for r in lake.mirror_rows("r")} == {str(i) for i in range(100, 110)}


def every_delete_mode_and_the_migrator(lake):
    """OLake's three delete modes, one table each, and its migrator's switch from equality deletes to
    deletion vectors (a `replace` commit) on a fourth, merged by whole-namespace runs."""
    w = lake.writer
    tables = {"eq": "equality", "pos": "position", "dvs": "dv"}
    for name, mode in tables.items():
        w.create_table(name, [("v", "int"), ("s", "string")], delete_mode=mode)
    w.create_table("mig", [("v", "int"), ("s", "string")], format_version=3)
    for name in list(tables) + ["mig"]:
        w.backfill(name, rows(0, 30))
        w.commit(name, [{"_olake_id": "1", "_op_type": "u", "v": 100}, {"_olake_id": "2", "_op_type": "d"},
                        {"_olake_id": "40", "_op_type": "c", "v": 40}])
    assert lake.run() == 0
    w.commit("mig", [{"_olake_id": "3", "_op_type": "u", "v": 300}], pure_deletes=["4"])
    w.switch_delete_mode("mig", "dv")
    for name in list(tables) + ["mig"]:
        w.commit(name, [{"_olake_id": "5", "_op_type": "u", "v": 500}, {"_olake_id": "6", "_op_type": "d"}])
    assert lake.run() == 0
    for name in list(tables) + ["mig"]:
        lake.assert_mirror_matches(name)
