"""Readonly mode on real Spark + Iceberg: the source is only read, and what other writers and tools
do to it (a user's DELETE, another tool's rewrite_data_files, snapshot expiry) reaches the mirror
right, without re-reading the table. Every run here also checks that it left the source's metadata
untouched (Lake.run)."""
import uuid

import pytest

from olake_cow.core import changesource
from testkit.lakes import make, rows

pytestmark = [pytest.mark.spark]


def cdc(lake, n, table="t", base=0):
    """One OLake commit: updates, a tombstone, an insert and a pure delete around key `n`."""
    return lake.writer.commit(table, [{"_olake_id": str(n), "_op_type": "u", "v": base + n, "s": "u"},
                                      {"_olake_id": str(n + 1), "_op_type": "d"},
                                      {"_olake_id": f"new{base + n}", "_op_type": "c", "v": n}],
                              pure_deletes=[str(n + 2)])


def source_files_read(table_summary):
    """Files of the source read for the change sets (the summary adds the mirror files rewritten)."""
    return table_summary["files_read"] - table_summary["files_rewritten"]


def added_files(lake, snapshot_ids, table="t"):
    source = lake.source(table)
    return sum(source.snapshot(s).summary_int("added-data-files") + source.snapshot(s).summary_int("added-delete-files")
               for s in snapshot_ids)


def test_runs_leave_the_source_exactly_as_it_was(rlake):
    rlake.writer.create_table("t", [("v", "int"), ("s", "string")])
    rlake.writer.backfill("t", rows(0, 30), chunk=10)
    for n in (1, 5, 9):
        cdc(rlake, n)
        before = rlake.source("t")
        content = sorted(r["_olake_id"] for r in rlake.writer.spark.table(rlake.writer.q("t")).collect())
        assert rlake.run() == 0
        after = rlake.source("t")
        assert [s.snapshot_id for s in after.snapshots] == [s.snapshot_id for s in before.snapshots]
        assert after.current_id == before.current_id
        assert sorted(r["_olake_id"] for r in rlake.writer.spark.table(rlake.writer.q("t")).collect()) == content
        rlake.assert_mirror_matches("t")
    assert not any(s.is_boundary for s in rlake.source("t").snapshots)
    assert rlake.mirror("t").properties["olake-cow.source-mode"] == "readonly"


@pytest.mark.parametrize("version, mode", [(2, "merge-on-read"), (2, "copy-on-write"), (3, "merge-on-read")],
                         ids=["v2-position-deletes", "v2-rewritten-files", "v3-deletion-vectors"])
def test_a_users_delete_from_on_the_source_reaches_the_mirror(rlake, tmp_path, version, mode):
    lake = rlake
    lake.writer.create_table("t", [("v", "int"), ("s", "string")], format_version=version)
    lake.writer.backfill("t", rows(0, 40), chunk=10)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "3", "_op_type": "u", "v": 300}], pure_deletes=["4"], dedupe=version == 2)
    lake.writer.delete_where("t", "v >= 10 AND v < 15", lambda r: r.get("v") is not None and 10 <= r["v"] < 15,
                             mode=mode)
    if version == 3:
        assert lake.source("t").snapshot(lake.source("t").current_id).summary_int("added-dvs") >= 1
    code, summary = lake.run_summary()
    assert code == 0, summary
    t = summary
    assert not t["notes"], t  # read incrementally, not rebuilt
    assert t["rows_deleted"] == 6, t  # 5 by the DELETE, 1 pure equality delete
    # copy-on-write rewrote the file of the deleted rows: its other 5 rows are new files, merged again
    assert t["rows_upserted"] == (1 if mode == "merge-on-read" else 6), t
    assert t["rows_replaced"] == t["rows_upserted"] + 6, t
    lake.assert_mirror_matches("t")
    assert not {str(i) for i in range(10, 15)} & {r["_olake_id"] for r in lake.mirror_rows("t")}
    # a delete that also hits a row written after the checkpoint
    lake.writer.commit("t", [{"_olake_id": "20", "_op_type": "u", "v": 2000}], dedupe=version == 2)
    lake.writer.delete_where("t", "v = 2000 OR v = 30", lambda r: r.get("v") in (2000, 30), mode=mode)
    assert lake.run() == 0
    lake.assert_mirror_matches("t")


