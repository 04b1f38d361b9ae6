"""The truncate-mode planner (boundaries) on literal snapshot lists: no JVM."""
import pytest

from olake_cow.core.changesource import for_mode
from olake_cow.core.checkpoint import (
    CHECKPOINT_PROPERTY,
    DATA_CHECKPOINT_PROPERTY,
    DATA_SNAPSHOT_PROPERTY,
    STAGED_PROPERTY,
    TRUNCATED_INTO_PROPERTY,
    Marker,
)
from olake_cow.core.modes import SourceMode
from olake_cow.core.planner import TableAsk, describe_table, plan_table
from olake_cow.core.planner import plan_next as _plan_next
from olake_cow.core.snapshots import BOUNDARY_KEY, FIRST_BOUNDARY_KEY, MISSING, Snapshot, TableState
from olake_cow.core.steps import LEFT_FOR_NEXT_RUN, UP_TO_DATE, Blocked, Done, Keep, Merge, Publish, Truncate

pytestmark = pytest.mark.unit
UUID = "src-uuid"


def plan_next(source, mirror, **kw):
    return _plan_next(source, mirror, SourceMode.TRUNCATE, **kw)


def plan_run(source, mirror):
    return for_mode(SourceMode.TRUNCATE).describe(source, mirror)


def merge(boundary, change, rebuild=False):
    return Merge(Marker(UUID, boundary), change, rebuild)


def snap(sid, parent, *, boundary=False, adds=True, ts=None, **summary):
    s = {"added-data-files": "1" if adds and not boundary else "0"}
    if boundary:
        s[BOUNDARY_KEY] = "run"
    s.update(summary)
    return Snapshot(sid, parent, ts if ts is not None else sid, "delete" if boundary else "append", s)


def source(*snaps, uuid=UUID, current=None):
    return TableState(True, uuid, current if current is not None else (snaps[-1].snapshot_id
                                                                        if snaps else None), snaps)


def mirror(*snaps, current=None, props=None):
    return TableState(True, "mirror-uuid", current if current is not None else (
        snaps[-1].snapshot_id if snaps else None), snaps, props or {})


def published(sid, parent, boundary, uuid=UUID, key="wap.id"):
    return Snapshot(sid, parent, sid, "overwrite", {key: Marker(uuid, boundary).wap_id,
                                                    "total-records": "1"})


def test_new_source_without_mirror_truncates_first():
    assert plan_next(source(snap(1, None), snap(2, 1)), MISSING) == Truncate(first_after=2)


def test_after_truncate_without_mirror_rebuilds_from_the_boundary_parent():
    src = source(snap(1, None), snap(2, 1), snap(3, 2, boundary=True))
    assert plan_next(src, MISSING) == merge(3, 2, True)


def test_idle_source_plans_nothing():
    src = source(snap(1, None), snap(2, 1, boundary=True))
    assert plan_next(src, mirror(published(10, None, 2))) == Done("up to date")


def test_snapshots_that_add_no_files_do_not_open_a_change_set():
    src = source(snap(1, None), snap(2, 1, boundary=True), snap(3, 2, adds=False))
    assert isinstance(plan_next(src, mirror(published(10, None, 2))), Done)


def test_pending_boundaries_are_merged_oldest_first():
    src = source(snap(1, None), snap(2, 1, boundary=True), snap(3, 2), snap(4, 3, boundary=True),
                 snap(5, 4), snap(6, 5, boundary=True))
    assert plan_next(src, mirror(published(10, None, 2))) == merge(4, 3, False)
    assert plan_run(src, mirror(published(10, None, 2))) == [
        "merge change set of boundary 4 (source snapshot 3)",
        "merge change set of boundary 6 (source snapshot 5)"]


def test_a_truncate_retried_on_another_runs_boundary_closes_an_empty_change_set_merged_after_it():
    """Two runs at once: Iceberg retries the second run's truncate on the first's boundary (4), so
    boundary 5 closes a change set of nothing. Boundary 4's changes are merged first, then 5's
    (empty: its parent is a truncate), and only then is the mirror up to date: the checkpoint never
    skips the change set of 3."""
    src = source(snap(1, None), snap(2, 1, boundary=True), snap(3, 2), snap(4, 3, boundary=True),
                 snap(5, 4, boundary=True))
    assert plan_next(src, mirror(published(10, None, 2))) == merge(4, 3, False)
    assert plan_next(src, mirror(published(10, None, 2), published(11, 10, 4))) == merge(5, 4, False)
    assert plan_next(src, mirror(published(10, None, 2), published(11, 10, 4), published(12, 11, 5))) == \
        Done(UP_TO_DATE)
    assert plan_run(src, mirror(published(10, None, 2))) == [
        "merge change set of boundary 4 (source snapshot 3)",
        "merge change set of boundary 5 (source snapshot 4)"]


