"""The trigger's pure decisions (olake_trigger.decide) and the maintenance-due rules the job and the
trigger share (olake_cow.maintenance.maintenance_due), on literal records."""
import dataclasses

import pytest

from olake_cow.core.checkpoint import Marker
from olake_cow.core.maintenance import (
    COMPACTED_PROPERTY,
    EXPIRY_SKIPPED_PROPERTY,
    FOLDED_PROPERTY,
    MANIFEST_REWRITE_EVERY,
    MANIFESTS_PROPERTY,
    MaintenanceOptions,
    maintenance_due,
    mirror_expiry_problem,
)
from olake_cow.core.snapshots import Snapshot, TableState, state_from_metadata
from olake_trigger.decide import (
    ALL_TABLES,
    AllTables,
    PendingTables,
    Skip,
    Start,
    TableCheck,
    Tables,
    covered,
    decide,
    lease_until,
    pending_entry,
)

pytestmark = pytest.mark.unit
HOUR = 3600 * 1000


# --- which tables a run covers --------------------------------------------------------------------
def test_a_run_covers_what_was_asked_plus_what_commits_left_pending():
    assert covered(Tables(("b",)), ("a",)) == Tables(("a", "b"))
    assert covered(PendingTables(), ("c", "a")) == Tables(("a", "c"))
    assert covered(AllTables(), ("a",)) == AllTables()
    assert covered(Tables(("b",)), (ALL_TABLES,)) == AllTables()


def test_only_pending_tables_with_nothing_pending_is_a_skip():
    assert isinstance(covered(PendingTables(), ()), Skip)


def test_a_request_queued_behind_a_run_leaves_its_tables_pending():
    assert pending_entry(AllTables()) == (ALL_TABLES,)
    assert pending_entry(Tables(("a",))) == ("a",)
    assert pending_entry(PendingTables()) == ()  # its tables are pending already


# --- start or skip ----------------------------------------------------------------------------------
def test_only_tables_with_work_are_run():
    checks = {"a": TableCheck(merge="merge"), "b": TableCheck(), "c": TableCheck(due=("compact_files",))}
    step = decide(AllTables(), checks, force=False, maintenance=True)
    assert isinstance(step, Start) and step.tables == Tables(("a", "c")) and step.maintenance
    assert step.why == {"a": "merge (merge)", "c": "maintenance due: compact_files"}


def test_nothing_new_and_nothing_due_is_a_skip():
    checks = {"a": TableCheck(), "b": TableCheck()}
    assert decide(AllTables(), checks, force=False, maintenance=True) == Skip(
        "no source commit the mirror has not absorbed and no maintenance due")


def test_maintenance_goes_with_a_run_only_when_some_is_due():
    step = decide(Tables(("a",)), {"a": TableCheck(merge="merge")}, force=False, maintenance=True)
    assert isinstance(step, Start) and not step.maintenance


@pytest.mark.parametrize("force, checks", [(True, {"a": TableCheck()}), (False, None)])
def test_force_or_an_unreadable_catalog_starts_the_run_as_asked(force, checks):
    assert decide(AllTables(), checks, force=force, maintenance=True) == Start(AllTables(), True)


def test_the_lease_outlives_the_longest_run():
    assert lease_until(1000, job_timeout_min=180, margin_min=30) == 1000 + 210 * 60


# --- is maintenance due? ----------------------------------------------------------------------------
def snap(sid, ts_h, parent=None, **summary):
    values = {k.replace("_", "-"): str(v) for k, v in summary.items()}
    return Snapshot(sid, parent, int(ts_h * HOUR), "overwrite", values, sid)


def table(*snaps, props=None):
    """A table whose every commit is the job's publish (a mirror as the job left it)."""
    ours = tuple(dataclasses.replace(s, summary={**s.summary, "wap.id": Marker("src", s.snapshot_id, 1).wap_id})
                 for s in snaps)
    return TableState(True, "u", snaps[-1].snapshot_id, ours, props or {})


NOW = 1000 * HOUR


