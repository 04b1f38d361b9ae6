"""Nothing but its own, against a determined user, through the job's command line: a forged marker,
a user's schema edit on the mirror, a second job truncating the source, a truncate mirror's way out
after OLake's snapshots were expired, a summary inside the warehouse, and the trigger's idle check
deciding as the job does. Each test checks what the user keeps (rows, schema, files) against the
writer's independent model, not only exit codes."""
import json
import os
import re
import time

import pytest
from tests.spark.catalog_scenarios import (
    ONE_READER,
    keeps_data,
    kept,
    made_by_marker_alone,
    mirror_column_dropped,
    unusable_mirror_properties,
)

from olake_cow.cli import main as job_main
from olake_cow.core.identity import comparable_location
from olake_cow.core.maintenance import MaintenanceOptions
from olake_cow.core.planner import TableAsk
from olake_cow.core.snapshots import ancestors
from olake_trigger.freshness import Freshness
from testkit.lakes import make, rows

pytestmark = [pytest.mark.spark]
# The readonly mirror of a source another job truncates runs on either engine; the other job (truncate
# mode), its --verify refusal and what only Spark does are Spark's.
ENGINES = ["spark", "python"]
OTHER_JOB = ("--source-mode", "truncate", "--engine", "spark")
# ONE_READER: what these tests check is whose table it is and what it holds, not how engines read it
# (test_mirror reads every mirror with all four): Spark and pyiceberg read each mirror here.


def boundaries(lake, table="t"):
    return [s.snapshot_id for s in ancestors(lake.source(table))[0] if s.is_boundary]


def test_a_table_carrying_only_the_made_by_marker_is_refused_and_kept(catalog_lake):
    made_by_marker_alone(catalog_lake)


def test_a_column_dropped_from_a_readonly_mirror_is_repaired_from_olakes_table(catalog_lake):
    mirror_column_dropped(catalog_lake)


def test_a_column_renamed_in_a_truncate_mirror_is_refused_and_renaming_it_back_loses_nothing(make_lake, destinations):
    lake = make_lake(destinations["hadoop"], "hadoop", "truncate")
    make(lake)
    assert lake.run() == 0
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} RENAME COLUMN s TO s_renamed")
    lake.writer.commit("t", [{"_olake_id": "4", "_op_type": "u", "v": 44, "s": "x"}])
    before, truncates = kept(lake, lake.mirror_q("t")), boundaries(lake)
    code, result = lake.run_summary()
    assert code == 1 and "column s of the mirror was renamed to s_renamed" in result["error"]
    assert "nothing was written or truncated" in result["error"] and keeps_data(result["error"])
    assert kept(lake, lake.mirror_q("t")) == before and boundaries(lake) == truncates
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} RENAME COLUMN s_renamed TO s")  # the advice
    assert lake.run() == 0
    lake.assert_mirror_matches("t", engines=ONE_READER)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_second_job_truncating_the_source_leaves_a_readonly_mirror_every_row(make_lake, destinations, engine):
    lake = make_lake(destinations["jdbc"], "jdbc", "readonly")
    lake.engine = engine
    make(lake)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"},
                             {"_olake_id": "30", "_op_type": "c", "v": 30}])
    other = ["--cow-namespace", lake.ns + "_other", *OTHER_JOB]
    assert lake.run_raw(*other) == 0  # another job truncates OLake's table
    assert boundaries(lake)
    lake.writer.commit("t", [{"_olake_id": "2", "_op_type": "d"}, {"_olake_id": "31", "_op_type": "c", "v": 31}])
    code, result = lake.run_summary()
    assert code == 0 and result["engine"] == engine, result
    assert any("another olake-cow job truncates" in n for n in result["notes"]), result
    lake.assert_mirror_matches("t", engines=ONE_READER)  # every row OLake wrote, none lost to the other job's truncate
    assert lake.run_raw(*other) == 0
    assert lake.run() == 0
    lake.assert_mirror_matches("t", engines=ONE_READER)
    assert lake.run("--verify", "--engine", "spark") == 2  # it would compare with a truncated table


@pytest.mark.parametrize("engine", ENGINES)
def test_a_readonly_mirror_of_a_source_another_job_truncates_is_never_rebuilt_from_it(make_lake, destinations,
                                                                                      engine):
    """A rebuild reads OLake's table as it is now; after another job's truncates it no longer holds the
    rows that job moved out, so a rebuild (another --delete-mode, someone's commit to the mirror) is
    refused, the mirror is kept, and following the advice loses nothing. Asked to switch to truncate
    mode, the job never advises dropping it (the rows it keeps would go, and the build after refused)."""
    lake = make_lake(destinations["jdbc"], "jdbc", "readonly")
    lake.engine = engine
    make(lake)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"},
                             {"_olake_id": "30", "_op_type": "c", "v": 30}])
    assert lake.run_raw("--cow-namespace", lake.ns + "_other", *OTHER_JOB) == 0
    assert boundaries(lake) and lake.run() == 0
    before = kept(lake, lake.mirror_q("t"))
    code, result = lake.run_summary("--delete-mode", "hard")
    assert code == 1 and "another olake-cow job truncates" in result["error"], result
    assert "nothing was written" in result["error"] and keeps_data(result["error"]), result["error"]
    assert kept(lake, lake.mirror_q("t")) == before
    code, result = lake.run_summary("--source-mode", "truncate", "--engine", "auto")  # never "drop it" to switch
    assert code == 2 and "cannot switch to truncate" in result["error"] and keeps_data(result["error"]), result
    assert kept(lake, lake.mirror_q("t")) == before
    lake.writer.spark.sql(f"DELETE FROM {lake.mirror_q('t')} WHERE _olake_id IN ('3', '4')")  # someone's commit
    lake.writer.commit("t", [{"_olake_id": "5", "_op_type": "u", "v": 55}])
    code, result = lake.run_summary()
    assert code == 1 and "another olake-cow job truncates" in result["error"], result
    assert keeps_data(result["error"]), result["error"]
    check = trigger_check(lake)  # the trigger starts no run that could only fail, and says why
    assert check.blocked and check.merge is None and "another olake-cow job truncates" in str(check.refused), check
    snapshot = re.search(r"rollback_to_snapshot\('<mirror>', (\d+)\)", result["error"]).group(1)
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.rollback_to_snapshot('{lake.cow_ns}.t_cow', {snapshot})")
    assert lake.run() == 0  # the advice followed: every row back, OLake's new change merged
    lake.assert_mirror_matches("t", engines=ONE_READER)
    # OLake's history expired past the snapshot the mirror holds (the other job's maintenance does not
    # wait for it): no rollback can help (before: the advice named a rollback to the current snapshot)
    lake.writer.commit("t", [{"_olake_id": "6", "_op_type": "u", "v": 66}])
    assert lake.run_raw("--cow-namespace", lake.ns + "_other", *OTHER_JOB) == 0
    lake.writer.commit("t", [{"_olake_id": "7", "_op_type": "u", "v": 77}])
    expire_source(lake)
    before = kept(lake, lake.mirror_q("t"))
    code, result = lake.run_summary()
    assert code == 1 and "cannot be merged further" in result["error"], result
    assert "rollback" not in result["error"] and keeps_data(result["error"]), result["error"]
    assert f"mirror {lake.ns}_other.t_cow is the table's complete copy" in result["error"], result["error"]
    assert kept(lake, lake.mirror_q("t")) == before
    assert trigger_check(lake).blocked


def expire_source(lake):
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.expire_snapshots(table => '{lake.ns}.t', "
                          f"older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)")
    assert not boundaries(lake)  # the truncates are out of OLake's history


def mirrored_then_truncated_by_another_job(lake, engine="spark"):
    """A readonly mirror of t (its runs on `engine`), then another job's truncate of OLake's table and
    a commit after it."""
    lake.engine = engine
    make(lake)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"}])
    assert lake.run_raw("--cow-namespace", lake.ns + "_other", *OTHER_JOB) == 0
    lake.writer.commit("t", [{"_olake_id": "5", "_op_type": "u", "v": 55}])
    return lake


