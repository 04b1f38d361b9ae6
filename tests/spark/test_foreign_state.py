"""Foreign state: what the job meets at a mirror's name, in a mirror or in a source that it did not
make. In every case the user's data is intact, and the mirror either equals the resolved source or
the table is refused in one line with nothing written (core/identity.py)."""
import os

import pytest

from olake_cow.core.checkpoint import FORMAT_PROPERTY, SOURCE_PROPERTY
from olake_cow.core.identity import DELETE_MODE_PROPERTY, MADE_BY_PROPERTY
from olake_cow.core.snapshots import ancestors
from testkit.lakes import make, rows

pytestmark = [pytest.mark.spark]


def table_snapshot(lake, table_q):
    """What a user keeps of a table: its rows, its schema, its snapshots and properties."""
    spark = lake.writer.spark
    data = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {table_q}").collect())
    schema = [(f.name, f.dataType.simpleString()) for f in spark.table(table_q).schema.fields]
    history = [tuple(r) for r in spark.sql(f"SELECT snapshot_id FROM {table_q}.snapshots").collect()]
    return data, schema, history


def test_a_users_table_at_the_mirror_name_is_refused_and_kept(rlake):
    lake = rlake
    make(lake)
    spark = lake.writer.spark
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {lake.catalog}.{lake.cow_ns}")
    spark.sql(f"CREATE TABLE {lake.mirror_q('t')} (id bigint, note string) USING iceberg")
    spark.sql(f"INSERT INTO {lake.mirror_q('t')} VALUES (1, 'mine'), (2, 'also mine')")
    before = table_snapshot(lake, lake.mirror_q("t"))
    code, result = lake.run_summary()
    assert code == 2
    assert result["status"] == "failed" and "not made by olake-cow" in result["error"]
    assert "\n" not in result["error"]
    assert table_snapshot(lake, lake.mirror_q("t")) == before
    assert lake.run("--dry-run") == 2  # refused in a dry run too, before anything is planned


def test_two_sources_in_one_mirror_namespace_are_refused(make_lake, destinations):
    first, second = (make_lake(destinations["hadoop"], "hadoop") for _ in range(2))
    shared = first.cow_ns
    make(first)
    second.writer.create_table("t", [("v", "int"), ("s", "string")])
    second.writer.backfill("t", rows(100, 105))
    assert first.run("--cow-namespace", shared) == 0
    before = table_snapshot(first, first.mirror_q("t"))
    second.cow_ns = shared
    code, result = second.run_summary("--cow-namespace", shared)
    assert code == 2 and f"is the mirror of {first.ns}.t, not of {second.ns}.t" in result["error"]
    assert table_snapshot(first, first.mirror_q("t")) == before
    first.assert_mirror_matches("t")


def test_a_rolled_back_mirror_is_rebuilt_not_reported_up_to_date(rlake):
    lake = rlake
    make(lake)
    assert lake.run() == 0
    first = lake.mirror("t").current_id
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"},
                             {"_olake_id": "2", "_op_type": "d"}, {"_olake_id": "50", "_op_type": "c", "v": 50}])
    assert lake.run() == 0
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.rollback_to_snapshot('{lake.cow_ns}.t_cow', {first})")
    code, result = lake.run_summary()
    assert code == 0 and result["status"] == "merged" and result["repaired"] == 1
    assert any("rolled back" in n for n in result["notes"])
    lake.assert_mirror_matches("t")
    code, result = lake.run_summary()
    assert code == 0 and result["status"] == "up_to_date" and result["repaired"] == 0


def test_a_users_commit_on_a_mirror_is_rebuilt_away(rlake):
    lake = rlake
    make(lake)
    assert lake.run() == 0
    lake.writer.spark.sql(f"DELETE FROM {lake.mirror_q('t')} WHERE _olake_id = '3'")
    mine = lake.writer.spark.table(lake.mirror_q("t")).limit(1).selectExpr(
        "'999' AS _olake_id", "'c' AS _op_type", "9 AS v", "'x' AS s", "_olake_timestamp", "_cdc_timestamp")
    mine.writeTo(lake.mirror_q("t")).append()
    code, result = lake.run_summary()  # nothing new in the source: the repair alone
    assert code == 0 and result["repaired"] == 1
    assert any("committed by someone else" in n for n in result["notes"])
    lake.assert_mirror_matches("t")


