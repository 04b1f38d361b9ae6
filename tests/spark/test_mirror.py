"""Behaviour of the job on real Iceberg tables, checked against the independent model."""
import pytest

from olake_cow.spark.iceberg import IcebergTables

pytestmark = [pytest.mark.spark]


def rows(start, n, op="r", **cols):
    return [{"_olake_id": str(i), "_op_type": op, "v": i, "s": f"s{i}", **cols} for i in range(start, start + n)]


def make(lake, table="t", partition_by=()):
    lake.writer.create_table(table, [("v", "int"), ("s", "string")], partition_by=partition_by)
    lake.writer.backfill(table, rows(0, 20))


def test_upserts_and_tombstones_are_mirrored(lake):
    make(lake)
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"},
                             {"_olake_id": "2", "_op_type": "d"},
                             {"_olake_id": "50", "_op_type": "c", "v": 50, "s": "new"}])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    tomb = [r for r in lake.mirror_rows("t") if r["_olake_id"] == "2"]
    assert tomb and tomb[0]["_op_type"] == "d"


def test_hard_delete_mode_removes_tombstoned_keys(lake):
    make(lake)
    lake.writer.commit("t", [{"_olake_id": "3", "_op_type": "d"}, {"_olake_id": "4", "_op_type": "u", "v": 4}])
    assert lake.run("--delete-mode", "hard") == 0
    lake.assert_mirror_matches("t", "hard")
    lake.writer.commit("t", [{"_olake_id": "5", "_op_type": "d"}])
    assert lake.run("--delete-mode", "hard") == 0
    lake.assert_mirror_matches("t", "hard")
    assert "5" not in {r["_olake_id"] for r in lake.mirror_rows("t")}


def test_mirror_drops_keys_deleted_without_tombstone(lake):
    make(lake)
    assert lake.run() == 0
    lake.writer.commit("t", pure_deletes=["7", "8"])
    lake.writer.commit("t", [{"_olake_id": "9", "_op_type": "c", "v": 9}], pure_deletes=["10"])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    assert not {"7", "8", "10"} & {r["_olake_id"] for r in lake.mirror_rows("t")}


def test_deletes_survive_another_tools_rewrite_that_drops_their_delete_files(hlake):
    """Found by the CI soak: rewrite_data_files drops equality-delete files older than every data
    file left. In truncate mode those deletes target rows that are only in the mirror; they must
    still reach it."""
    lake = hlake
    make(lake)
    assert lake.run() == 0
    for n in (2, 5, 8, 11):
        lake.writer.commit("t", [{"_olake_id": str(n), "_op_type": "d"},
                                 {"_olake_id": f"new{n}", "_op_type": "c", "v": n}], pure_deletes=[str(n + 1)])
    lake.writer.rewrite_files("t")
    replace = [s for s in lake.source("t").snapshots if s.operation == "replace"][-1]
    assert replace.summary_int("removed-equality-delete-files") > 0  # the case under test happened
    lake.writer.commit("t", [{"_olake_id": "14", "_op_type": "u", "v": 140}])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")


def test_duplicate_visible_rows_keep_the_latest_change(lake):
    make(lake)
    assert lake.run() == 0
    # OLake #1189: insert then update of one key in one commit, both rows left visible
    lake.writer.commit("t", [{"_olake_id": "30", "_op_type": "c", "v": 1},
                             {"_olake_id": "30", "_op_type": "u", "v": 2},
                             {"_olake_id": "3", "_op_type": "u", "v": 31},
                             {"_olake_id": "3", "_op_type": "u", "v": 32}], dedupe=False)
    visible = [r for r in lake.writer.spark.table(lake.writer.q("t")).collect() if r["_olake_id"] == "30"]
    assert len(visible) == 2  # the source really holds the duplicate
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    keys = [r["_olake_id"] for r in lake.mirror_rows("t")]
    assert len(keys) == len(set(keys))


def test_schema_changes_reach_the_mirror(lake):
    make(lake)
    assert lake.run() == 0
    lake.writer.add_column("t", "extra", "string")
    lake.writer.widen_column("t", "v", "bigint")
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 2**40, "extra": "e"},
                             {"_olake_id": "77", "_op_type": "c", "v": 7, "extra": "n"}])
    assert lake.run() == 0
    fields = {f.name: f.dataType.simpleString() for f in lake.writer.spark.table(lake.mirror_q("t")).schema}
    assert fields["v"] == "bigint" and fields["extra"] == "string"
    lake.assert_mirror_matches("t")