@pytest.mark.parametrize("engine", ENGINES)
def test_a_readonly_mirror_remembers_another_jobs_truncate_after_olakes_snapshots_are_expired(make_lake, destinations,
                                                                                             engine):
    """A truncate-mode stack expires OLake's snapshots, and with them the truncates a rebuild is judged
    by: the readonly mirror records the truncate it merged past, so a rebuild stays refused, and
    --verify too. (Either engine merges such sources: it notes what the mirror keeps.)"""
    lake = mirrored_then_truncated_by_another_job(make_lake(destinations["jdbc"], "jdbc", "readonly"), engine)
    code, result = lake.run_summary()  # merges past the other job's truncate
    assert code == 0 and result["status"] == "merged" and result["engine"] == engine, result
    expire_source(lake)
    before = kept(lake, lake.mirror_q("t"))
    code, result = lake.run_summary("--delete-mode", "hard")
    assert code == 1 and "another olake-cow job truncates" in result["error"], result
    assert keeps_data(result["error"]) and kept(lake, lake.mirror_q("t")) == before
    assert lake.run("--verify", "--engine", "spark") == 2  # it would compare with a table that lost those rows
    lake.writer.commit("t", [{"_olake_id": "6", "_op_type": "u", "v": 66}])
    code, result = lake.run_summary()  # incremental merges go on, noting what the mirror keeps
    assert code == 0 and result["status"] == "merged" and result["engine"] == engine, result
    assert any("another olake-cow job truncates" in n for n in result["notes"]), result["notes"]
    lake.assert_mirror_matches("t", engines=ONE_READER)  # every row the other job moved out is here


def test_no_mirror_is_first_built_from_a_table_another_job_truncates_even_after_its_history_is_expired(
        make_lake, destinations):
    """Another job truncates OLake's table into its mirror: a new mirror in another namespace would lack
    every row that job moved out. It is refused in either mode (it was built in truncate mode, or, once
    OLake's snapshots were expired, in readonly mode from the emptied table), and the trigger says so."""
    lake = make_lake(destinations["jdbc"], "jdbc", "readonly")
    make(lake)
    other = ["--cow-namespace", lake.ns + "_other", "--source-mode", "truncate"]
    assert lake.run_raw(*other) == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"},
                             {"_olake_id": "30", "_op_type": "c", "v": 30}])
    assert lake.run_raw(*other) == 0 and boundaries(lake)
    for expired in (False, True):
        if expired:
            lake.writer.commit("t", [{"_olake_id": "31", "_op_type": "c", "v": 31}])
            expire_source(lake)
        for asked in ([], ["--source-mode", "readonly"], ["--source-mode", "truncate"]):
            before = lake.source_metadata()
            code, result = lake.run_summary(*asked) if asked else lake.run_summary("--source-mode", "readonly")
            if not asked:
                code = lake.run_raw()
            assert code == 2, (expired, asked, result)
            assert lake.source_metadata() == before, (expired, asked)  # nothing truncated
            assert not lake.mirror("t").exists, (expired, asked)
        assert f"into its mirror {lake.ns}_other.t_cow" in result["error"], result
        assert "would lack every row" in result["error"] and keeps_data(result["error"]), result["error"]
        check = trigger_check(lake)
        assert check.blocked and check.merge is None and "another olake-cow job truncates" in str(check.refused)
    assert lake.run_raw(*other) == 0
    lake.cow_ns = lake.ns + "_other"  # that job's mirror, the complete copy, holds every row OLake wrote
    lake.assert_mirror_matches("t", engines=ONE_READER)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_readonly_mirror_is_not_rebuilt_after_another_jobs_truncates_were_expired_before_it_ran(
        make_lake, destinations, engine):
    """Another job truncates OLake's table and OLake's snapshots are expired before the readonly mirror
    runs again: the snapshots it held are gone, so it would be rebuilt, from a table that lost the rows
    that job moved out. The mark that job leaves on OLake's table refuses it; the mirror keeps its rows."""
    lake = mirrored_then_truncated_by_another_job(make_lake(destinations["jdbc"], "jdbc", "readonly"), engine)
    expire_source(lake)
    before = kept(lake, lake.mirror_q("t"))
    code, result = lake.run_summary()
    assert code == 1 and f"into its mirror {lake.ns}_other.t_cow" in result["error"], result
    assert "nothing was written" in result["error"] and keeps_data(result["error"]), result["error"]
    assert kept(lake, lake.mirror_q("t")) == before
    check = trigger_check(lake)
    assert check.blocked and "another olake-cow job truncates" in str(check.refused), check
    assert lake.run("--verify", "--engine", "spark") == 2  # it would compare with a table that lost those rows


def test_a_truncate_mirror_after_olakes_snapshots_were_expired_resumes_without_losing_a_row(make_lake, destinations):
    lake = make_lake(destinations["hadoop"], "hadoop", "truncate")
    make(lake)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"}])
    lake.writer.commit("t", [{"_olake_id": "2", "_op_type": "d"}, {"_olake_id": "40", "_op_type": "c", "v": 40}])
    current = lake.source("t").current_id
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.expire_snapshots(table => '{lake.ns}.t', "
                          f"older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)")
    assert [s.snapshot_id for s in lake.source("t").snapshots] == [current]
    before = kept(lake, lake.mirror_q("t"))
    code, result = lake.run_summary()
    assert code == 1 and "--resume-from-source" in result["error"] and keeps_data(result["error"])
    assert kept(lake, lake.mirror_q("t")) == before and lake.source("t").current_id == current
    code, result = lake.run_summary("--resume-from-source")  # the advice
    assert code == 0 and any("resumed from what OLake's table still holds" in n for n in result["notes"])
    # nothing lost: the mirror's rows and every change OLake's table held
    lake.assert_mirror_matches("t", engines=ONE_READER)
    lake.writer.commit("t", [{"_olake_id": "3", "_op_type": "u", "v": 33}])
    assert lake.run() == 0
    lake.assert_mirror_matches("t", engines=ONE_READER)


def test_a_resume_after_olake_compacted_and_expired_its_table_reads_only_files_still_there(make_lake, destinations):
    """Another tool's compactions drop the change set's equality-delete files, and an expiry then
    deletes them with the snapshots that added them: only the compactions' entries removing them are
    left. The resume reads the delete files that are still there (before: it read those entries'
    files too and failed on a file that does not exist, at every run)."""
    lake = make_lake(destinations["hadoop"], "hadoop", "truncate")
    make(lake)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"},
                             {"_olake_id": "40", "_op_type": "c", "v": 40}])
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "2", "_op_type": "u", "v": 200, "s": "y"}])
    lake.writer.rewrite_files("t")
    lake.writer.rewrite_files("t")  # drops the equality deletes no data file is older than
    assert lake.source("t").snapshot(lake.source("t").current_id).summary_int("removed-delete-files") > 0
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.expire_snapshots(table => '{lake.ns}.t', "
                          f"older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)")
    lake.writer.rewrite_files("t")
    lake.writer.commit("t", [{"_olake_id": "3", "_op_type": "u", "v": 300, "s": "z"}])
    code, result = lake.run_summary()
    assert code == 1 and "--resume-from-source" in result["error"], result
    code, result = lake.run_summary("--resume-from-source")  # the advice
    assert code == 0 and any("resumed from what OLake's table still holds" in n for n in result["notes"]), result
    lake.assert_mirror_matches("t", engines=ONE_READER)  # what was dropped were the updates' own deletes
    lake.writer.commit("t", [{"_olake_id": "4", "_op_type": "d"}])
    assert lake.run() == 0
    lake.assert_mirror_matches("t", engines=ONE_READER)


def test_a_first_truncate_build_of_a_table_whose_older_snapshots_were_expired_holds_every_row(tlake):
    """OLake's table as a truncate mirror first meets it: its early snapshots expired (by OLake or a
    user), never truncated. The first truncate is the table's first, so the mirror is built from it."""
    lake = tlake
    make(lake)
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"},
                             {"_olake_id": "2", "_op_type": "d"}, {"_olake_id": "40", "_op_type": "c", "v": 40}])
    lake.writer.commit("t", [{"_olake_id": "3", "_op_type": "u", "v": 33}])
    expire_source(lake)  # the table was never truncated: no boundary either way
    assert not trigger_check(lake).blocked
    code, result = lake.run_summary()
    assert code == 0 and result["status"] == "merged", result
    lake.assert_mirror_matches("t", engines=ONE_READER)
    lake.writer.commit("t", [{"_olake_id": "4", "_op_type": "u", "v": 44}])
    assert lake.run() == 0
    lake.assert_mirror_matches("t", engines=ONE_READER)