def test_open_changes_after_merged_boundaries_truncate():
    src = source(snap(1, None), snap(2, 1, boundary=True), snap(3, 2))
    assert plan_next(src, mirror(published(10, None, 2))) == Truncate()


def test_checkpoint_is_found_beyond_ten_snapshots():
    maint = [Snapshot(100 + i, 99 + i if i else 10, 100 + i, "replace", {}) for i in range(30)]
    m = mirror(published(10, None, 2), *maint)
    src = source(snap(1, None), snap(2, 1, boundary=True), snap(3, 2), snap(4, 3, boundary=True))
    assert plan_next(src, m) == merge(4, 3, False)


def test_checkpoint_survives_expiry_through_the_table_property():
    m = mirror(Snapshot(200, 199, 200, "replace", {}),
               props={CHECKPOINT_PROPERTY: Marker(UUID, 4).wap_id})
    src = source(snap(1, None), snap(2, 1, boundary=True), snap(3, 2), snap(4, 3, boundary=True))
    assert plan_next(src, m) == Done("up to date")


def test_cherry_picked_marker_counts_as_published():
    m = mirror(Snapshot(11, None, 11, "append", {"published-wap-id": Marker(UUID, 2).wap_id}))
    src = source(snap(1, None), snap(2, 1, boundary=True))
    assert plan_next(src, m) == Done("up to date")


def test_staged_merge_on_current_mirror_snapshot_is_published():
    staged = Snapshot(11, 10, 11, "overwrite", {"wap.id": Marker(UUID, 4).wap_id})
    m = mirror(published(10, None, 2), staged, current=10, props={STAGED_PROPERTY: "11"})
    src = source(snap(1, None), snap(2, 1, boundary=True), snap(3, 2), snap(4, 3, boundary=True))
    assert plan_next(src, m) == Publish(11, merge(4, 3))
    # one someone staged under the job's WAP id is not the job's: the change set is merged anew
    forged = Snapshot(12, 10, 12, "delete", {"wap.id": Marker(UUID, 4).wap_id})
    assert plan_next(src, mirror(published(10, None, 2), forged, current=10)) == merge(4, 3)


def test_staged_merge_that_cannot_fast_forward_is_redone_not_counted():
    staged = Snapshot(11, 10, 11, "overwrite", {"wap.id": Marker(UUID, 4).wap_id})
    rewrite = Snapshot(12, 10, 12, "replace", {})
    m = mirror(published(10, None, 2), staged, rewrite, current=12)
    src = source(snap(1, None), snap(2, 1, boundary=True), snap(3, 2), snap(4, 3, boundary=True))
    assert plan_next(src, m) == merge(4, 3, False)


def test_recreated_source_rebuilds_the_mirror():
    m = mirror(published(10, None, 2, uuid="old-uuid"))
    src = source(snap(1, None), snap(5, 1, boundary=True), uuid="new-uuid")
    assert plan_next(src, m) == Merge(Marker("new-uuid", 5), 1, True)


def test_checkpoint_missing_from_source_history_blocks():
    m = mirror(published(10, None, 42))
    src = source(snap(50, 49), snap(51, 50, boundary=True))
    assert isinstance(plan_next(src, m), Blocked)


def test_expired_checkpoint_with_intact_history_after_it_continues():
    m = mirror(published(10, None, 4))
    src = source(snap(5, 4), snap(6, 5, boundary=True))
    assert plan_next(src, m) == merge(6, 5, False)


def test_rebuild_is_blocked_when_early_change_sets_were_expired():
    src = source(snap(5, 4), snap(6, 5, boundary=True), snap(7, 6))
    assert isinstance(plan_next(src, MISSING), Blocked)


MARKED = {TRUNCATED_INTO_PROPERTY: "ns_cow.t_cow"}


def marked_source(*snaps, props=MARKED):
    return TableState(True, UUID, snaps[-1].snapshot_id, snaps, props)


def first_boundary(sid, parent, after):
    return snap(sid, parent, boundary=True, **{FIRST_BOUNDARY_KEY: str(after)})