def test_another_tools_rewrite_between_runs_is_not_read_again(rlake, tmp_path):
    lake = rlake
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 200), chunk=10)  # 20 small files
    assert lake.run() == 0
    first = cdc(lake, 1)
    lake.writer.rewrite_files("t")  # compacts everything, the new commit included
    second = cdc(lake, 50)
    assert any(s.operation == "replace" for s in lake.source("t").snapshots)
    code, summary = lake.run_summary()
    assert code == 0 and not summary["notes"], summary
    lake.assert_mirror_matches("t")
    read = source_files_read(summary)
    assert read <= added_files(lake, [first, second]), summary
    # only a rewrite since: nothing to read, the checkpoint moves on
    lake.writer.rewrite_files("t")
    code, summary = lake.run_summary()
    assert code == 0 and summary["files_read"] == 0, summary
    assert lake.mirror("t").properties["olake-cow.checkpoint"].split(":")[2] == str(lake.source("t").current_id)
    lake.assert_mirror_matches("t")


def test_a_rewrite_during_a_run_is_harmless_and_not_read_again(rlake, tmp_path, monkeypatch):
    lake = rlake
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 120), chunk=10)
    assert lake.run() == 0
    cdc(lake, 1)
    read = changesource.ReadonlySource.read

    def rewrite_then_read(self, reader, step, source):
        lake.writer.rewrite_files("t")  # committed after the run fixed its target
        return read(self, reader, step, source)

    with monkeypatch.context() as m:
        m.setattr(changesource.ReadonlySource, "read", rewrite_then_read)
        assert lake.run_raw() == 0  # (the rewrite changes the source's metadata, not the run)
    lake.assert_mirror_matches("t", at=lake.mirror_source_snapshot("t"))
    later = cdc(lake, 30)
    code, summary = lake.run_summary()
    assert code == 0, summary
    lake.assert_mirror_matches("t")
    assert source_files_read(summary) <= added_files(lake, [later]), summary


def test_source_snapshots_expired_up_to_the_checkpoint_do_not_block(rlake, tmp_path):
    lake = rlake
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 50), chunk=10)
    assert lake.run() == 0
    cdc(lake, 1)
    assert lake.run() == 0
    held = lake.source("t").snapshot(lake.mirror_source_snapshot("t"))
    cdc(lake, 10)
    ident = f"{lake.ns}.t"
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.expire_snapshots(table => '{ident}', "
                          f"older_than => TIMESTAMP '{ts(held.timestamp_ms)}', retain_last => 1)")
    assert lake.source("t").snapshot(held.snapshot_id) is not None and len(lake.source("t").snapshots) < 10
    code, summary = lake.run_summary()
    assert code == 0 and not summary["notes"], summary
    lake.assert_mirror_matches("t")
    # Everything but the current snapshot expired (the one the mirror holds too): still incremental.
    cdc(lake, 20)
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.expire_snapshots(table => '{ident}', "
                          "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)")
    assert len(lake.source("t").snapshots) == 1
    code, summary = lake.run_summary()
    assert code == 0, summary
    lake.assert_mirror_matches("t")