def test_a_truncate_mirror_changed_by_someone_else_is_refused_and_kept(tlake):
    lake = tlake
    make(lake)
    assert lake.run() == 0
    lake.writer.spark.sql(f"DELETE FROM {lake.mirror_q('t')} WHERE _olake_id = '3'")
    before = table_snapshot(lake, lake.mirror_q("t"))
    lake.writer.commit("t", [{"_olake_id": "4", "_op_type": "u", "v": 44}])
    code, result = lake.run_summary()
    assert code == 1 and "committed by someone else" in result["error"] and "only complete copy" in result["error"]
    assert table_snapshot(lake, lake.mirror_q("t")) == before


def test_a_change_someone_made_on_a_truncate_mirror_is_kept_only_when_asked(tlake):
    """A GDPR delete on a truncate mirror, the only complete copy: refused (the refusal offers
    --keep-mirror-changes), then kept when asked: the row stays deleted, OLake's changes before and
    after are merged, and the next run is idle. A rollback is never kept."""
    from testkit.local import mirror_problems

    lake = tlake
    make(lake)
    assert lake.run() == 0
    lake.writer.spark.sql(f"DELETE FROM {lake.mirror_q('t')} WHERE _olake_id = '3'")
    lake.writer.commit("t", [{"_olake_id": "4", "_op_type": "u", "v": 44}])
    code, result = lake.run_summary()
    assert code == 1 and "run once with --keep-mirror-changes" in result["error"], result
    code, result = lake.run_summary("--keep-mirror-changes")
    assert code == 0 and result["status"] == "merged", result
    assert any("kept someone's change" in n for n in result["notes"]), result
    lake.writer.commit("t", [{"_olake_id": "5", "_op_type": "u", "v": 55}])
    assert lake.run() == 0

    def without_3():
        return [r for r in lake.writer.model("t").expected() if r["_olake_id"] != "3"]

    _, problems = mirror_problems(lake.writer.spark, lake.mirror_q("t"), lake.mirror("t"), without_3(), lake.fmt,
                                  engines=("pyiceberg",), io=lake.io)
    assert not problems, problems
    code, result = lake.run_summary()
    assert code == 0 and result["status"] == "up_to_date", result
    # a rollback past the job's commits is not someone's change on them: refused even when asked
    first = ancestors(lake.mirror("t"))[0][0].snapshot_id
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.rollback_to_snapshot('{lake.cow_ns}.t_cow', {first})")
    before = table_snapshot(lake, lake.mirror_q("t"))
    code, result = lake.run_summary("--keep-mirror-changes")
    assert code == 1 and "--keep-mirror-changes" not in result["error"], result
    assert table_snapshot(lake, lake.mirror_q("t")) == before


def test_maintenance_never_expires_the_restore_point_of_a_truncate_mirror_someone_changed(tlake):
    """An accident on the only complete copy (a user's DELETE of many rows on a truncate mirror): a
    maintenance-only run with a zero retention expires none of the mirror's snapshots, so the job's
    last commit, which the refusal names, is still there; rolling back to it (the advice) loses no row."""
    lake = tlake
    make(lake)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"}])
    assert lake.run() == 0
    job_last = lake.mirror("t").current_id
    lake.writer.spark.sql(f"DELETE FROM {lake.mirror_q('t')} WHERE _olake_id < '5'")
    lake.writer.commit("t", [{"_olake_id": "2", "_op_type": "u", "v": 200}])
    before = table_snapshot(lake, lake.mirror_q("t"))
    code, result = lake.run_summary("--maintenance-only", "--expire-mirror-older-than", "0")
    assert code == 0 and result["maintenance"]["snapshots_expired"] == 0, result
    assert any("were not expired" in n for n in result["maintenance"]["notes"]), result
    assert table_snapshot(lake, lake.mirror_q("t")) == before
    code, result = lake.run_summary("--expire-mirror-older-than", "0")
    assert code == 1 and str(job_last) in result["error"], result  # the merge is refused, naming it
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.rollback_to_snapshot('{lake.cow_ns}.t_cow', {job_last})")
    assert lake.run() == 0
    lake.assert_mirror_matches("t", engines=("pyiceberg",))