def test_expiry_is_due_only_when_a_snapshot_is_older_than_the_retention():
    source = table(snap(1, 100), snap(2, 990, 1), snap(3, 999, 2))
    mirror = table(snap(10, 995, total_data_files=1, total_files_size=200 * 2**20))
    opts = MaintenanceOptions(expire_source_hours=24, expire_mirror_hours=24)
    assert maintenance_due(opts, source, mirror, floor=source.snapshot(3), now_ms=NOW, dv=False) == ["expire_source"]
    # the snapshot the mirror holds is the floor: nothing older than it may go, so nothing is due
    assert maintenance_due(opts, source, mirror, floor=source.snapshot(1), now_ms=NOW, dv=False) == []
    old_mirror = table(snap(9, 10), snap(10, 995, 9, total_data_files=1, total_files_size=200 * 2**20))
    assert "expire_mirror" in maintenance_due(opts, source, old_mirror, None, NOW, dv=False)


def test_a_mirror_expiry_the_job_skipped_is_not_due_again_until_the_mirror_moves_on():
    """The job skips a mirror's expiry while its history references files outside its location
    (spark/maintenance.py), and records the snapshot it skipped at: no run for it at every schedule."""
    source = table(snap(1, 999))
    opts = MaintenanceOptions(expire_mirror_hours=24)
    snaps = (snap(9, 10), snap(10, 995, 9, total_data_files=1, total_files_size=200 * 2**20))
    assert maintenance_due(opts, source, table(*snaps, props={EXPIRY_SKIPPED_PROPERTY: "10"}), None, NOW,
                           dv=False) == []
    for skipped_at in ("9", None):  # the mirror moved on since, or never skipped
        props = {EXPIRY_SKIPPED_PROPERTY: skipped_at} if skipped_at else {}
        assert maintenance_due(opts, source, table(*snaps, props=props), None, NOW, dv=False) == ["expire_mirror"]


def placed(state, location, **props):
    return dataclasses.replace(state, location=location, properties={**state.properties, **props})


@pytest.mark.parametrize("writes_source", [False, True])
def test_what_deletes_files_is_not_due_on_ground_the_job_would_not_touch(writes_source):
    """The job skips an expiry or orphan removal whose table's metadata shows ground not its own
    (core/identity.py ground_problem): the trigger starts no run for it. Orphan removal of OLake's
    table is the job's only when it writes the source (truncate mode)."""
    opts = MaintenanceOptions(expire_source_hours=24, expire_mirror_hours=24, remove_orphans_hours=48)
    source = placed(table(snap(1, 100), snap(2, 999, 1)), "s3://lake/sales/orders")
    mirror = placed(table(snap(9, 10), snap(10, 995, 9, total_data_files=1, total_files_size=200 * 2**20)),
                    "s3://lake/sales_cow/orders_cow")
    everything = ["expire_source", "remove_orphans", "expire_mirror"]

    def due(state):
        return maintenance_due(opts, source, state, source.snapshot(2), NOW, dv=False, writes_source=writes_source)

    assert due(mirror) == everything
    # someone pointed the mirror's data path (or its location) into OLake's table: nothing of the pair's
    into_olake = [placed(mirror, mirror.location, **{"write.data.path": "s3a://lake/sales/orders/data"}),
                  placed(mirror, "s3://lake/sales/orders")]
    for moved in into_olake:
        assert due(moved) == []
    # the mirror writes outside its location: its own expiry and orphan removal are skipped, OLake's expiry is not
    astray = placed(mirror, mirror.location, **{"write.object-storage.path": "s3://elsewhere/data"})
    left = ["expire_source", "remove_orphans"] if writes_source else ["expire_source"]
    assert due(astray) == left
    # someone turned off deleting the mirror's files (gc.enabled=false, in any case): as Iceberg, the job
    # deletes none of them; OLake's table keeps its own
    assert due(placed(mirror, mirror.location, **{"gc.enabled": "False"})) == left
    assert due(placed(mirror, mirror.location, **{"gc.enabled": "TRUE"})) == everything
    gc_off_source = placed(source, source.location, **{"gc.enabled": "false"})
    assert maintenance_due(opts, gc_off_source, mirror, source.snapshot(2), NOW, dv=False,
                           writes_source=writes_source) == ["remove_orphans", "expire_mirror"]
    # a sibling whose name starts alike is apart, and no mirror yet leaves OLake's table its own
    sibling = placed(mirror, "s3://lake/sales/orders_cow")
    assert due(sibling) == everything
    alone = ["expire_source", "remove_orphans"] if writes_source else ["expire_source"]
    assert due(TableState(False)) == alone