def test_nested_schema_changes_reach_the_mirror(hlake):
    """Changes inside nested types that Iceberg allows: a field added to a struct, int -> long in a
    struct, a list element and a map value widened."""
    lake = hlake
    lake.writer.create_table("n", [("v", "int"), ("st", "struct<a:int,b:string>"), ("arr", "array<int>"),
                                   ("mp", "map<string,float>")])
    lake.writer.backfill("n", [{"_olake_id": str(i), "v": i, "st": {"a": i, "b": f"b{i}"}, "arr": [i, i + 1],
                                "mp": {"k": 0.5}} for i in range(10)])
    assert lake.run() == 0
    q = lake.writer.q("n")
    for ddl in ("ADD COLUMN st.c string", "ALTER COLUMN st.a TYPE bigint", "ALTER COLUMN arr.element TYPE bigint",
                "ALTER COLUMN mp.value TYPE double"):
        lake.writer.spark.sql(f"ALTER TABLE {q} {ddl}")
    lake.writer.commit("n", [{"_olake_id": "1", "_op_type": "u", "v": 1, "st": {"a": 2**40, "b": "x", "c": "new"},
                              "arr": [2**40], "mp": {"k": 0.25}},
                             {"_olake_id": "20", "_op_type": "c", "v": 20, "st": {"a": 5, "b": "y", "c": "z"},
                              "arr": [], "mp": {}}])
    assert lake.run() == 0
    mirror = {f.name: f.dataType.simpleString() for f in lake.writer.spark.table(lake.mirror_q("n")).schema}
    assert mirror["st"] == "struct<a:bigint,b:string,c:string>"
    assert mirror["arr"] == "array<bigint>" and mirror["mp"] == "map<string,double>"
    lake.assert_mirror_matches("n")


def test_the_mirror_follows_the_sources_partition_spec_and_sort_order(hlake):
    lake = hlake
    lake.writer.create_table("p", [("v", "int"), ("region", "string")], partition_by=["bucket(4, _olake_id)"])
    lake.writer.backfill("p", [{"_olake_id": str(i), "v": i, "region": "eu" if i % 2 else "us"} for i in range(20)])
    assert lake.run() == 0
    q = lake.writer.q("p")
    lake.writer.spark.sql(f"ALTER TABLE {q} DROP PARTITION FIELD bucket(4, _olake_id)")
    lake.writer.spark.sql(f"ALTER TABLE {q} ADD PARTITION FIELD region")
    lake.writer.spark.sql(f"ALTER TABLE {q} WRITE ORDERED BY v DESC NULLS LAST")
    # OLake never evolves a spec: equality deletes of older rows would land in the new spec's
    # partitions, so this writer only inserts from here on, then changes its own new rows.
    lake.writer.commit("p", [{"_olake_id": str(i), "_op_type": "c", "v": i, "region": "eu"} for i in range(50, 55)])
    lake.writer.commit("p", [{"_olake_id": "51", "_op_type": "u", "v": 510, "region": "eu"}], pure_deletes=["52"])
    assert lake.run() == 0
    tables = lake.tables
    assert tables.spec_string(lake.cow_ns, "p_cow") == tables.spec_string(lake.ns, "p") == "identity(region)"
    order = tables.load(lake.cow_ns, "p_cow").sortOrder()
    assert [(str(f.direction().name()), str(f.nullOrder().name())) for f in order.fields()] == [("DESC", "NULLS_LAST")]
    lake.assert_mirror_matches("p")


def test_mirror_keeps_the_source_partition_spec_and_copy_on_write(lake):
    lake.writer.create_table("p", [("v", "int"), ("region", "string")],
                             partition_by=["region", "bucket(4, _olake_id)"])
    lake.writer.backfill("p", [{"_olake_id": str(i), "v": i, "region": "eu" if i % 2 else "us"}
                               for i in range(40)])
    assert lake.run() == 0
    lake.writer.commit("p", [{"_olake_id": "1", "_op_type": "u", "v": 1, "region": "us"},  # moves partition
                             {"_olake_id": "2", "_op_type": "d", "region": "us"}], pure_deletes=["5"])
    assert lake.run() == 0
    lake.assert_mirror_matches("p")
    tables = lake.tables
    assert tables.spec_string(lake.cow_ns, "p_cow") == tables.spec_string(lake.ns, "p")
    props = lake.mirror("p").properties
    assert props["write.merge.mode"] == "copy-on-write"
    t = tables.load(lake.cow_ns, "p_cow")
    assert not t.sortOrder().isUnsorted()