def ts(epoch_ms):
    import datetime as dt

    return dt.datetime.fromtimestamp(epoch_ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def test_verify_passes_on_a_right_mirror_and_reports_each_kind_of_difference(rlake, tmp_path):
    lake = rlake
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 30))
    cdc(lake, 3)
    code, summary = lake.run_summary("--verify")
    assert code == 0, summary
    verified = summary["verify"]
    assert verified["ok"] and verified["missing_keys"] == verified["extra_keys"] == verified["differing_rows"] == 0
    assert verified["source_rows"] == verified["mirror_rows"] == len(lake.writer.model("t").expected())
    q = lake.mirror_q("t")
    spark = lake.writer.spark
    spark.sql(f"UPDATE {q} SET s = 'wrong' WHERE _olake_id = '7'")
    spark.sql(f"DELETE FROM {q} WHERE _olake_id = '8'")
    from pyspark.sql import functions as F

    spark.table(q).where("_olake_id = '9'").withColumn("_olake_id", F.lit("intruder")).writeTo(q).append()
    # Verified as it is (a maintenance-only run merges nothing, so it does not repair the mirror first)
    code, summary = lake.run_summary("--verify", "--maintenance-only", "--expire-mirror-older-than", "9999")
    assert code == 1
    t = summary
    assert t["status"] == "verify_failed" and "verify:" in t["error"]
    v = t["verify"]
    assert (v["missing_keys"], v["extra_keys"], v["differing_rows"]) == (1, 1, 1), v
    assert v["examples"] == {"differing": ["7"], "extra": ["intruder"], "missing": ["8"]}
    # A run that merges repairs the mirror someone else changed first, then verifies it
    code, summary = lake.run_summary("--verify")
    assert code == 0 and summary["repaired"] == 1 and summary["verify"]["ok"]


def test_verify_refuses_a_truncate_mode_mirror(spark, destinations, make_lake, tmp_path):
    lake = make_lake(destinations["hadoop"], "hadoop", "truncate")
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 5))
    before = lake.source_metadata()
    code, summary = lake.run_summary("--verify")
    assert code == 2 and "needs a readonly mirror" in summary["error"]
    assert lake.source_metadata() == before and not lake.tables.namespace_exists(lake.cow_ns)  # nothing committed


def test_the_other_mode_on_an_existing_mirror_is_refused_with_how_to_switch(rlake, capsys):
    rlake.writer.create_table("t", [("v", "int"), ("s", "string")])
    rlake.writer.backfill("t", rows(0, 5))
    assert rlake.run() == 0
    cdc(rlake, 1)
    before = (rlake.source_metadata(), rlake.mirror("t").metadata_location)
    assert rlake.run_raw("--source-mode", "truncate") == 2
    out = capsys.readouterr().out
    assert "built in readonly mode" in out and "drop the mirror" in out
    assert (rlake.source_metadata(), rlake.mirror("t").metadata_location) == before
    assert rlake.run_raw() == 0  # without the option the mirror keeps its mode
    rlake.assert_mirror_matches("t")


def test_pyiceberg_refuses_the_source_but_reads_the_mirror(rlake):
    from testkit.local import pyiceberg_rows

    make(rlake)
    assert rlake.run() == 0
    rlake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 3}])
    with pytest.raises(ValueError, match="equality deletes"):
        pyiceberg_rows(rlake.source("t").metadata_location)
    assert rlake.run() == 0
    rlake.assert_mirror_matches("t")


def test_the_mirror_check_flags_a_wrong_row_a_missing_row_and_delete_files(spark, destinations, make_lake):
    """The comparison behind every mirror assertion and the soak can fail: a changed value, a
    missing key and a merge-on-read delete written into the mirror are each reported, by every reader."""
    from testkit.local import mirror_problems

    rlake = make_lake(destinations["hadoop"], "hadoop", "readonly", "cow")
    make(rlake)
    assert rlake.run() == 0
    expected = rlake.writer.model("t").expected()
    spark, q = rlake.writer.spark, rlake.mirror_q("t")

    def problems():
        return mirror_problems(spark, q, rlake.mirror("t"), expected)[1]

    assert problems() == []
    spark.sql(f"UPDATE {q} SET v = -1 WHERE _olake_id = '4'")
    found = problems()
    assert sorted(p.split(":")[0] for p in found) == ["duckdb", "iceberg-rust", "pyiceberg", "spark"], found
    spark.sql(f"UPDATE {q} SET v = 4 WHERE _olake_id = '4'")
    assert problems() == []
    spark.sql(f"ALTER TABLE {q} SET TBLPROPERTIES ('write.delete.mode'='merge-on-read')")
    spark.sql(f"DELETE FROM {q} WHERE _olake_id = '5'")
    found = problems()
    # the delete file, and a missing row in each of the four reads
    assert found[0].startswith("the mirror has delete files") and len(found) == 5, found