def test_expiry_is_not_due_for_old_snapshots_a_branch_or_tag_keeps():
    # Iceberg's expiry never removes a snapshot a tag or another branch's head points at: a user's
    # tag on an old snapshot would otherwise keep expiry due, and start a run, at every schedule.
    def meta(refs):
        def job(sid):
            return {"operation": "append", "wap.id": Marker("src", sid, 1).wap_id}

        return {"format-version": 2, "current-snapshot-id": 3, "refs": refs, "snapshots": [
            {"snapshot-id": 1, "timestamp-ms": 100 * HOUR, "summary": job(1)},
            {"snapshot-id": 2, "parent-snapshot-id": 1, "timestamp-ms": 200 * HOUR, "summary": job(2)},
            {"snapshot-id": 3, "parent-snapshot-id": 2, "timestamp-ms": 999 * HOUR,
             "summary": {**job(3), "total-data-files": "1", "total-files-size": str(2**30)}}]}

    opts = MaintenanceOptions(expire_mirror_hours=24)
    source = table(snap(1, 999))
    main = {"main": {"snapshot-id": 3, "type": "branch"}}
    kept = {**main, "before-migration": {"snapshot-id": 1, "type": "tag"},
            "audit": {"snapshot-id": 2, "type": "branch"}}
    assert maintenance_due(opts, source, state_from_metadata(meta(main)), None, NOW, dv=False) == ["expire_mirror"]
    assert maintenance_due(opts, source, state_from_metadata(meta(kept)), None, NOW, dv=False) == []
    assert state_from_metadata(meta(kept)).referenced == {1, 2, 3}


def test_a_mirror_someone_changed_is_not_due_for_expiry():
    """Its older snapshots keep the job's last commit, which the refusal's advice restores (a truncate
    mirror is the only complete copy): the job skips that expiry, so the trigger sees none due."""
    source = table(snap(1, 999))
    opts = MaintenanceOptions(expire_mirror_hours=24)
    snaps = (snap(9, 10), snap(10, 995, 9, total_data_files=1, total_files_size=200 * 2**20))
    assert maintenance_due(opts, source, table(*snaps), None, NOW, dv=False) == ["expire_mirror"]
    users = Snapshot(11, 10, 996 * HOUR, "delete", {"total-data-files": "1", "total-files-size": str(2**27)}, 11)
    changed = table(*snaps)
    changed = dataclasses.replace(changed, current_id=11, snapshots=changed.snapshots + (users,))
    assert maintenance_due(opts, source, changed, None, NOW, dv=False) == []
    assert "were not expired" in str(mirror_expiry_problem(source, changed))


def test_compaction_is_due_for_small_files_and_folding_for_deletion_vectors():
    source = table(snap(1, 999))
    small = table(snap(10, 999, total_data_files=40, total_files_size=40 * 2**20, total_records=1000))
    big = table(snap(10, 999, total_data_files=2, total_files_size=250 * 2**20, total_records=1000))
    opts = MaintenanceOptions(compact_files=True, fold_deletes=True, fold_ratio=0.2)
    assert maintenance_due(opts, source, small, None, NOW, dv=False) == ["compact_files"]
    assert maintenance_due(opts, source, big, None, NOW, dv=True) == []
    # A fresh 1M-row mirror (9 key ranges of 6 MB) is not due; the same bytes in 40 files are.
    fresh = table(snap(10, 999, total_data_files=9, total_files_size=55 * 2**20, total_records=1000))
    scattered = table(snap(10, 999, total_data_files=40, total_files_size=55 * 2**20, total_records=1000))
    assert maintenance_due(opts, source, fresh, None, NOW, dv=False) == []
    assert maintenance_due(opts, source, scattered, None, NOW, dv=False) == ["compact_files"]
    dvs = table(snap(10, 999, total_data_files=2, total_files_size=250 * 2**20, total_records=1000,
                     total_position_deletes=60))  # 6% of the rows: over a quarter of the 20% fold ratio
    assert maintenance_due(opts, source, dvs, None, NOW, dv=True) == ["compact_files", "fold_deletes"]