def test_a_first_build_on_a_table_whose_older_snapshots_were_expired_truncates_then_builds():
    """OLake's own expiry leaves a table whose history does not reach its creation: no truncate came
    before (none left, no mark), so the first truncate says it is the first, and the build from it holds
    every row."""
    assert plan_next(source(snap(5, 4), snap(6, 5)), MISSING) == Truncate(first_after=6)
    assert plan_next(marked_source(snap(5, 4), snap(6, 5), first_boundary(7, 6, 6)), MISSING) == merge(7, 6, True)
    # Iceberg retried the truncate onto OLake's later commit: still the first, planned on 6
    assert plan_next(marked_source(snap(5, 4), snap(6, 5), snap(8, 6), first_boundary(7, 8, 6)),
                     MISSING) == merge(7, 8, True)


def test_no_mirror_is_built_from_a_truncated_table_whose_truncates_were_expired():
    """The mirror (the only complete copy) was dropped and OLake's snapshots expired past every
    truncate: OLake's table still carries the job's mark, so nothing is truncated or built."""
    step = plan_next(marked_source(snap(5, 4), snap(6, 5)), MISSING)
    assert isinstance(step, Blocked)
    assert "ns_cow.t_cow" in step.reason and "Nothing was written or truncated" in step.reason
    assert "restore it under its name" in step.reason and TRUNCATED_INTO_PROPERTY in step.reason
    # the same with the mark removed (OLake re-synced the table in full): built from what it holds
    assert plan_next(marked_source(snap(5, 4), snap(6, 5), props={}), MISSING) == Truncate(first_after=6)


def test_a_first_truncate_is_believed_only_while_the_snapshot_it_was_planned_on_is_there():
    gone = marked_source(snap(7, 6, **{BOUNDARY_KEY: "run", FIRST_BOUNDARY_KEY: "5"}), snap(8, 7))
    assert isinstance(plan_next(gone, MISSING), Blocked)
    # another job's boundary before it (the truncate was retried onto it): not the first
    other = marked_source(snap(5, 4), snap(6, 5, boundary=True), first_boundary(7, 6, 5))
    assert isinstance(plan_next(other, MISSING), Blocked)
    unflagged = marked_source(snap(5, 4), snap(6, 5), snap(7, 6, boundary=True))
    assert isinstance(plan_next(unflagged, MISSING), Blocked)


def test_only_a_table_never_truncated_gets_a_first_truncate():
    m = mirror(published(10, None, 2))
    # the mirror's checkpoint was expired with the boundaries: incremental, not a first truncate
    assert plan_next(marked_source(snap(3, 2), snap(4, 3)), m) == Truncate()
    # a whole history with a boundary: not the first
    assert plan_next(source(snap(1, None), snap(2, 1, boundary=True), snap(3, 2)), m) == Truncate()
    # rolled back before the only truncate (still in the metadata, not in the history): the first again
    rolled = TableState(True, UUID, 2, (snap(1, None), snap(2, 1), snap(3, 2, boundary=True)), MARKED)
    assert plan_next(rolled, MISSING) == Truncate(first_after=2)


def test_expired_change_set_blocks():
    m = mirror(published(10, None, 2))
    src = TableState(True, UUID, 4, (snap(1, None), snap(2, 1, boundary=True),
                                     snap(4, 3, boundary=True)))
    step = plan_next(src, m)
    assert isinstance(step, Blocked)


def test_staged_snapshots_of_rolled_back_branches_are_ignored_in_source_lineage():
    # 9 is a non-ancestor (e.g. a writer's staged append) and must not count as a change
    src = TableState(True, UUID, 2, (snap(1, None), snap(2, 1, boundary=True), snap(9, 2)))
    assert isinstance(plan_next(src, mirror(published(10, None, 2))), Done)


def test_empty_source_has_nothing_to_do():
    assert plan_next(source(), MISSING) == Done("the source table has no snapshots yet")


def test_missing_source_is_blocked():
    assert isinstance(plan_next(MISSING, MISSING), Blocked)


def test_key_field_id_comes_from_the_current_schema_in_the_metadata():
    from olake_cow.core.snapshots import state_from_metadata

    meta = {"table-uuid": "u", "current-schema-id": 1, "schemas": [
        {"schema-id": 0, "fields": [{"id": 7, "name": "x"}]},
        {"schema-id": 1, "fields": [{"id": 3, "name": "_olake_id"}, {"id": 7, "name": "x"}]}]}
    assert state_from_metadata(meta).key_field_id == 3
    assert state_from_metadata({"schemas": [], "current-schema-id": 0}).key_field_id is None