def test_mirror_file_size_defaults_to_128_mb_and_follows_the_option(rlake):
    make(rlake)
    assert rlake.run() == 0
    prop = "write.target-file-size-bytes"
    assert rlake.mirror("t").properties.get(prop) == str(128 * 1024 * 1024)
    rlake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 7, "s": "x"}])
    assert rlake.run("--target-file-size-mb", "8") == 0
    assert rlake.mirror("t").properties.get(prop) == str(8 * 1024 * 1024)
    rlake.assert_mirror_matches("t")


@pytest.mark.parametrize("version", [2, 3])
def test_files_read_from_manifests_equal_the_entries_table(rlake, version, monkeypatch):
    """The change reader lists new files through Iceberg's API when they are few, else through the
    `entries` metadata table: both give the same files, bounds and delete references."""
    from olake_cow.core.identifiers import qualified
    from olake_cow.core.readonly import Interval
    from olake_cow.spark import history_reader
    from olake_cow.spark.catalog import IcebergCatalog
    from olake_cow.spark.change_set import SourceTable
    from olake_cow.spark.history_reader import HistoryReader

    lake = rlake
    lake.writer.create_table("t", [("v", "int"), ("s", "string")], format_version=version)
    lake.writer.backfill("t", rows(0, 40), chunk=10)
    lake.writer.commit("t", [{"_olake_id": "3", "_op_type": "u", "v": 300}], pure_deletes=["4"], dedupe=version == 2)
    lake.writer.delete_where("t", "v >= 10 AND v < 15", lambda r: r.get("v") is not None and 10 <= r["v"] < 15,
                             mode="merge-on-read")
    source = lake.source("t")
    spark = lake.writer.spark
    reader = HistoryReader(spark, IcebergCatalog(spark, lake.catalog),
                           SourceTable(lake.ns, "t", qualified(lake.catalog, lake.ns, "t"), source), "soft", 128 << 20)
    seqs = sorted({s.sequence_number for s in source.snapshots})
    for start in [0] + seqs[:-1]:
        iv = Interval(None, start, source.current_id)
        direct = reader._entries(iv)
        monkeypatch.setattr(history_reader, "ENTRIES_LISTED_DIRECTLY", -1)
        table = reader._entries(iv)
        monkeypatch.undo()
        assert sorted(direct, key=lambda e: e.path) == sorted(table, key=lambda e: e.path), start
    kinds = {e.content for e in reader._entries(Interval(None, 0, source.current_id))}
    assert kinds == {0, 1, 2}, kinds  # data, position deletes (or DVs) and equality deletes were compared


@pytest.mark.parametrize("version", [2, 3])
def test_a_change_set_merged_by_its_key_range_misses_no_delete(rlake, version, monkeypatch):
    """The path of change sets too large to collect their keys (merged by the key range of what
    was read): pure deletes at both ends of the key order ("0", "9"), a user's DELETE (position
    deletes or deletion vectors), another tool's rewrite, then deletes again."""
    from olake_cow.spark import merge

    monkeypatch.setattr(merge, "KEYS_COLLECTED", 0)
    lake = rlake
    lake.writer.create_table("t", [("v", "int"), ("s", "string")], format_version=version)
    lake.writer.backfill("t", rows(0, 40), chunk=10)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "3", "_op_type": "u", "v": 300}], pure_deletes=["0", "9"],
                       dedupe=version == 2)
    lake.writer.delete_where("t", "v >= 10 AND v < 15", lambda r: r.get("v") is not None and 10 <= r["v"] < 15)
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    lake.writer.rewrite_files("t")
    lake.writer.commit("t", [{"_olake_id": "2", "_op_type": "u", "v": 200}], pure_deletes=["39", "1"],
                       dedupe=version == 2)
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    assert not {"0", "1", "9", "39", "10", "14"} & {r["_olake_id"] for r in lake.mirror_rows("t")}