def test_compaction_that_left_small_files_is_due_again_only_once_files_were_added():
    # 100 day partitions of one 1 MB file each: small on average, yet compaction joins files only
    # within a partition, so it can do nothing until more files come (25% more, or 2 when never run).
    source = table(snap(1, 999))
    opts = MaintenanceOptions(compact_files=True)

    def mirror(files, left=None):
        props = {COMPACTED_PROPERTY: str(left)} if left is not None else {}
        return table(snap(10, 999, total_data_files=files, total_files_size=files * 2**20, total_records=1000),
                     props=props)

    assert maintenance_due(opts, source, mirror(100), None, NOW, dv=False) == ["compact_files"]  # never ran
    assert maintenance_due(opts, source, mirror(100, left=100), None, NOW, dv=False) == []
    assert maintenance_due(opts, source, mirror(124, left=100), None, NOW, dv=False) == []
    assert maintenance_due(opts, source, mirror(125, left=100), None, NOW, dv=False) == ["compact_files"]
    assert maintenance_due(opts, source, mirror(3, left=1), None, NOW, dv=False) == ["compact_files"]
    assert maintenance_due(opts, source, mirror(2, left=1), None, NOW, dv=False) == []
    # A value the job did not write counts as never recorded.
    assert maintenance_due(opts, source, mirror(100, left="many"), None, NOW, dv=False) == ["compact_files"]
    # Deletion vectors to fold make it due whatever the file count.
    dvs = table(snap(10, 999, total_data_files=100, total_files_size=100 * 2**20, total_records=1000,
                     total_position_deletes=60), props={COMPACTED_PROPERTY: "100"})
    assert maintenance_due(opts, source, dvs, None, NOW, dv=True) == ["compact_files"]


def test_a_fold_that_left_thin_deletes_is_due_again_only_once_more_rows_were_deleted():
    # Deletion vectors deleting 6% of every file: over the 5% that makes folding due (a quarter of
    # the 20% fold ratio), under the 20% a file needs to be folded, so a fold rewrites nothing.
    source = table(snap(1, 999))
    opts = MaintenanceOptions(fold_deletes=True, fold_ratio=0.2)

    def mirror(deleted, left=None):
        props = {FOLDED_PROPERTY: str(left)} if left is not None else {}
        return table(snap(10, 999, total_data_files=9, total_files_size=55 * 2**20, total_records=1000,
                          total_position_deletes=deleted), props=props)

    assert maintenance_due(opts, source, mirror(60), None, NOW, dv=True) == ["fold_deletes"]  # never ran
    assert maintenance_due(opts, source, mirror(60, left=60), None, NOW, dv=True) == []
    assert maintenance_due(opts, source, mirror(109, left=60), None, NOW, dv=True) == []
    assert maintenance_due(opts, source, mirror(110, left=60), None, NOW, dv=True) == ["fold_deletes"]
    # Fewer deletes than recorded: files were rewritten since, and what is left is the base.
    assert maintenance_due(opts, source, mirror(40, left=60), None, NOW, dv=True) == []
    assert maintenance_due(opts, source, mirror(0, left=60), None, NOW, dv=True) == []


def test_manifest_rewrite_is_due_after_many_commits_since_the_last():
    source = table(snap(1, 999))
    chain, parent = [], None
    for i in range(MANIFEST_REWRITE_EVERY + 1):
        extra = {"manifests_replaced": 3} if i == 0 else {}
        chain.append(snap(100 + i, 900 + i / 100, parent, total_data_files=1, total_files_size=2**30, **extra))
        parent = 100 + i
    opts = MaintenanceOptions(rewrite_manifests=True)
    assert maintenance_due(opts, source, table(*chain), None, NOW, dv=False) == ["rewrite_manifests"]
    assert maintenance_due(opts, source, table(*chain[:10]), None, NOW, dv=False) == []
    # A rewrite of a single manifest commits nothing: the snapshot it left current was recorded.
    at = {MANIFESTS_PROPERTY: str(chain[-1].snapshot_id)}
    assert maintenance_due(opts, source, table(*chain, props=at), None, NOW, dv=False) == []
    longer = chain + [snap(100 + len(chain) + i, 999 + i / 100, 100 + len(chain) + i - 1, total_data_files=1,
                           total_files_size=2**30) for i in range(MANIFEST_REWRITE_EVERY)]
    assert maintenance_due(opts, source, table(*longer[:-1], props=at), None, NOW, dv=False) == []
    assert maintenance_due(opts, source, table(*longer, props=at), None, NOW, dv=False) == ["rewrite_manifests"]