def test_two_runs_at_once_on_a_first_truncate_build_after_expiry_lose_no_row(tlake, monkeypatch):
    """The first-build rule above, with a second run (a user's beside the schedule's) going start to
    end between the first run's plan and its truncate: Iceberg retries the first run's truncate onto
    the second's boundary, both flagged as first. The second run's build holds every row, the first
    run finds the mirror past its change sets, and no row is lost or put in twice."""
    from olake_cow.spark import boundary

    lake = tlake
    make(lake)
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"},
                             {"_olake_id": "2", "_op_type": "d"}, {"_olake_id": "40", "_op_type": "c", "v": 40}])
    expire_source(lake)
    real, raced = boundary.close_change_set, []

    def racing(*args, **kwargs):
        if not raced:
            raced.append(None)  # before it runs: its own truncate comes through here
            raced[0] = lake.run("--engine", "spark")  # the second run, start to end
        return real(*args, **kwargs)

    monkeypatch.setattr(boundary, "close_change_set", racing)
    code, result = lake.run_summary("--engine", "spark")
    monkeypatch.undo()
    assert raced == [0] and code == 0, result
    assert len(boundaries(lake)) == 2  # both truncates committed, one on the other
    lake.assert_mirror_matches("t", engines=ONE_READER)
    lake.writer.commit("t", [{"_olake_id": "4", "_op_type": "u", "v": 44}])
    assert lake.run() == 0 and not trigger_sees_work(lake)
    lake.assert_mirror_matches("t", engines=ONE_READER)


def test_a_dropped_truncate_mirror_is_not_built_again_from_what_olakes_expired_table_holds(make_lake, destinations):
    """The mirror of a truncate job, the only complete copy, is dropped and OLake's snapshots are
    expired past every truncate: a mirror built from OLake's table would lack every row moved out
    before. Refused before anything is truncated (the trigger agrees); the mirror restored under its
    name goes on without losing a row."""
    lake = make_lake(destinations["jdbc"], "jdbc", "truncate")
    make(lake)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"},
                             {"_olake_id": "40", "_op_type": "c", "v": 40}])
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "2", "_op_type": "d"}, {"_olake_id": "41", "_op_type": "c", "v": 41}])
    expire_source(lake)
    metadata = lake.mirror("t").metadata_location
    lake.writer.spark.sql(f"DROP TABLE {lake.mirror_q('t')}")  # without purge: its files stay
    before = lake.source_metadata()
    code, result = lake.run_summary()
    assert code == 1 and "restore it under its name" in result["error"], result
    assert f"{lake.cow_ns}.t_cow" in result["error"] and keeps_data(result["error"]), result["error"]
    assert lake.source_metadata() == before and not lake.mirror("t").exists  # nothing truncated, nothing built
    check = trigger_check(lake)
    assert check.blocked and check.merge is None, check
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.register_table(table => '{lake.cow_ns}.t_cow', "
                          f"metadata_file => '{metadata}')")  # the advice
    assert lake.run() == 0
    lake.assert_mirror_matches("t", engines=ONE_READER)


def test_a_summary_inside_the_warehouse_is_refused_before_anything_is_written(lake_dir_destination, tmp_path):
    dest_path, warehouse = lake_dir_destination
    for target in (os.path.join(warehouse, "sales", "t", "metadata", "v3.metadata.json"),
                   os.path.join(warehouse, "new", "summary.json")):
        code = job_main(["--destination-details", dest_path, "--source-namespace", "sales", "--quiet",
                         "--summary-out", target])
        assert code == 2
        assert not os.path.exists(os.path.dirname(target))


@pytest.fixture
def lake_dir_destination(tmp_path):
    warehouse = str(tmp_path / "wh")
    os.makedirs(warehouse)
    path = tmp_path / "dest.json"
    path.write_text(json.dumps({"type": "ICEBERG", "writer": {"catalog_type": "hadoop", "catalog_name": "c",
                                                              "iceberg_s3_path": "file://" + warehouse}}))
    return str(path), warehouse


class LocalTables:
    """The trigger's Glue adapter, reading the same metadata from the lake's catalog."""

    def __init__(self, lake):
        self.lake = lake

    def iceberg_tables(self, namespace):
        return self.lake.tables.list_tables(namespace)

    def state(self, namespace, name):
        from testkit.local import fresh_state

        return fresh_state(self.lake.tables, namespace, name)


def trigger_check(lake, delete_mode="keep"):
    """The trigger's metadata check of table t (lambda/olake_trigger/freshness.py)."""
    return Freshness(LocalTables(lake), "_cow", None, TableAsk(delete_mode)).check(
        lake.ns, ["t"], MaintenanceOptions(), 0)["t"]


def trigger_sees_work(lake, delete_mode="keep"):
    return trigger_check(lake, delete_mode).merge is not None


def job_sees_work(lake, *args):
    code, result = lake.run_summary("--dry-run", *args)
    assert code == 0, result
    return result["plan"] != ["up to date"]


def test_the_trigger_and_the_job_decide_alike_on_a_quiet_source(make_lake, destinations):
    lake = make_lake(destinations["hadoop"], "hadoop", "readonly")
    make(lake)
    assert lake.run() == 0
    first = lake.mirror("t").current_id
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"}])
    assert lake.run() == 0
    assert not trigger_sees_work(lake) and not job_sees_work(lake)
    cases = [
        ("a delete mode change", lambda: None, ("hard",)),
        ("a rolled-back mirror", lambda: lake.writer.spark.sql(
            f"CALL {lake.catalog}.system.rollback_to_snapshot('{lake.cow_ns}.t_cow', {first})"), ()),
        ("a user's schema change", lambda: lake.writer.spark.sql(
            f"ALTER TABLE {lake.mirror_q('t')} RENAME COLUMN s TO s2"), ()),
        ("a recreated source", lambda: recreate(lake), ()),
    ]
    for what, change, delete_mode in cases:
        change()
        args = ("--delete-mode", delete_mode[0]) if delete_mode else ()
        trigger, job = trigger_sees_work(lake, *delete_mode), job_sees_work(lake, *args)
        assert trigger and job, f"{what}: trigger {trigger}, job {job}"
        assert lake.run(repair_ok=True) == 0  # the run both start repairs it
        assert not trigger_sees_work(lake) and not job_sees_work(lake), what
        lake.assert_mirror_matches("t", engines=ONE_READER)


def recreate(lake):
    lake.writer.spark.sql(f"DROP TABLE {lake.writer.q('t')}")
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 12))


def test_properties_a_user_set_to_what_the_job_cannot_use_are_reset_not_failed_at_every_run(lake):
    unusable_mirror_properties(lake)


def mirrored_in_both_modes(make_lake, destinations, change):
    """A readonly and a truncate lake (file-system catalog), each mirrored once, then `change`d."""
    lakes = [make_lake(destinations["hadoop"], "hadoop", mode) for mode in ("readonly", "truncate")]
    for lake in lakes:
        make(lake)
        assert lake.run() == 0
        change(lake)
    return lakes


def test_a_format_version_set_on_a_cow_mirror_is_repaired_in_readonly_and_upgraded_on_request_in_truncate(
        make_lake, destinations):
    ro, tr = mirrored_in_both_modes(make_lake, destinations, lambda lake: (
        lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} SET TBLPROPERTIES ('format-version'='3')"),
        lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"}])))
    code, result = ro.run_summary()
    assert code == 0 and result["repaired"] == 1 and ro.mirror("t").format_version == 2
    ro.assert_mirror_matches("t", engines=ONE_READER)
    before, truncates = kept(tr, tr.mirror_q("t")), boundaries(tr)
    code, result = tr.run_summary()
    assert code == 1 and "--upgrade-mirror" in result["error"] and keeps_data(result["error"])
    assert kept(tr, tr.mirror_q("t")) == before and boundaries(tr) == truncates
    assert tr.run("--mirror-format", "dv", "--upgrade-mirror") == 0  # the advice
    tr.fmt = "dv"
    tr.assert_mirror_matches("t", engines=ONE_READER)


def test_a_source_column_back_with_another_type_rebuilds_readonly_and_stops_truncate_before_truncating(
        make_lake, destinations):
    def retyped(lake):
        lake.writer.spark.sql(f"ALTER TABLE {lake.writer.q('t')} DROP COLUMN v")
        lake.writer.spark.sql(f"ALTER TABLE {lake.writer.q('t')} ADD COLUMN v string")
        lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": "one", "s": "x"},
                                 {"_olake_id": "50", "_op_type": "c", "v": "fifty", "s": "y"}])

    ro, tr = mirrored_in_both_modes(make_lake, destinations, retyped)
    code, result = ro.run_summary()
    assert code == 0 and any("column v is now string" in n for n in result["notes"]), result
    resolved = sorted(tuple(r) for r in ro.writer.spark.sql(
        f"SELECT _olake_id, v, s FROM {ro.writer.q('t')}").collect())
    assert sorted(tuple(r) for r in ro.writer.spark.sql(
        f"SELECT _olake_id, v, s FROM {ro.mirror_q('t')}").collect()) == resolved
    before, truncates = kept(tr, tr.mirror_q("t")), boundaries(tr)
    code, result = tr.run_summary()
    assert code == 1 and "column v is now string and the mirror's is int" in result["error"]
    assert keeps_data(result["error"])
    assert kept(tr, tr.mirror_q("t")) == before and boundaries(tr) == truncates  # nothing truncated