def test_maintenance_of_a_cow_mirror_holding_someones_position_deletes_blames_no_one_and_keeps_them(make_lake,
                                                                                                   destinations):
    """Someone set a truncate cow mirror to merge-on-read and deleted a row: a position-delete file,
    which no merge of the job's would write. A maintenance-only compaction keeps it (it is their
    change, for the merge's refusal and its advice to settle): exit 0, every row as it was (before:
    exit 1, 'maintenance left delete files the mirror must not hold', blaming the maintenance)."""
    lake = make_lake(destinations["hadoop"], "hadoop", "truncate")
    make(lake)
    assert lake.run() == 0
    for key in ("991", "992", "993"):  # small files for the compaction to join
        lake.writer.commit("t", [{"_olake_id": key, "_op_type": "c", "v": int(key)}])
        assert lake.run() == 0
    job_last = lake.mirror("t").current_id
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} SET TBLPROPERTIES ('write.delete.mode'='merge-on-read')")
    lake.writer.spark.sql(f"DELETE FROM {lake.mirror_q('t')} WHERE _olake_id = '3'")
    rows = table_snapshot(lake, lake.mirror_q("t"))[0]
    code, result = lake.run_summary("--maintenance-only", "--compact-files", "--expire-mirror-older-than", "0")
    assert code == 0 and result["maintenance"]["files_compacted"], result
    assert table_snapshot(lake, lake.mirror_q("t"))[0] == rows  # the user's delete kept, no row lost
    code, result = lake.run_summary()
    assert code == 1 and str(job_last) in result["error"], result  # the merge refuses, naming the job's commit
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.rollback_to_snapshot('{lake.cow_ns}.t_cow', {job_last})")
    assert lake.run() == 0
    lake.assert_mirror_matches("t", engines=("pyiceberg",))


@pytest.mark.parametrize("key,forged", [(FORMAT_PROPERTY, "the other format"), (FORMAT_PROPERTY, "and a write mode"),
                                         (FORMAT_PROPERTY, None), (SOURCE_PROPERTY, "crm.t"), (SOURCE_PROPERTY, None)],
                         ids=["format-set", "format-and-write-mode-set", "format-removed", "source-set",
                              "source-removed"])
def test_one_property_of_the_job_someone_set_or_removed_changes_neither_the_mirror_nor_a_row(lake, key, forged):
    """olake-cow.mirror-format and olake-cow.source-table are one property each: the table says what
    the mirror is (format version 2 is cow; 3 with merge-on-read write modes is dv), and the UUID in
    its commits' markers which table it mirrors. The run merges (exit 0, nothing repaired), sets the
    property again, and the mirror equals the resolved source. Before: a cow mirror whose format said
    dv was rebuilt, then merged with position delete files; a truncate one refused with a rollback that
    could not help; a dv mirror was called a cow mirror of format version 2 (and with one of its
    write modes set to copy-on-write as well, refused after the first fix: most write modes count
    now); a mirror naming another source was refused with advice to mirror into another namespace
    (in truncate mode a mirror without the rows the job moved out)."""
    make(lake, n=30)
    assert lake.run() == 0
    m = lake.mirror_q("t")
    before = lake.mirror("t")
    if forged is None:
        lake.writer.spark.sql(f"ALTER TABLE {m} UNSET TBLPROPERTIES ('{key}')")
    else:
        if forged == "and a write mode":  # the job sets write modes again before a merge
            mode = {"cow": "merge-on-read", "dv": "copy-on-write"}[lake.fmt]
            lake.writer.spark.sql(f"ALTER TABLE {m} SET TBLPROPERTIES ('write.update.mode'='{mode}')")
        forged = {"cow": "dv", "dv": "cow"}[lake.fmt] if key == FORMAT_PROPERTY else forged
        lake.writer.spark.sql(f"ALTER TABLE {m} SET TBLPROPERTIES ('{key}'='{forged}')")
    lake.writer.commit("t", [{"_olake_id": "3", "_op_type": "u", "v": 300},
                             {"_olake_id": "40", "_op_type": "c", "v": 40, "s": "n"}], pure_deletes=["10"])
    code, result = lake.run_summary()
    assert code == 0 and result["status"] == "merged" and not result.get("repaired"), result
    lake.assert_mirror_matches("t", engines=("pyiceberg",))  # and no delete file its format forbids
    after = lake.mirror("t")
    assert after.format_version == before.format_version and after.properties[key] == before.properties[key]