def test_idle_run_commits_nothing(lake):
    make(lake)
    assert lake.run() == 0
    before = (lake.source("t"), lake.mirror("t"))
    assert lake.run() == 0
    assert lake.run() == 0
    after = (lake.source("t"), lake.mirror("t"))
    assert before[0].current_id == after[0].current_id and len(before[0].snapshots) == len(after[0].snapshots)
    assert before[1].current_id == after[1].current_id and len(before[1].snapshots) == len(after[1].snapshots)
    assert before[1].metadata_location == after[1].metadata_location


def test_several_tables_and_one_failure_does_not_stop_the_others(lake):
    make(lake, "a")
    make(lake, "b")
    lake.writer.spark.sql(f"CREATE TABLE {lake.writer.q('not_olake')} (x int) USING iceberg")
    lake.writer.spark.sql(f"INSERT INTO {lake.writer.q('not_olake')} VALUES (1)")
    assert lake.run() == 1
    lake.assert_mirror_matches("a")
    lake.assert_mirror_matches("b")
    assert lake.run("--tables", "a,b") == 0


def test_recreated_source_rebuilds_the_mirror(lake):
    make(lake)
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 5}])
    assert lake.run() == 0
    lake.writer.drop_table("t")
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(100, 5))
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    assert {r["_olake_id"] for r in lake.mirror_rows("t")} == {str(i) for i in range(100, 105)}


def test_dry_run_commits_nothing(lake, capsys):
    make(lake)
    before = lake.source_metadata()
    assert lake.run("--dry-run") == 0
    out = capsys.readouterr().out
    assert ("truncate the source" if lake.mode == "truncate" else "the source is only read") in out
    assert lake.mirror("t").exists is False
    assert lake.source_metadata() == before


def test_checkpoint_found_in_a_long_history(hlake):
    make(hlake)
    for i in range(15):
        hlake.writer.commit("t", [{"_olake_id": str(i), "_op_type": "u", "v": 1000 + i}])
        assert hlake.run() == 0
    hlake.assert_mirror_matches("t")
    assert len(hlake.mirror("t").snapshots) > 10
    before = hlake.mirror("t").current_id
    assert hlake.run() == 0
    assert hlake.mirror("t").current_id == before


def test_mirror_maintenance_keeps_the_checkpoint(lake):
    make(lake)
    for i in range(3):
        lake.writer.commit("t", [{"_olake_id": str(i), "_op_type": "u", "v": 500 + i}])
        assert lake.run() == 0
    mq = lake.mirror_q("t")
    cat = lake.catalog
    ident = f"{lake.cow_ns}.t_cow"
    lake.writer.spark.sql(f"CALL {cat}.system.rewrite_data_files(table => '{ident}', "
                          "options => map('rewrite-all', 'true'))")
    cur = lake.mirror("t").current_id
    lake.writer.spark.sql(f"CALL {cat}.system.expire_snapshots(table => '{ident}', "
                          f"older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)")
    assert [s.snapshot_id for s in lake.mirror("t").snapshots] == [cur]
    assert lake.run() == 0
    assert lake.mirror("t").current_id == cur  # nothing replayed, nothing committed
    lake.writer.commit("t", [{"_olake_id": "11", "_op_type": "u", "v": 11}], pure_deletes=["12"])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    assert mq


@pytest.mark.parametrize("name", ["we'ird", "back`tick", "dot.ted", "sp ace", "ünï-cödé", "x; DROP TABLE y"])
def test_hostile_table_names_work(hlake, name):
    make(hlake, name)
    hlake.writer.commit(name, [{"_olake_id": "1", "_op_type": "u", "v": 9}], pure_deletes=["2"])
    assert hlake.run("--tables", name) == 0
    hlake.assert_mirror_matches(name)


def test_pyiceberg_refuses_the_source_but_reads_the_mirror(hlake):
    from testkit.local import pyiceberg_rows

    make(hlake)
    assert hlake.run() == 0
    hlake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 3}])
    with pytest.raises(ValueError, match="equality deletes"):
        pyiceberg_rows(hlake.source("t").metadata_location)
    assert hlake.run() == 0
    hlake.assert_mirror_matches("t")