def test_an_olake_namespace_ending_in_cow_is_mirrored_into_the_namespace_named_for_it(make_lake, destinations):
    lake = make_lake(destinations["hadoop"], "hadoop", "readonly")
    lake.ns = lake.writer.namespace = lake.ns + "_cow"  # OLake's database farm, schema cow
    lake.cow_ns = lake.ns + "_mirror"
    make(lake)
    assert lake.run() == 2  # without a mirror namespace of its own: ambiguous, refused before Spark
    assert lake.run("--cow-namespace", lake.cow_ns) == 0
    lake.assert_mirror_matches("t", engines=ONE_READER)


def test_a_mirror_namespace_given_as_a_source_is_refused_table_by_table(rlake):
    lake = rlake
    make(lake)
    assert lake.run() == 0
    before = kept(lake, lake.mirror_q("t"))
    code = lake.run_raw("--source-namespace", lake.cow_ns, "--cow-namespace", lake.ns + "_again",
                        "--source-mode", "readonly")
    assert code == 1
    assert kept(lake, lake.mirror_q("t")) == before
    assert not lake.tables.namespace_exists(lake.ns + "_again") or not lake.tables.list_tables(lake.ns + "_again")


@pytest.mark.parametrize("change", ["commit", "rollback", "rollback-with-record", "commit-after-compaction"])
def test_following_the_rollback_advice_of_a_truncate_mirror_someone_changed_loses_nothing(make_lake, destinations,
                                                                                          change):
    """`rollback`: someone rolled the mirror back past the job's last commit, which is then no ancestor
    of the current snapshot for Iceberg's rollback_to_snapshot to reach: the advice names
    set_current_snapshot (before: a rollback Iceberg refused, 'not an ancestor of the current state').
    `commit-after-compaction`: the job's maintenance compacted the mirror and expired its commits
    before someone's commit: the advice names the compaction, which holds the job's rows (before:
    no snapshot was named). `rollback-with-record`: and someone set olake-cow.data-snapshot to the
    snapshot rolled back to: not believed, the advice names the job's last commit, which the data
    checkpoint and the checkpoint property name (before: no snapshot was named)."""
    lake = make_lake(destinations["hadoop"], "hadoop", "truncate")
    make(lake)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"}])
    assert lake.run() == 0
    if change == "commit-after-compaction":
        for key in ("991", "992", "993"):  # past every key: a small file each, for the compaction to join
            lake.writer.commit("t", [{"_olake_id": key, "_op_type": "c", "v": int(key)}])
            assert lake.run() == 0
        code, result = lake.run_summary("--maintenance-only", "--compact-files", "--expire-mirror-older-than", "0")
        assert code == 0 and result["maintenance"]["files_compacted"] and result["maintenance"]["snapshots_expired"], (
            result["maintenance"], result["notes"])
    if change.startswith("commit"):
        lake.writer.spark.sql(f"DELETE FROM {lake.mirror_q('t')} WHERE _olake_id IN ('3', '4')")  # someone's commit
    else:
        first = ancestors(lake.mirror("t"))[0][0].snapshot_id
        lake.writer.spark.sql(f"CALL {lake.catalog}.system.rollback_to_snapshot('{lake.cow_ns}.t_cow', {first})")
        if change == "rollback-with-record":
            lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} SET TBLPROPERTIES "
                                  f"('olake-cow.data-snapshot'='{first}')")
    lake.writer.commit("t", [{"_olake_id": "5", "_op_type": "u", "v": 55}, {"_olake_id": "60", "_op_type": "c"}])
    code, result = lake.run_summary()
    assert code == 1 and keeps_data(result["error"]), result
    procedure, snapshot = re.search(r"(rollback_to_snapshot|set_current_snapshot)\('<mirror>', (\d+)\)",
                                    result["error"]).groups()
    assert procedure == ("set_current_snapshot" if change.startswith("rollback") else "rollback_to_snapshot"), \
        result["error"]
    assert ("a rewrite of the job's last commit" in result["error"]) == (change == "commit-after-compaction")
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.{procedure}('{lake.cow_ns}.t_cow', {snapshot})")
    assert lake.run() == 0  # the advice followed: every row back, and the source's new changes merged
    lake.assert_mirror_matches("t", engines=ONE_READER)


def _source_files_appended_to_the_mirror(lake):
    """Someone appends OLake's own data files to the mirror (Iceberg's API, as add_files would): the
    mirror's history now references files of OLake's table. Returns their paths."""
    src, mirror = lake.tables.load(lake.ns, "t"), lake.tables.load(lake.cow_ns, "t_cow")
    tasks, append, paths = src.newScan().planFiles().iterator(), mirror.newAppend(), []
    while tasks.hasNext():
        f = tasks.next().file()
        paths.append(str(f.location()))
        append.appendFile(f)
    append.commit()
    return paths


def _source_rows(lake):
    return len(lake.writer.spark.sql(f"SELECT * FROM {lake.writer.q('t')}").collect())


def _all_there(lake, paths):
    io = lake.tables.load(lake.ns, "t").io()
    return [p for p in paths if not io.newInputFile(p).exists()] == []


def test_files_someone_committed_to_the_mirror_from_elsewhere_are_never_deleted(make_lake, destinations):
    """OLake's data files appended to a readonly mirror: the job repairs the mirror in place, after
    which only older snapshots reference them. Expiring those would delete OLake's files: the expiry
    is skipped with a note naming them, and OLake's table keeps every file and row. A mirror to be
    made anew (someone also drops a column) is not dropped either, since its purge would delete them."""
    lake = make_lake(destinations["jdbc"], "jdbc", "readonly")
    make(lake)
    assert lake.run() == 0
    paths = _source_files_appended_to_the_mirror(lake)
    assert paths
    code, result = lake.run_summary("--expire-mirror-older-than", "0")
    assert code == 0 and result["repaired"] == 1, result
    assert _all_there(lake, paths), "OLake's data files were deleted"
    notes = result["maintenance"]["notes"]
    assert any("outside its location" in n and min(paths) in n for n in notes), notes
    lake.assert_mirror_matches("t", engines=ONE_READER)
    assert _source_rows(lake) == 20  # OLake's table reads whole
    # The trigger starts no run for an expiry the job skips while the mirror is as it left it.
    expiry = MaintenanceOptions(expire_mirror_hours=0)
    freshness = Freshness(LocalTables(lake), "_cow", None, TableAsk())
    check = freshness.check(lake.ns, ["t"], expiry, int(time.time() * 1000))["t"]
    assert check.merge is None and "expire_mirror" not in check.due, check

    _source_files_appended_to_the_mirror(lake)
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} DROP COLUMN s")
    before = lake.mirror("t").metadata_location
    code, result = lake.run_summary()
    assert code == 2 and "outside its location" in result["error"] and "nothing was deleted" in result["error"], result
    assert lake.mirror("t").metadata_location == before  # not dropped
    assert _all_there(lake, paths) and _source_rows(lake) == 20


def _files_under(location):
    """Every file under a local table location, as local paths."""
    return sorted(os.path.join(d, n) for d, _, names in os.walk(comparable_location(location)) for n in names)


def _aged(location):
    """Every file under a local table location made older than any orphan age (2001), as the files
    of a table OLake wrote last year are."""
    for path in _files_under(location):
        os.utime(path, (1_000_000_000, 1_000_000_000))