@pytest.mark.parametrize("change", ["DELETE FROM {m} WHERE _olake_id < '5'", "ALTER TABLE {m} ADD COLUMN mine string"])
def test_an_upgrade_asked_of_a_truncate_mirror_someone_changed_waits_and_nothing_is_written(make_lake, destinations,
                                                                                              change):
    """--upgrade-mirror cannot be undone: on a truncate mirror someone changed (a DELETE, a column), the
    run refuses the mirror as it is and upgrades nothing, so its "nothing was written" holds; once the
    mirror is rolled back (the advice), the same command upgrades it and merges every row."""
    lake = make_lake(destinations["hadoop"], "hadoop", "truncate")
    make(lake)
    assert lake.run() == 0
    job_last = lake.mirror("t").current_id
    lake.writer.spark.sql(change.format(m=lake.mirror_q("t")))
    lake.writer.commit("t", [{"_olake_id": "2", "_op_type": "u", "v": 200}])
    before, metadata = table_snapshot(lake, lake.mirror_q("t")), lake.mirror("t").metadata_location
    upgrade = ("--mirror-format", "dv", "--upgrade-mirror")
    code, result = lake.run_summary(*upgrade)
    assert code == 1 and "nothing was written or truncated" in result["error"], result
    assert any("waits for a run that finds the mirror as the job left it" in n for n in result["notes"]), result
    assert lake.mirror("t").metadata_location == metadata and lake.mirror("t").format_version == 2
    assert table_snapshot(lake, lake.mirror_q("t")) == before
    if "ADD COLUMN" in change:
        lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} DROP COLUMN mine")
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.rollback_to_snapshot('{lake.cow_ns}.t_cow', {job_last})")
    assert lake.run(*upgrade) == 0
    lake.fmt = "dv"
    assert lake.mirror("t").format_version == 3
    lake.assert_mirror_matches("t", engines=("pyiceberg",))


def test_a_delete_mode_change_rebuilds_a_readonly_mirror(rlake):
    lake = rlake
    make(lake)
    lake.writer.commit("t", [{"_olake_id": "3", "_op_type": "d"}, {"_olake_id": "4", "_op_type": "u", "v": 44}])
    assert lake.run() == 0
    assert "3" in {r["_olake_id"] for r in lake.mirror_rows("t")}  # the tombstone is kept
    code, result = lake.run_summary("--delete-mode", "hard")
    assert code == 0 and result["repaired"] == 1
    lake.assert_mirror_matches("t", "hard")
    assert lake.mirror("t").properties[DELETE_MODE_PROPERTY] == "hard"
    assert lake.run("--delete-mode", "hard") == 0
    code, result = lake.run_summary("--delete-mode", "keep")  # and back
    assert code == 0 and result["repaired"] == 1
    lake.assert_mirror_matches("t", "keep")


def test_a_delete_mode_change_on_a_truncate_mirror_is_refused(tlake):
    lake = tlake
    make(lake)
    lake.writer.commit("t", [{"_olake_id": "3", "_op_type": "d"}])
    assert lake.run() == 0
    before = table_snapshot(lake, lake.mirror_q("t"))
    code, result = lake.run_summary("--delete-mode", "hard")
    assert code == 1 and "--delete-mode keep" in result["error"]
    assert table_snapshot(lake, lake.mirror_q("t")) == before