def test_missing_namespace_is_a_clear_error(rlake, capsys):
    assert rlake.run("--tables", "nope") == 2  # a missing table is bad input
    out = capsys.readouterr()
    assert "does not exist" in out.out + out.err
    assert rlake.run() == 2
    assert "namespace" in capsys.readouterr().err


def test_iceberg_tables_reads_state_without_spark_jobs(rlake):
    make(rlake)
    state = IcebergTables(rlake.writer.spark, rlake.catalog).state(rlake.ns, "t")
    assert state.exists and state.current_id and state.uuid


def test_no_secret_value_reaches_output_summary_or_launch_conf(spark, destinations, make_lake, tmp_root, capsys,
                                                                caplog):
    import copy
    import json
    import os

    dest = copy.deepcopy(destinations["jdbc"])
    secrets = {"jdbc_password": "pg-Secret-123", "aws_access_key": "AKIASECRETKEY0001",
               "aws_secret_key": "wJalrSecretValue/abc", "aws_session_token": "SessTokenValue42"}
    dest["writer"].update(secrets)
    lake = make_lake(dest, "jdbc")
    make(lake)
    summary_path = os.path.join(tmp_root, f"{lake.ns}-summary.json")
    assert lake.run("--summary-out", summary_path) == 0
    assert lake.run("--tables", "missing_table", "--summary-out", summary_path) == 2
    out = capsys.readouterr()
    with open(summary_path, encoding="utf-8") as f:
        summary = f.read()
    launch = json.dumps(dict(spark.sparkContext.getConf().getAll()))
    logs = "\n".join(r.getMessage() for r in caplog.records)
    for value in secrets.values():
        for where, text in (("stdout", out.out), ("stderr", out.err), ("summary", summary),
                            ("launch conf", launch), ("logs", logs)):
            assert value not in text, f"secret leaked into {where}"
    assert "AWS_SECRET_ACCESS_KEY" not in os.environ


def test_tables_of_one_run_create_the_mirror_namespace_at_once(klake):
    """Found by the soak: parallel tables racing to create the mirror namespace (JDBC catalog)."""
    from concurrent.futures import ThreadPoolExecutor

    from testkit.local import writer_session

    ns = klake.ns + "_race"

    def create(_):
        IcebergTables(writer_session(klake.root, klake.cfg), klake.catalog).create_namespace(ns)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(8)))
    assert klake.tables.namespace_exists(ns)


def test_the_mirror_check_flags_a_wrong_row_a_missing_row_and_delete_files(rlake):
    """The comparison behind every mirror assertion and the soak can fail: a changed value, a
    missing key and a merge-on-read delete written into the mirror are each reported."""
    from testkit.local import mirror_problems

    make(rlake)
    assert rlake.run() == 0
    expected = rlake.writer.model("t").expected()
    spark, q = rlake.writer.spark, rlake.mirror_q("t")

    def problems():
        return mirror_problems(spark, q, rlake.mirror("t"), expected)[1]

    assert problems() == []
    spark.sql(f"UPDATE {q} SET v = -1 WHERE _olake_id = '4'")
    assert any("spark" in p for p in problems()) and any("pyiceberg" in p for p in problems())
    spark.sql(f"UPDATE {q} SET v = 4 WHERE _olake_id = '4'")
    assert problems() == []
    spark.sql(f"ALTER TABLE {q} SET TBLPROPERTIES ('write.delete.mode'='merge-on-read')")
    spark.sql(f"DELETE FROM {q} WHERE _olake_id = '5'")
    found = problems()
    assert any(p.startswith("the mirror has delete files") for p in found) and any("spark" in p for p in found)


def test_mirror_file_size_defaults_to_128_mb_and_follows_the_option(rlake):
    make(rlake)
    assert rlake.run() == 0
    prop = "write.target-file-size-bytes"
    assert rlake.mirror("t").properties.get(prop) == str(128 * 1024 * 1024)
    rlake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 7, "s": "x"}])
    assert rlake.run("--target-file-size-mb", "8") == 0
    assert rlake.mirror("t").properties.get(prop) == str(8 * 1024 * 1024)
    rlake.assert_mirror_matches("t")