@pytest.mark.parametrize("move", ["data-path", "location"])
def test_orphan_removal_on_a_mirror_someone_pointed_at_olakes_folders_deletes_nothing_of_olakes(make_lake, destinations,
                                                                                                  move):
    """Someone points the mirror's data path (or its location) at OLake's table. The mirror's orphan
    removal would list OLake's files there, none of which the mirror references, and delete every
    one older than the age asked: it is skipped with a note naming why, and OLake's table keeps
    every file and row."""
    lake = make_lake(destinations["jdbc"], "jdbc", "readonly")
    make(lake)
    assert lake.run() == 0
    source = str(lake.tables.load(lake.ns, "t").location())
    assert "remove_orphans" in _due_orphans(lake)
    if move == "data-path":
        lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} SET TBLPROPERTIES ('write.data.path'='{source}/data')")
    else:
        lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} SET LOCATION '{source}'")
    kept = _files_under(source)
    _aged(source)
    code, result = lake.run_summary("--maintenance-only", "--remove-orphans-older-than", "24")
    assert [p for p in kept if not os.path.exists(p)] == [], "OLake's files were deleted"
    assert _source_rows(lake) == 20
    assert code == 0, result
    notes = result["maintenance"]["notes"]
    assert any("orphan" in n and "nothing was deleted" in n for n in notes), notes
    # The trigger starts no run for what the job skips (and would for the pair moved apart)
    assert "remove_orphans" not in _due_orphans(lake), "the trigger would start a run the job does nothing in"


def _due_orphans(lake):
    orphans = MaintenanceOptions(remove_orphans_hours=24)
    return Freshness(LocalTables(lake), "_cow", None, TableAsk()).check(lake.ns, ["t"], orphans, 0)["t"].due


def test_orphan_removal_on_an_empty_mirror_moved_onto_another_tables_location_deletes_nothing_of_it(make_lake,
                                                                                                    destinations):
    """A mirror that never held a file (OLake's table holds no row) is moved onto a table outside its
    pair. No file of its history lies outside its new location and the table is not its source, so
    only what orphan removal lists tells: that table's metadata files. Nothing is deleted, with a
    note; the table keeps every file and row, and the other mirror's orphan removal still runs."""
    lake = make_lake(destinations["jdbc"], "jdbc", "readonly")
    make(lake)
    lake.writer.create_table("e", [("v", "int")])
    lake.writer.commit("e", [], pure_deletes=["1"])  # a sync that deleted a row never mirrored
    assert lake.run() == 0
    assert lake.tables.state(lake.cow_ns, "e_cow").exists and not _files_under(_data_folder(lake, lake.cow_ns, "e_cow"))
    spark, other = lake.writer.spark, f"{lake.catalog}.{lake.ns}_keep.kept"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {lake.catalog}.{lake.ns}_keep")
    spark.sql(f"CREATE TABLE {other} (id int) USING iceberg")
    spark.sql(f"INSERT INTO {other} VALUES (1), (2), (3)")
    location = str(lake.tables.load(f"{lake.ns}_keep", "kept").location())
    spark.sql(f"ALTER TABLE {lake.mirror_q('e')} SET LOCATION '{location}'")
    kept = _files_under(location)
    _aged(location)
    stray = os.path.join(_data_folder(lake, lake.cow_ns, "t_cow"), "00000-stray-from-a-dead-writer.parquet")
    with open(stray, "wb") as f:
        f.write(b"PAR1 not really")
    os.utime(stray, (1_000_000_000, 1_000_000_000))
    code, result = lake.run_summary("--maintenance-only", "--remove-orphans-older-than", "24", table="e")
    assert [p for p in kept if not os.path.exists(p)] == [], "the other table's files were deleted"
    assert len(spark.sql(f"SELECT * FROM {other}").collect()) == 3
    assert code == 0, result
    notes = result["maintenance"]["notes"]
    assert any("orphan removal would delete" in n and "nothing was deleted" in n for n in notes), notes
    assert not os.path.exists(stray), "t_cow's own orphan was not removed"


def _data_folder(lake, ns, table):
    t = lake.tables.load(ns, table)
    return comparable_location(str(t.location())) + "/data"


def test_a_truncate_mirror_pointed_into_olakes_folder_writes_nothing_there_and_olakes_orphan_removal_spares_it(
        make_lake, destinations):
    """A truncate mirror is the only complete copy. Someone points its data path into OLake's data
    folder, where an orphan removal of OLake's table would delete its files: the next run is refused
    (exit 1, nothing written or truncated), and the trigger says so. Someone then compacts the mirror
    with that path set (a rewrite keeps the mirror the job's): its files are now in OLake's folder,
    and the source's orphan removal (a truncate job maintains the source) is skipped with a note.
    Unsetting the path resumes, and the mirror holds every row."""
    lake = make_lake(destinations["jdbc"], "jdbc", "truncate")
    make(lake)
    assert lake.run() == 0
    source = str(lake.tables.load(lake.ns, "t").location())
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} SET TBLPROPERTIES "
                          f"('write.data.path'='{source}/data/kept-by-the-mirror')")
    lake.writer.commit("t", rows(20, 30))
    before = lake.mirror("t").metadata_location
    code, result = lake.run_summary()
    assert code == 1 and "in OLake's table's" in result["error"], result
    assert "nothing was written or truncated" in result["error"], result
    assert lake.mirror("t").metadata_location == before and _source_rows(lake) == 10  # the change set not truncated
    assert trigger_check(lake).blocked
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.rewrite_data_files(table => '{lake.cow_ns}.t_cow', "
                          "options => map('rewrite-all', 'true'))")
    listed = lake.writer.spark.sql(f"SELECT file_path FROM {lake.mirror_q('t')}.files").collect()
    mirror_files = [str(r[0]) for r in listed]
    assert mirror_files and all("kept-by-the-mirror" in p for p in mirror_files), mirror_files
    _aged(source)
    code, result = lake.run_summary("--maintenance-only", "--remove-orphans-older-than", "24")
    assert code == 0, result
    gone = [p for p in mirror_files if not os.path.exists(comparable_location(p))]
    assert gone == [], "the mirror's files were deleted"
    notes = result["maintenance"]["notes"]
    assert any("orphan" in n and "nothing was deleted" in n for n in notes), notes
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} UNSET TBLPROPERTIES ('write.data.path')")
    assert lake.run() == 0
    lake.assert_mirror_matches("t", engines=ONE_READER)


def test_tables_someone_turned_gc_off_on_lose_no_file_to_the_job(make_lake, destinations):
    """gc.enabled=false on the mirror and on OLake's table (someone shares their files with another
    table): expiry of either, orphan removal and the purging drop of a mirror to be made anew delete
    nothing, as Iceberg refuses them; merges go on, the run exits 0 with a note, the trigger sees none
    of it due. Turned back on, the same run expires, removes the orphan and makes the mirror anew."""
    lake = make_lake(destinations["jdbc"], "jdbc", "readonly")
    make(lake)
    assert lake.run() == 0
    for q in (lake.mirror_q("t"), lake.writer.q("t")):
        lake.writer.spark.sql(f"ALTER TABLE {q} SET TBLPROPERTIES ('gc.enabled'='false')")
    orphan = os.path.join(_data_folder(lake, lake.cow_ns, "t_cow"), "someone-elses.parquet")
    with open(orphan, "wb") as f:
        f.write(b"PAR1 not the mirror's")
    os.utime(orphan, (1_000_000_000, 1_000_000_000))
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"},
                             {"_olake_id": "2", "_op_type": "d"}])
    places = [comparable_location(str(lake.tables.load(ns, t).location())) for ns, t in ((lake.ns, "t"),
                                                                                        (lake.cow_ns, "t_cow"))]
    kept = [p for place in places for p in _files_under(place)]
    maintain = ("--expire-mirror-older-than", "0", "--expire-source-older-than", "0",
                "--remove-orphans-older-than", "24")
    code, result = lake.run_summary(*maintain)  # OLake's table unchanged: lake.run checks its metadata
    assert code == 0 and result["status"] == "merged", result
    notes = result["maintenance"]["notes"]
    # both expiries and the mirror's orphan removal
    assert sum("gc.enabled=false" in n and "nothing was deleted" in n for n in notes) >= 3, notes
    assert result["maintenance"]["snapshots_expired"] == 0 and not result["maintenance"]["orphan_files"], result
    assert [p for p in kept if not os.path.exists(p)] == [], "a file of a table with gc.enabled=false was deleted"
    lake.assert_mirror_matches("t", engines=ONE_READER)
    opts = MaintenanceOptions(expire_source_hours=0, expire_mirror_hours=0, remove_orphans_hours=24)
    due = Freshness(LocalTables(lake), "_cow", None, TableAsk()).check(lake.ns, ["t"], opts, int(time.time() * 1000))
    assert due["t"].due == (), due["t"]
    # turned back on (the advice): maintained again
    for q in (lake.mirror_q("t"), lake.writer.q("t")):
        lake.writer.spark.sql(f"ALTER TABLE {q} SET TBLPROPERTIES ('gc.enabled'='true')")
    code, result = lake.run_summary(*maintain[:2], *maintain[4:])  # OLake's expired: its metadata changes
    assert code == 0 and result["maintenance"]["snapshots_expired"] > 0, result
    assert not os.path.exists(orphan) and result["maintenance"]["orphan_files"], result
    lake.assert_mirror_matches("t", engines=ONE_READER)
    # a mirror to be made anew (someone drops a column) is not dropped while gc is off: a purge deletes every file
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} SET TBLPROPERTIES ('gc.enabled'='false')")
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} DROP COLUMN s")
    before = lake.mirror("t").metadata_location
    code, result = lake.run_summary()
    assert code == 1 and "gc.enabled=false" in result["error"] and "nothing was deleted" in result["error"], result
    assert lake.mirror("t").metadata_location == before
    assert trigger_check(lake).blocked  # metadata shows it: no run that could only fail
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} SET TBLPROPERTIES ('gc.enabled'='true')")
    code, result = lake.run_summary()
    assert code == 0 and result["repaired"] == 1, result
    lake.assert_mirror_matches("t", engines=ONE_READER)