def test_a_mirror_of_an_earlier_version_is_marked_in_place_not_rebuilt(lake):
    make(lake)
    assert lake.run() == 0
    props = ", ".join(f"'{k}'" for k in (MADE_BY_PROPERTY, DELETE_MODE_PROPERTY, "olake-cow.data-checkpoint"))
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} UNSET TBLPROPERTIES ({props})")
    assert MADE_BY_PROPERTY not in lake.mirror("t").properties
    merges = len(ancestors(lake.mirror("t"))[0])
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"}])
    code, result = lake.run_summary()
    assert code == 0 and result["status"] == "merged" and result["repaired"] == 0
    assert result["rows_upserted"] == 1  # merged, not rebuilt
    mirror = lake.mirror("t")
    assert mirror.properties[MADE_BY_PROPERTY] == "olake-cow"
    assert len(ancestors(mirror)[0]) == merges + 1
    lake.assert_mirror_matches("t")


def test_a_mirror_is_not_created_where_someone_elses_files_are(rlake):
    lake = rlake
    make(lake)
    warehouse = lake.dest["writer"]["iceberg_s3_path"].replace("file://", "")
    folder = os.path.join(warehouse, lake.cow_ns, "t_cow", "data")
    os.makedirs(folder)
    theirs = os.path.join(folder, "theirs.parquet")
    with open(theirs, "wb") as f:
        f.write(b"someone else's bytes")
    code, result = lake.run_summary()
    assert code == 2 and "already holds files: nothing was created" in result["error"]
    assert open(theirs, "rb").read() == b"someone else's bytes"
    assert not lake.mirror("t").exists
    os.remove(theirs)
    assert lake.run() == 0
    lake.assert_mirror_matches("t")


def test_a_mirror_namespace_that_is_an_olake_namespace_is_refused(make_lake, destinations):
    mine, theirs = (make_lake(destinations["hadoop"], "hadoop") for _ in range(2))
    make(mine)
    make(theirs, "orders")
    before = table_snapshot(theirs, theirs.writer.q("orders"))
    code, result = mine.run_summary("--cow-namespace", theirs.ns)
    assert code == 2 and f"{theirs.ns} holds OLake's table orders: it is a source namespace" in result["error"]
    assert table_snapshot(theirs, theirs.writer.q("orders")) == before
    assert theirs.tables.list_tables(theirs.ns) == ["orders"]


def test_a_mirror_location_inside_the_source_namespace_is_refused(jdbc_lake):
    lake = jdbc_lake
    make(lake)
    source_folder = "file://" + lake.source("t").metadata_location.split("/t/metadata/")[0].replace("file:", "")
    code, result = lake.run_summary("--cow-base-location", source_folder)
    assert code == 2 and "inside its source namespace's folder" in result["error"]
    assert not lake.mirror("t").exists
    assert not lake.writer.tables.namespace_exists(lake.cow_ns)  # the refused run made no namespace either
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 10}])
    assert lake.run("--cow-base-location", source_folder + "_mirrors") == 0
    lake.assert_mirror_matches("t")


def test_a_dropped_source_is_reported_and_its_mirror_left_as_it_is(lake):
    make(lake, "kept")
    make(lake, "gone")
    assert lake.run() == 0
    before = table_snapshot(lake, lake.mirror_q("gone"))
    lake.writer.spark.sql(f"DROP TABLE {lake.writer.q('gone')}")
    code, result = lake.run_summary(table="kept")
    assert code == 0 and result["status"] == "up_to_date"
    [dropped] = lake.last_summary["dropped_sources"]
    assert f"{lake.ns}.gone no longer exists; its mirror {lake.cow_ns}.gone_cow was left as it is" in dropped
    assert table_snapshot(lake, lake.mirror_q("gone")) == before