def test_a_run_closes_at_most_one_change_set():
    """A source that never stops committing cannot keep a run busy."""
    src = source(snap(1, None), snap(2, 1, boundary=True), snap(3, 2))
    assert plan_next(src, mirror(published(10, None, 2)), may_close=True) == Truncate()
    assert plan_next(src, mirror(published(10, None, 2)), may_close=False) == Done(LEFT_FOR_NEXT_RUN)


def test_a_rewrite_that_dropped_delete_files_makes_the_change_set_read_them_from_history():
    from olake_cow.core.truncate import dropped_delete_window

    rewrite = Snapshot(5, 4, 5, "replace", {"added-data-files": "1", "removed-delete-files": "2"})
    src = source(snap(1, None), snap(2, 1, boundary=True), snap(3, 2), snap(4, 3), rewrite, snap(6, 5),
                 snap(7, 6, boundary=True))
    assert dropped_delete_window(src, 6) == (6, 5, 4, 3)  # back to, not including, boundary 2
    assert dropped_delete_window(src, 4) == ()  # nothing dropped before the rewrite
    plain = source(snap(1, None), snap(2, 1, boundary=True), snap(3, 2), snap(4, 3))
    assert dropped_delete_window(plain, 4) == ()


KEEP_SOURCE = (snap(1, None), snap(2, 1, boundary=True))


def _changed_mirror(*after, current=None):
    """A mirror the job published boundary 2's change set into (snapshot 100), and what came after."""
    marker = Marker(UUID, 2).wap_id
    props = {CHECKPOINT_PROPERTY: marker, DATA_CHECKPOINT_PROPERTY: marker, DATA_SNAPSHOT_PROPERTY: "100"}
    return mirror(published(100, None, 2), *after, current=current, props=props)


def test_a_users_commit_on_the_jobs_last_publish_is_kept_only_when_asked():
    """--keep-mirror-changes (a GDPR delete on the only complete copy): commits made on the job's
    last publish become the mirror's content through a commit of the job's; without it they are
    refused, and the refusal names the option."""
    src = source(*KEEP_SOURCE)
    changed = _changed_mirror(Snapshot(101, 100, 101, "delete", {}))
    refused = plan_table(src, changed, SourceMode.TRUNCATE, TableAsk())
    assert isinstance(refused, Blocked) and "run once with --keep-mirror-changes" in refused.reason
    kept = plan_table(src, changed, SourceMode.TRUNCATE, TableAsk(keep=True))
    assert isinstance(kept, Keep) and kept.target == Marker(UUID, 2) and "committed by someone else" in kept.reason
    assert describe_table(src, changed, SourceMode.TRUNCATE, TableAsk(keep=True))[0].startswith("keep someone's change")
    assert plan_table(src, _changed_mirror(), SourceMode.TRUNCATE, TableAsk(keep=True)) == Done(UP_TO_DATE)


def test_a_rollback_or_a_history_expired_past_the_publish_is_never_kept():
    """What a change was made on must be the job's last publish, seen in the history: a rollback
    (rows of merged change sets missing) or commits whose parent was expired stay refused, and the
    refusal does not offer to keep them."""
    src = source(*KEEP_SOURCE, snap(3, 2), snap(4, 3, boundary=True))
    marker = Marker(UUID, 4).wap_id
    rolled_back = mirror(published(100, None, 2), published(102, 100, 4), current=100,
                         props={CHECKPOINT_PROPERTY: marker, DATA_CHECKPOINT_PROPERTY: marker,
                                DATA_SNAPSHOT_PROPERTY: "102"})
    expired = mirror(Snapshot(101, 100, 101, "delete", {}), props={
        CHECKPOINT_PROPERTY: Marker(UUID, 2).wap_id, DATA_CHECKPOINT_PROPERTY: Marker(UUID, 2).wap_id,
        DATA_SNAPSHOT_PROPERTY: "100"})
    for state, source_state in ((rolled_back, src), (expired, source(*KEEP_SOURCE))):
        step = plan_table(source_state, state, SourceMode.TRUNCATE, TableAsk(keep=True))
        assert isinstance(step, Blocked) and "--keep-mirror-changes" not in step.reason, step