@pytest.mark.parametrize("variant", ["readonly", "truncate", "readonly-of-a-truncated-source"])
def test_a_mode_property_someone_edited_is_set_back_where_olakes_table_tells_and_refused_where_it_cannot(
        make_lake, destinations, variant):
    """The mirror's olake-cow.source-mode edited to the other mode, its checkpoint left as the job set
    it, run with no --source-mode. OLake's table tells the mode when it was never truncated (a readonly
    mirror) or names this mirror as the one its truncates go into (a truncate mirror): the run takes the
    checkpoint's mode, notes it, sets the property back and merges (a readonly run leaves OLake's table
    as it was), and the mirror equals the resolved source; the trigger agrees. Where it cannot tell (a
    readonly mirror of a table another job truncates: a truncate marker could be forged), neither
    guess is safe (a truncate run of a readonly mirror truncates OLake's table; a readonly rebuild of a
    truncate mirror loses the rows only it holds): refused (exit 2) naming the property to set back,
    OLake's table and the mirror unchanged, the trigger starts no run; set back, the run merges.
    Before: refused in all three."""
    mode = "truncate" if variant == "truncate" else "readonly"
    lake = make_lake(destinations["hadoop"], "hadoop", mode)
    if variant == "readonly-of-a-truncated-source":
        mirrored_then_truncated_by_another_job(lake)
    else:
        make(lake)
        assert lake.run() == 0
    other = "truncate" if mode == "readonly" else "readonly"
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} SET TBLPROPERTIES ('olake-cow.source-mode'='{other}')")
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"},
                             {"_olake_id": "2", "_op_type": "d"}])
    source_before = lake.source("t").metadata_location
    if variant != "readonly-of-a-truncated-source":
        assert trigger_sees_work(lake)
        code, result = _run_without_mode(lake)
        assert code == 0 and result["status"] == "merged" and result["source_mode"] == mode, result
        assert any(f"was set to '{other}' by someone else" in n for n in result["notes"]), result["notes"]
        assert lake.mirror("t").properties["olake-cow.source-mode"] == mode
        if mode == "readonly":
            assert lake.source("t").metadata_location == source_before  # never truncated
        lake.assert_mirror_matches("t", engines=ONE_READER)
        assert not trigger_sees_work(lake)
        return
    before = (source_before, lake.mirror("t").current_id)
    assert lake.run_raw() == 2  # no --source-mode: the mirror's own mode is all there is to go by
    assert (lake.source("t").metadata_location, lake.mirror("t").current_id) == before
    check = trigger_check(lake)
    assert check.blocked and "checkpoint is a readonly-mode one" in str(check.refused), check
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} SET TBLPROPERTIES ('olake-cow.source-mode'='{mode}')")
    assert lake.run_raw() == 0
    lake.assert_mirror_matches("t", engines=ONE_READER)


def _run_without_mode(lake):
    """(exit code, summary entry of t) of a run with no --source-mode: the mirror's own mode decides."""
    path = f"{lake.dest_path}.summary-nomode.json"
    code = lake.run_raw("--summary-out", path, repair_ok=True)
    with open(path, encoding="utf-8") as f:
        return code, next(t for t in json.load(f)["tables"] if t["table"] == "t")


def _stage_as_the_job(lake, wap_id, sql):
    """Someone runs `sql` on the mirror under the job's WAP id `wap_id` (Spark's write-audit-publish
    stages it); returns the staged snapshot's id."""
    spark = lake.writer.spark
    spark.conf.set("spark.wap.id", wap_id)
    try:
        spark.sql(sql)
    finally:
        spark.conf.unset("spark.wap.id")
    mirror = lake.mirror("t")
    [staged] = [s.snapshot_id for s in mirror.snapshots
                if s.summary.get("wap.id") == wap_id and s.parent_id == mirror.current_id]
    return staged


def test_a_commit_someone_published_under_the_jobs_wap_id_is_not_taken_for_the_jobs(lake):
    """Someone stages a DELETE on the mirror under the WAP id of the job's last publish and
    cherry-picks it: the current snapshot carries the job's marker, and the job's data checkpoint
    matches it. It is not the snapshot the job published (recorded in its publish commit), so the
    trigger sees it, a readonly mirror is rebuilt from OLake's table, and a truncate mirror (the only
    complete copy) is refused with advice naming the job's snapshot, not the forged one; following it
    loses nothing."""
    make(lake)
    assert lake.run() == 0
    marker = lake.mirror("t").properties["olake-cow.data-checkpoint"]
    forged = _stage_as_the_job(lake, marker, f"DELETE FROM {lake.mirror_q('t')} WHERE _olake_id = '3'")
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.cherrypick_snapshot('{lake.cow_ns}.t_cow', {forged})")
    assert lake.mirror("t").current_id == forged
    check = trigger_check(lake)
    assert (check.blocked if lake.mode == "truncate" else check.merge is not None), check
    lake.writer.commit("t", [{"_olake_id": "4", "_op_type": "u", "v": 44}])
    code, result = lake.run_summary()
    if lake.mode == "readonly":
        assert code == 0 and result["repaired"] == 1, result
        assert any("is not snapshot" in n and "committed by someone else" in n for n in result["notes"]), result
    else:
        assert code == 1 and "committed by someone else" in result["error"] and keeps_data(result["error"]), result
        snapshot = int(re.search(r"rollback_to_snapshot\('<mirror>', (\d+)\)", result["error"]).group(1))
        assert snapshot != forged
        lake.writer.spark.sql(f"CALL {lake.catalog}.system.rollback_to_snapshot('{lake.cow_ns}.t_cow', {snapshot})")
        assert lake.run() == 0
    lake.assert_mirror_matches("t", engines=ONE_READER)


@pytest.mark.parametrize("rewrite", [None, "rewrite_data_files", "rewrite_manifests"],
                         ids=["deleted", "deleted-then-compacted", "deleted-then-manifests-rewritten"])
def test_a_users_delete_on_the_mirror_is_seen_after_an_expiry_took_every_snapshot_the_job_made(lake, rewrite):
    """Someone deletes a row from the mirror (and rewrites its files or manifests), then expires its
    snapshots down to the current one (a lake-wide expiry with retain_last 1): no snapshot the job
    made is left to compare with. A commit that is not a rewrite and carries no marker is still
    someone's (the job marks every data commit); a rewrite keeps the rows the job's publish recorded
    (olake-cow.data-rows; on a dv mirror, deletion vectors left live included). So the trigger sees
    it, a readonly mirror is rebuilt from OLake's table, and a truncate mirror (the only complete
    copy) is refused with nothing written or truncated (before: trusted, the row silently missing and
    OLake's next change merged on top)."""
    make(lake)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"}])  # a dv mirror's vector
    assert lake.run() == 0
    lake.writer.spark.sql(f"DELETE FROM {lake.mirror_q('t')} WHERE _olake_id = '3'")
    if rewrite == "rewrite_data_files":
        lake.writer.spark.sql(f"CALL {lake.catalog}.system.rewrite_data_files(table => '{lake.cow_ns}.t_cow', "
                              "options => map('rewrite-all', 'true'))")
    elif rewrite:
        lake.writer.spark.sql(f"CALL {lake.catalog}.system.rewrite_manifests('{lake.cow_ns}.t_cow')")
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.expire_snapshots(table => '{lake.cow_ns}.t_cow', "
                          f"older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)")
    chain, complete = ancestors(lake.mirror("t"))
    assert not complete and len(chain) == 1 and (chain[0].operation == "replace") == bool(rewrite), chain
    check = trigger_check(lake)
    assert (check.blocked if lake.mode == "truncate" else check.merge is not None), check
    lake.writer.commit("t", [{"_olake_id": "4", "_op_type": "u", "v": 44}])
    if lake.mode == "readonly":
        code, result = lake.run_summary()
        assert code == 0 and result["repaired"] == 1, result
        lake.assert_mirror_matches("t", engines=ONE_READER)
        assert not trigger_sees_work(lake)
        return
    before, source_before = kept(lake, lake.mirror_q("t")), lake.source("t").current_id
    code, result = lake.run_summary()
    assert code == 1 and "committed by someone else" in result["error"] and keeps_data(result["error"]), result
    assert kept(lake, lake.mirror_q("t")) == before and lake.source("t").current_id == source_before