def test_a_small_change_set_is_held_in_one_partition(rlake):
    """Spark plans what it persists without adaptive execution: the shuffle that keeps one row per
    key would leave a change set of a few keys in spark.sql.shuffle.partitions partitions (EMR's
    200), each a task to build, summarize and merge. It is held in one, and holds the same rows."""
    from olake_cow.core.identifiers import qualified
    from olake_cow.core.readonly import Interval
    from olake_cow.spark.catalog import IcebergCatalog
    from olake_cow.spark.change_set import SourceTable, held_partitions
    from olake_cow.spark.history_reader import HistoryReader

    lake = rlake
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 40), chunk=10)
    cdc(lake, 3)
    source = lake.source("t")
    spark = lake.writer.spark
    reader = HistoryReader(spark, IcebergCatalog(spark, lake.catalog),
                           SourceTable(lake.ns, "t", qualified(lake.catalog, lake.ns, "t"), source), "soft", 128 << 20)
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "50")
    try:
        cs = reader.history_change_set([Interval(None, 0, source.current_id)])
        try:
            assert cs.frame.rdd.getNumPartitions() == 1
            keys = [r["_olake_id"] for r in cs.frame.collect()]
        finally:
            cs.close()
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    assert sorted(keys) == sorted([str(i) for i in range(40)] + ["new3"])  # one row per key, deletes included
    assert [held_partitions(n) for n in (None, 0, 1, 500_000, 500_001, 10_000_000)] == [None, 1, 1, 1, 2, 20]


def test_a_small_change_set_resolves_in_one_task_to_what_a_shuffle_resolves(rlake, monkeypatch):
    """A change set read from few records keeps one row per key in one task (no exchange, no
    second stage); a larger one by a shuffle. Both give the rows the source's history says."""
    from olake_cow.core.identifiers import qualified
    from olake_cow.core.readonly import Interval
    from olake_cow.spark import change_set
    from olake_cow.spark.catalog import IcebergCatalog
    from olake_cow.spark.change_set import SourceTable
    from olake_cow.spark.history_reader import HistoryReader

    lake = rlake
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 40), chunk=10)
    start = lake.source("t").current_id
    lake.writer.commit("t", [{"_olake_id": "3", "_op_type": "u", "v": 30, "s": "x"},
                             {"_olake_id": "3", "_op_type": "u", "v": 31, "s": "y"},
                             {"_olake_id": "7", "_op_type": "d", "v": None, "s": None},
                             {"_olake_id": "new", "_op_type": "c", "v": 99, "s": "n"}], pure_deletes=["9"])
    source = lake.source("t")
    spark = lake.writer.spark
    reader = HistoryReader(spark, IcebergCatalog(spark, lake.catalog),
                           SourceTable(lake.ns, "t", qualified(lake.catalog, lake.ns, "t"), source), "hard", 128 << 20)
    interval = Interval(start, source.snapshot(start).sequence_number, source.current_id)

    def resolved():
        """(key -> (action, v, s), Spark stages run to resolve it)"""
        cs = reader.history_change_set([interval])
        group = f"resolve-{uuid.uuid4().hex}"
        spark.sparkContext.setJobGroup(group, group)
        try:
            got = {r["_olake_id"]: (r["__olake_cow_action"], r["v"], r["s"]) for r in cs.frame.collect()}
        finally:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
            cs.close()
        tracker = spark.sparkContext.statusTracker()
        stages = {s for j in tracker.getJobIdsForGroup(group) for s in tracker.getJobInfo(j).stageIds}
        return got, len(stages)

    expected = {"3": ("U", 31, "y"), "7": ("D", None, None), "9": ("D", None, None), "new": ("U", 99, "n")}
    small, small_stages = resolved()
    monkeypatch.setattr(change_set, "SINGLE_TASK_RECORDS", 0)
    large, large_stages = resolved()
    assert small == large == expected
    assert small_stages < large_stages  # no exchange: no shuffle map stages