def test_a_merge_someone_staged_under_the_jobs_wap_id_is_never_published_by_the_job(rlake_engines):
    """Someone stages, under the WAP id the job's next merge will use, a DELETE of a row OLake's change
    does not touch, which a cow mirror's audit passes (the change set upserts two keys, a tombstone
    kept, and deletes a third).
    The job publishes only a staged merge it recorded as its own: it merges the change itself, and
    the mirror equals the resolved source."""
    lake = rlake_engines
    make(lake)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"},
                             {"_olake_id": "2", "_op_type": "d"}], pure_deletes=["5"])
    source = lake.source("t")
    current = source.snapshot(source.current_id)
    wap_id = f"olake-cow:{source.uuid}:{current.snapshot_id}:{current.sequence_number}"
    forged = _stage_as_the_job(lake, wap_id, f"DELETE FROM {lake.mirror_q('t')} WHERE _olake_id = '3'")
    code, result = lake.run_summary()
    assert code == 0 and result["status"] == "merged", result
    assert forged not in {s.snapshot_id for s in ancestors(lake.mirror("t"))[0]}
    lake.assert_mirror_matches("t", engines=ONE_READER)


def test_a_change_set_that_changes_no_mirror_row_is_a_commit_of_the_jobs_like_any_merge(lake):
    """A change set of deletes of keys the mirror never held changes no row: it is committed as a
    snapshot of no file that carries the checkpoint and the publish's properties (so the checkpoint
    property moves ahead of the data only past rewrites, the rule a forged one is judged by), and
    the next run is idle."""
    make(lake)
    assert lake.run() == 0
    lake.writer.commit("t", [], pure_deletes=["999"])
    code, result = lake.run_summary()
    assert code == 0 and result["status"] == "merged", result
    mirror = lake.mirror("t")
    current = mirror.snapshot(mirror.current_id)
    assert current.summary.get("wap.id") == mirror.properties["olake-cow.checkpoint"], current.summary
    assert current.summary_int("added-data-files") == 0 and current.summary_int("deleted-data-files") == 0
    assert mirror.properties["olake-cow.data-snapshot"] == str(current.snapshot_id)
    code, result = lake.run_summary()
    assert code == 0 and result["status"] == "up_to_date", result
    assert not trigger_sees_work(lake)
    lake.assert_mirror_matches("t", engines=ONE_READER)


def test_a_checkpoint_someone_moved_past_olakes_changes_is_not_believed(rlake_engines):
    """Someone sets the mirror's olake-cow.checkpoint to OLake's newest snapshot, past a change the
    mirror does not hold. The job moves that property alone only past rewrites, so over a change it
    is not the job's: the trigger sees the work, the run merges from the data the mirror holds, and
    the mirror equals the resolved source (before: up to date, the change silently missing)."""
    lake = rlake_engines
    make(lake)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"},
                             {"_olake_id": "2", "_op_type": "d"}])
    source = lake.source("t")
    newest = source.snapshot(source.current_id)
    forged = f"olake-cow:{source.uuid}:{newest.snapshot_id}:{newest.sequence_number}"
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} SET TBLPROPERTIES ('olake-cow.checkpoint'='{forged}')")
    assert trigger_sees_work(lake)
    code, result = lake.run_summary()
    assert code == 0 and result["status"] == "merged", result
    lake.assert_mirror_matches("t", engines=ONE_READER)
    # a rewrite of OLake's files (no change) after it: the property alone moves past it, believed
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.rewrite_data_files(table => '{lake.ns}.t', "
                          "options => map('rewrite-all', 'true'))")
    code, result = lake.run_summary()
    assert code == 0 and result["status"] in ("merged", "up_to_date") and not result["merges"], result
    assert not trigger_sees_work(lake)


def _two_merges_and_a_record_set(lake, record):
    """Two merges, then someone sets olake-cow.<record> (data-snapshot to the publish before,
    data-checkpoint to its marker, data-rows to a number); returns the value set."""
    make(lake, n=30)
    for key in ("3", "4"):
        lake.writer.commit("t", [{"_olake_id": key, "_op_type": "u", "v": 300, "s": "x"}],
                           pure_deletes=[str(int(key) + 10)])
        assert lake.run() == 0
    mirror = lake.mirror("t")
    before = mirror.snapshot(mirror.snapshot(mirror.current_id).parent_id)
    forged = {"data-snapshot": str(before.snapshot_id), "data-checkpoint": before.summary.get("wap.id"),
              "data-rows": "5"}[record]
    assert forged
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} SET TBLPROPERTIES ('olake-cow.{record}'='{forged}')")
    return forged


@pytest.mark.parametrize("record", ["data-snapshot", "data-checkpoint", "data-rows"])
def test_one_record_of_the_jobs_publish_someone_set_neither_stops_a_truncate_mirror_nor_costs_a_row(tlake, record):
    """Someone sets one of olake-cow.data-snapshot (to the publish before), data-checkpoint (to its
    marker) or data-rows. Every publish sets the three from one snapshot, still in the mirror's
    metadata, which the current history and the checkpoint property agree with: the run reads the
    record as the job set it, says so in a note, merges (exit 0, nothing repaired), and the mirror
    equals the resolved source; the trigger sees only OLake's commit. Before: refused, exit 1, as
    "committed by someone else" or "rolled back", with advice that named no property."""
    lake = tlake
    forged = _two_merges_and_a_record_set(lake, record)
    assert not trigger_sees_work(lake)
    lake.writer.commit("t", [{"_olake_id": "5", "_op_type": "u", "v": 500, "s": "y"}], pure_deletes=["20"])
    assert trigger_sees_work(lake)
    code, result = lake.run_summary()
    assert code == 0 and result["status"] == "merged" and not result.get("repaired"), result
    assert any(f"olake-cow.{record} was set to" in n for n in result["notes"]), result["notes"]
    lake.assert_mirror_matches("t", engines=ONE_READER)
    assert lake.mirror("t").properties[f"olake-cow.{record}"] != forged  # the publish set it again


@pytest.mark.parametrize("record", ["data-snapshot", "data-checkpoint", "data-rows"])
@pytest.mark.parametrize("variant", ["truncate", "readonly-python"])
def test_a_record_someone_set_is_set_back_by_the_next_run_before_an_expiry_can_hide_it(make_lake, destinations,
                                                                                      variant, record):
    """Someone sets one record of the job's last publish, then a run with nothing to merge, then the
    job's maintenance expires every snapshot but the current one (the one the record named with it):
    the run with nothing to merge already set the record back (noted; a dry run does not), so the
    expiry hides nothing, and OLake's next commit merges right. Before: the record stayed as set, the
    expiry took the snapshot that told it from the job's, and the next run refused a truncate mirror,
    exit 1, "committed by someone else", advising a rollback to a snapshot it had just expired."""
    mode, engine, kind = ("truncate", "spark", "hadoop") if variant == "truncate" else ("readonly", "python", "jdbc")
    lake = make_lake(destinations[kind], kind, mode)
    lake.engine = engine
    forged = _two_merges_and_a_record_set(lake, record)
    assert lake.run("--dry-run") == 0
    assert lake.mirror("t").properties[f"olake-cow.{record}"] == forged  # a dry run writes nothing
    code, result = lake.run_summary()
    assert code == 0 and result["engine"] == engine and not result["merges"], result
    assert any(f"olake-cow.{record} was set to" in n for n in result["notes"]), result["notes"]
    assert lake.mirror("t").properties[f"olake-cow.{record}"] != forged
    assert lake.run("--maintenance-only", "--expire-mirror-older-than", "0", "--engine", "spark") == 0
    assert len(lake.mirror("t").snapshots) == 1
    lake.writer.commit("t", [{"_olake_id": "5", "_op_type": "u", "v": 500, "s": "y"}], pure_deletes=["20"])
    code, result = lake.run_summary()
    assert code == 0 and result["status"] == "merged" and not result.get("repaired"), result
    lake.assert_mirror_matches("t", engines=ONE_READER)


@pytest.mark.parametrize("change", ["update", "absent-delete"])
@pytest.mark.parametrize("when", ["before-the-write", "during-the-write"])
def test_a_commit_someone_lands_while_a_spark_step_runs_is_seen_not_published_over(rlake, monkeypatch, when, change):
    """Someone deletes a mirror row after the run planned its merge: before the write reads the
    mirror, or while it writes. A step publishes only onto the snapshot it was planned on (checked
    before the write, on the staged snapshot's parent, and by the publish's compare-and-swap), so the
    run plans again, sees the commit and rebuilds the readonly mirror: exit 0, repaired 1, the mirror
    equals the resolved source (before: the delete's rows were taken as the job's parent, the merge
    published onto it, exit 0 with the row silently missing; a merge that changed no row blessed it
    as the job's). `absent-delete`: OLake deletes a key the mirror never held (a commit of no file)."""
    from olake_cow.spark import merge, mirror_table

    lake = rlake
    make(lake)
    assert lake.run() == 0
    rows = ([{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"}] if change == "update" else [])
    lake.writer.commit("t", rows, pure_deletes=[] if rows else ["999"])
    done = []

    def someone_deletes():
        if not done:
            done.append(True)
            lake.writer.spark.sql(f"DELETE FROM {lake.mirror_q('t')} WHERE _olake_id = '3'")

    before = when == "before-the-write"
    target, name = (mirror_table.MirrorTable, "prepare") if before else (merge.MirrorWriter, "stage")
    real = getattr(target, name)

    def racing(self, *args, **kwargs):
        if before:
            made = real(self, *args, **kwargs)
            someone_deletes()
            return made
        someone_deletes()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(target, name, racing)
    code, result = lake.run_summary("--engine", "spark")
    assert done and code == 0 and result["repaired"] == 1, result
    lake.assert_mirror_matches("t", engines=ONE_READER)
    assert lake.run("--engine", "spark") == 0 and not trigger_sees_work(lake)


def test_a_second_run_that_publishes_while_one_has_staged_never_puts_a_row_in_twice(rlake, monkeypatch):
    """Two runs of one source at once (a user's beside the schedule's). Run B stages the mirror's first
    build at OLake's snapshot S1; before B publishes, OLake commits S2 and run A publishes B's staged
    build (recorded as the job's) and merges S2. B's publish is a compare-and-swap onto the snapshot
    its write was staged on, never Iceberg's cherry-pick (which applies a staged append onto any
    newer snapshot: a build staged beside another run's would have gone in twice), so B publishes
    nothing, plans again and finds the mirror past its target: exit 0 (before: exit 1, "Duplicate
    request to cherry pick"). The mirror equals the resolved source, and the next run is idle."""
    from olake_cow.spark import merge

    lake = rlake
    make(lake)
    real, raced = merge.MirrorWriter.publish, []

    def racing(self, *args, **kwargs):
        if not raced:
            raced.append(True)
            lake.writer.commit("t", [{"_olake_id": "100", "_op_type": "c", "v": 1, "s": "a"},
                                     {"_olake_id": "1", "_op_type": "u", "v": 10, "s": "b"}])
            assert lake.run("--engine", "spark") == 0  # run A, start to end
        return real(self, *args, **kwargs)

    monkeypatch.setattr(merge.MirrorWriter, "publish", racing)
    fmt = ["--mirror-format", lake.fmt] if lake.fmt != "cow" else []
    assert lake.run_raw("--source-mode", "readonly", *fmt, "--engine", "spark") == 0  # run B
    monkeypatch.undo()
    assert raced
    lake.assert_mirror_matches("t", engines=ONE_READER)
    code, result = lake.run_summary()
    assert code == 0 and result["status"] == "up_to_date", result


@pytest.mark.parametrize("change", ["rewrite", "insert"])
def test_a_python_run_whose_commit_another_run_beat_plans_again_and_loses_nothing(make_lake, destinations,
                                                                                  monkeypatch, change):
    """The python engine's merge commit is a compare-and-swap: another run (Spark's) commits first, from
    OLake's newer snapshot, so the python run's commit fails, and it plans again and finds the mirror
    past its target: exit 0, the mirror equal to the resolved source, the next run idle. pyiceberg
    retried the commit on the newer snapshot (before): an update's overwrite then failed its
    validation (exit 1), and an insert of a key no mirror file can hold, an append validating
    nothing, was put in twice (exit 0, 22 rows for 21)."""
    from olake_cow.python_engine import table_run

    lake = make_lake(destinations["jdbc"], "jdbc", "readonly")
    make(lake)
    assert lake.run("--engine", "python") == 0
    key = "1" if change == "rewrite" else "zz"  # "zz": past every key a mirror file holds
    lake.writer.commit("t", [{"_olake_id": key, "_op_type": "u" if change == "rewrite" else "c", "v": 100, "s": "x"}])
    real, raced = table_run.merge_cow, []

    def racing(*args, **kwargs):
        if not raced:
            raced.append(True)
            lake.writer.commit("t", [{"_olake_id": "2", "_op_type": "u", "v": 200, "s": "y"}])
            assert lake.run("--engine", "spark") == 0  # the other run, start to end
        return real(*args, **kwargs)

    monkeypatch.setattr(table_run, "merge_cow", racing)
    path = f"{lake.dest_path}.race.json"
    assert lake.run_raw("--source-mode", "readonly", "--engine", "python", "--summary-out", path) == 0
    monkeypatch.undo()
    with open(path, encoding="utf-8") as f:
        entry = json.load(f)["tables"][0]
    assert raced and entry["engine"] == "python", entry
    lake.assert_mirror_matches("t", engines=ONE_READER)
    code, result = lake.run_summary("--engine", "python")
    assert code == 0 and result["status"] == "up_to_date", result


def test_a_rollback_onto_the_rewrite_before_the_jobs_last_publish_is_seen_after_its_maintenance(lake):
    """Another tool compacts the mirror and the job's maintenance expires every older snapshot; OLake's next change
    keeps the row count (an update, an insert, a delete) and is published onto the rewrite. Someone
    rolls the mirror back onto the rewrite: no marker is left in its history and the rows count the
    same, but the publish, still in the metadata, is newer than the current snapshot. A truncate
    mirror is refused with the set_current_snapshot that brings the publish back; a readonly one is
    rebuilt. Before: taken as the job's state, and the next merge published onto the rewrite without
    the publish's changes, exit 0 (found by the random user test, salt r)."""
    make(lake, n=30)
    for key in ("3", "4"):
        lake.writer.commit("t", [{"_olake_id": key, "_op_type": "u", "v": 300, "s": "x"}])
        assert lake.run() == 0
    # another tool's compaction of every file (the job's own compacts only small ones), then expiry
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.rewrite_data_files(table => '{lake.cow_ns}.t_cow', "
                          "options => map('rewrite-all', 'true'))")
    assert lake.run("--maintenance-only", "--expire-mirror-older-than", "0", "--engine", "spark") == 0
    mirror = lake.mirror("t")
    assert len(mirror.snapshots) == 1 and mirror.snapshot(mirror.current_id).operation == "replace"
    rewrite = mirror.current_id
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "y"},
                             {"_olake_id": "100", "_op_type": "c", "v": 100}], pure_deletes=["2"])
    assert lake.run() == 0
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.rollback_to_snapshot('{lake.cow_ns}.t_cow', {rewrite})")
    lake.writer.commit("t", [{"_olake_id": "5", "_op_type": "u", "v": 500}])
    code, result = lake.run_summary()
    if lake.mode == "truncate":
        assert code == 1 and "rolled back past it" in result["error"], result
        call = re.search(r"set_current_snapshot\('<mirror>', (\d+)\)", result["error"])
        lake.writer.spark.sql(f"CALL {lake.catalog}.system.set_current_snapshot('{lake.cow_ns}.t_cow', "
                              f"{call.group(1)})")
        code, result = lake.run_summary()
    assert code == 0 and result["status"] == "merged", result
    lake.assert_mirror_matches("t", engines=ONE_READER)
