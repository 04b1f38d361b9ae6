"""The readonly planner, its intervals, the checkpoint and the source-mode rules, on literal
snapshot lists: no JVM."""
import pytest

from olake_cow.core import readonly
from olake_cow.core.checkpoint import (
    CHECKPOINT_PROPERTY,
    DATA_CHECKPOINT_PROPERTY,
    MODE_PROPERTY,
    STAGED_PROPERTY,
    Marker,
    find_checkpoint,
)
from olake_cow.core.errors import ResyncNeededError, SourceModeError
from olake_cow.core.maintenance import source_cutoff
from olake_cow.core.modes import SourceMode, built_mode, resolve_mode
from olake_cow.core.planner import has_work, plan_next
from olake_cow.core.readonly import Interval, intervals
from olake_cow.core.snapshots import BOUNDARY_KEY, MISSING, Snapshot, TableState
from olake_cow.core.steps import Advance, Blocked, Done, Merge, Publish

pytestmark = pytest.mark.unit
UUID = "src-uuid"


def snap(sid, parent, op="overwrite", *, added=1, deleted=0, delete_files=0, **summary):
    """Snapshot `sid` with sequence number `sid` (sequence numbers grow along the history)."""
    s = {"added-data-files": str(added), "deleted-data-files": str(deleted), "added-delete-files": str(delete_files)}
    s.update(summary)
    return Snapshot(sid, parent, sid * 1000, op, s, sequence_number=sid)


def chain(*ids, ops=None):
    ops = ops or {}
    out, parent = [], None
    for sid in ids:
        out.append(snap(sid, parent, ops.get(sid, "overwrite")))
        parent = sid
    return out


def source(*snaps, uuid=UUID, current=None, version=2):
    return TableState(True, uuid, current if current is not None else snaps[-1].snapshot_id, tuple(snaps),
                      format_version=version)


def mirror(held=None, *extra, uuid=UUID, props=None, current=None):
    snaps = list(extra)
    if held is not None:
        snaps.insert(0, Snapshot(900, None, 900, "overwrite", {"wap.id": Marker(uuid, held, held).wap_id}))
    cur = current if current is not None else (snaps[-1].snapshot_id if snaps else None)
    return TableState(True, "mirror-uuid", cur, tuple(snaps), {MODE_PROPERTY: "readonly", **(props or {})})


def plan(src, mir, target=None):
    return plan_next(src, mir, SourceMode.READONLY, target)


def m(sid):
    return Marker(UUID, sid, sid)


# --- steps -------------------------------------------------------------------------------------
def test_a_new_mirror_is_built_from_the_current_snapshot():
    step = plan(source(*chain(1, 2, 3)), MISSING)
    assert step == Merge(m(3), 3, True, None, "first build")


def test_a_mirror_holding_the_current_snapshot_is_up_to_date():
    assert plan(source(*chain(1, 2, 3)), mirror(3)) == Done("up to date")


def test_new_commits_are_merged_from_the_checkpoint_to_the_target():
    assert plan(source(*chain(1, 2, 3, 4)), mirror(2)) == Merge(m(4), 4, False, m(2))


def test_the_run_stops_at_the_target_it_fixed_when_it_started():
    src = source(*chain(1, 2, 3, 4, 5))  # 5 was committed while the run worked
    assert plan(src, mirror(2), target=4) == Merge(m(4), 4, False, m(2))
    assert plan(src, mirror(4), target=4) == Done("up to date")


def test_only_rewrites_since_the_checkpoint_move_it_without_a_merge():
    src = source(*chain(1, 2, 3, 4, ops={3: "replace", 4: "replace"}))
    step = plan(src, mirror(2))
    assert step == Advance(m(4))
    assert not has_work(step)  # the trigger starts no run for it


def test_commits_that_change_no_file_are_not_work():
    empty = Snapshot(3, 2, 3000, "append", {"added-data-files": "0"}, sequence_number=3)
    assert plan(source(*chain(1, 2), empty), mirror(2)) == Done("up to date")


def test_an_expired_checkpoint_with_the_history_after_it_is_merged_incrementally():
    src = source(*chain(1, 2, 3, 4)[2:])  # 1 and 2 expired; 3's parent is 2
    assert plan(src, mirror(2)) == Merge(m(4), 4, False, m(2))


def test_a_rolled_back_source_rebuilds_the_mirror():
    snaps = chain(1, 2, 3) + [snap(4, 2)]  # rolled back to 2, then committed 4
    step = plan(source(*snaps), mirror(3))
    assert isinstance(step, Merge) and step.rebuild and "rolled back" in step.reason


def test_history_expired_between_checkpoint_and_target_rebuilds_the_mirror():
    src = source(*chain(1, 2, 3, 4, 5)[3:])  # 5's ancestry stops at 4, whose parent 3 is gone
    step = plan(src, mirror(2))
    assert isinstance(step, Merge) and step.rebuild and "expired" in step.reason


def test_a_recreated_source_rebuilds_the_mirror():
    step = plan(source(*chain(1, 2), uuid="new"), mirror(2))
    assert step == Merge(Marker("new", 2, 2), 2, True, None, "the source table was recreated")


def test_a_merge_staged_by_a_crashed_run_is_published():
    staged = Snapshot(901, 900, 901, "overwrite", {"wap.id": m(3).wap_id})
    step = plan(source(*chain(1, 2, 3, 4)), mirror(2, staged, current=900, props={STAGED_PROPERTY: "901"}))
    assert step == Publish(901, Merge(m(3), 3, False, m(2)))


def test_a_snapshot_someone_staged_under_the_jobs_wap_id_is_never_published_by_it():
    """Only the staged snapshot the job recorded is the job's: anyone can stage one with its WAP id."""
    forged = Snapshot(902, 900, 902, "delete", {"wap.id": m(3).wap_id})
    src = source(*chain(1, 2, 3, 4))
    assert plan(src, mirror(2, forged, current=900)) == Merge(m(4), 4, False, m(2))
    job = Snapshot(901, 900, 901, "overwrite", {"wap.id": m(3).wap_id})
    assert plan(src, mirror(2, job, forged, current=900, props={STAGED_PROPERTY: "901"})) == \
        Publish(901, Merge(m(3), 3, False, m(2)))


def test_a_staged_merge_that_is_no_longer_on_the_current_snapshot_is_redone():
    staged = Snapshot(901, 900, 901, "overwrite", {"wap.id": m(3).wap_id})
    moved = Snapshot(902, 900, 902, "replace", {})
    step = plan(source(*chain(1, 2, 3)), mirror(2, staged, moved, current=902))
    assert step == Merge(m(3), 3, False, m(2))


def test_a_format_version_1_source_is_refused():
    assert isinstance(plan(source(*chain(1), version=1), MISSING), Blocked)


def test_the_checkpoint_property_moved_past_the_published_marker_wins():
    mir = mirror(2, props={CHECKPOINT_PROPERTY: m(5).wap_id})
    assert find_checkpoint(mir) == m(5)
    older = mirror(4, props={CHECKPOINT_PROPERTY: m(2).wap_id})
    assert find_checkpoint(older) == m(4)


def test_a_checkpoint_property_ahead_of_the_data_over_a_change_is_not_the_jobs():
    """The job moves the property alone only past snapshots that change nothing the mirror holds
    (rewrites, another job's truncates); every merge, even one that changes no row, is a data commit."""
    ahead = mirror(2, props={CHECKPOINT_PROPERTY: m(4).wap_id})
    changed = source(*chain(1, 2, 3, 4))
    assert find_checkpoint(ahead, changed) == m(2)
    assert plan(changed, ahead) == Merge(m(4), 4, False, m(2))
    rewrites = source(*chain(1, 2, 3, 4, ops={3: "replace", 4: "replace"}))
    assert find_checkpoint(ahead, rewrites) == m(4) and plan(rewrites, ahead) == Done("up to date")
    boundary = Snapshot(3, 2, 3000, "delete", {BOUNDARY_KEY: "run", "deleted-data-files": "1"}, sequence_number=3)
    assert find_checkpoint(ahead, source(*chain(1, 2), boundary, snap(4, 3, "replace"))) == m(4)
    # the mirror's publishes expired: the data checkpoint stands in for them
    expired = TableState(True, "mirror-uuid", 950, (Snapshot(950, 900, 950, "replace", {}),),
                         {CHECKPOINT_PROPERTY: m(4).wap_id, DATA_CHECKPOINT_PROPERTY: m(2).wap_id})
    assert find_checkpoint(expired, changed) == m(2) and find_checkpoint(expired, rewrites) == m(4)


# --- intervals ---------------------------------------------------------------------------------
def test_without_rewrites_one_interval_spans_the_change():
    src = source(*chain(1, 2, 3, 4))
    assert intervals(src, m(2), 4, {}) == [Interval(2, 2, 4)]


def test_a_rewrite_that_started_after_the_checkpoint_cuts_the_history_where_it_started():
    # 3: OLake commit; 4: OLake commit (during the rewrite); 5: rewrite that started at 3; 6: OLake
    src = source(*chain(1, 2, 3, 4, 5, 6, ops={5: "replace"}))
    assert intervals(src, m(2), 6, {5: 3}) == [Interval(2, 2, 3), Interval(3, 3, 6)]


def test_a_rewrite_older_than_the_checkpoint_needs_no_cut():
    src = source(*chain(1, 2, 3, 4, ops={3: "replace"}))
    assert intervals(src, m(2), 4, {3: 1}) == [Interval(2, 2, 4)]


def test_a_rewrite_without_a_starting_sequence_number_is_as_of_its_parent():
    src = source(*chain(1, 2, 3, 4, 5, ops={4: "replace"}))
    assert intervals(src, m(2), 5, {4: 4}) == [Interval(2, 2, 3), Interval(4, 4, 5)]


def test_intervals_without_a_content_change_are_dropped():
    src = source(*chain(1, 2, 3, 4, ops={4: "replace"}))  # the rewrite started at 2
    assert intervals(src, m(1), 4, {4: 2}) == [Interval(1, 1, 2), Interval(2, 2, 4)]
    only_rewrite = source(*chain(1, 2, 3, ops={3: "replace"}))
    assert intervals(only_rewrite, m(2), 3, {3: 2}) == []


def test_commits_that_remove_older_files_are_named_per_interval():
    snaps = chain(1, 2) + [snap(3, 2, "overwrite", deleted=2), snap(4, 3, "delete", added=0, deleted=1)]
    src = source(*snaps)
    assert intervals(src, m(2), 4, {}) == [Interval(2, 2, 4, (3, 4))]


def test_an_expired_checkpoint_snapshot_cannot_be_planned():
    src = source(*chain(1, 2, 3, 4)[2:])
    assert intervals(src, m(2), 4, {}) == [Interval(None, 2, 4)]


def test_a_rewrite_from_an_unknown_starting_point_needs_a_resync():
    src = source(*chain(1, 2, 3, 4, ops={4: "replace"}))
    with pytest.raises(ResyncNeededError):
        intervals(src, m(2), 4, {4: 99})


# --- source mode ----------------------------------------------------------------------------------
def test_new_mirrors_are_readonly_unless_asked_otherwise():
    src = source(*chain(1, 2))
    assert resolve_mode(src, MISSING, None, "ns_cow.t_cow") == SourceMode.READONLY
    assert resolve_mode(src, MISSING, SourceMode.TRUNCATE, "ns_cow.t_cow") == SourceMode.TRUNCATE


def test_an_existing_mirror_keeps_its_mode_and_refuses_the_other():
    src = source(*chain(1, 2))
    assert resolve_mode(src, mirror(2), None, "ns_cow.t_cow") == SourceMode.READONLY
    with pytest.raises(SourceModeError, match=r"built in readonly mode.*drop the mirror"):
        resolve_mode(src, mirror(2), SourceMode.TRUNCATE, "ns_cow.t_cow")


def test_a_readonly_mirror_of_a_table_another_job_truncates_is_never_advised_to_be_dropped():
    """Dropping it to switch to truncate would lose the rows it keeps that OLake's table no longer
    holds, and the truncate build after would be refused anyway: the advice says to keep it, whether
    the other job's truncate is in OLake's history, recorded on the mirror, or only marked on
    OLake's table (its snapshots expired)."""
    from dataclasses import replace

    from olake_cow.core.checkpoint import OTHER_TRUNCATE_PROPERTY, TRUNCATED_INTO_PROPERTY

    truncated = source(*chain(1, 2), snap(3, 2, "delete", **{BOUNDARY_KEY: "run"}), snap(4, 3))
    marked = replace(source(*chain(4, 5)), properties={TRUNCATED_INTO_PROPERTY: "ns_other.t_cow"})
    for src, mir, where in ((truncated, mirror(4), "source snapshot 3"),
                            (source(*chain(4, 5)), mirror(4, props={OTHER_TRUNCATE_PROPERTY: f"{UUID}/3"}),
                             "source snapshot 3"),
                            (marked, mirror(4), "into its mirror ns_other.t_cow")):
        with pytest.raises(SourceModeError) as refused:
            resolve_mode(src, mir, SourceMode.TRUNCATE, "ns_cow.t_cow")
        advice = str(refused.value)
        assert "cannot switch to truncate" in advice and where in advice, advice
        assert "drop" not in advice.replace("do not drop", ""), advice


def test_mirrors_from_before_the_mode_property_are_truncate_mode():
    legacy = TableState(True, "m", 900, (Snapshot(900, None, 900, "overwrite", {"wap.id": Marker(UUID, 7).wap_id}),))
    assert built_mode(source(*chain(1, 2)), legacy) == SourceMode.TRUNCATE
    with pytest.raises(SourceModeError, match="re-sync the table"):
        resolve_mode(source(*chain(1, 2)), legacy, SourceMode.READONLY, "ns_cow.t_cow")


def test_a_truncated_source_without_a_mirror_yet_stays_in_truncate_mode():
    boundary = Snapshot(3, 2, 3000, "delete", {BOUNDARY_KEY: "run"}, sequence_number=3)
    src = source(*chain(1, 2), boundary)
    assert resolve_mode(src, MISSING, None, "ns_cow.t_cow") == SourceMode.TRUNCATE


def test_readonly_source_expiry_keeps_the_snapshot_the_mirror_holds():
    src = source(*chain(1, 2, 3))
    floor = readonly.expiry_floor(src, mirror(2))
    assert floor is not None and floor.snapshot_id == 2
    cutoff, note = source_cutoff(10_000_000, 0.0, floor)
    assert cutoff == 2000 and "kept" in (note or "")
    assert source_cutoff(10_000_000, 1.0, None)[0] is None


def test_a_staged_merge_that_failed_its_audit_is_not_published_again():
    from olake_cow.core.checkpoint import REJECTED_PROPERTY, with_rejected

    staged = Snapshot(901, 900, 901, "overwrite", {"wap.id": m(3).wap_id})
    mir = mirror(2, staged, current=900, props={STAGED_PROPERTY: "901"})
    assert isinstance(plan(source(*chain(1, 2, 3)), mir), Publish)
    props = {STAGED_PROPERTY: "901", REJECTED_PROPERTY: with_rejected(mir, 901)}
    rejected = mirror(2, staged, current=900, props=props)
    assert plan(source(*chain(1, 2, 3)), rejected) == Merge(m(3), 3, False, m(2))


def test_a_readonly_mirror_is_never_rebuilt_from_a_source_another_job_truncated():
    """A rebuild reads what OLake's table holds now; another job's truncate moved rows out of it."""
    boundary = Snapshot(3, 2, 3000, "delete", {BOUNDARY_KEY: "run"}, sequence_number=3)
    src = source(*chain(1, 2), boundary, snap(4, 3))
    asked = readonly.plan(src, mirror(3), rebuild_reason="the mirror was built with --delete-mode keep")
    assert isinstance(asked, Blocked) and "another olake-cow job truncates" in asked.reason
    assert "source snapshot 3" in asked.reason and "Do not drop the mirror" in asked.reason
    rolled_back = source(*chain(1, 2), boundary, snap(4, 3), snap(5, 3))  # the source rolled back past 4
    assert isinstance(plan(rolled_back, mirror(4)), Blocked)
    assert plan(src, mirror(3)) == Merge(m(4), 4, False, m(3))  # an incremental merge is not a rebuild
    no_truncate = source(*chain(1, 2, 3, 4))
    assert readonly.plan(no_truncate, mirror(3), rebuild_reason="asked").rebuild  # rebuilt as before


def test_a_truncate_the_mirror_went_past_is_recorded_so_a_rebuild_stays_refused_after_the_sources_expiry():
    """Snapshot expiry (a truncate-mode stack expires its source) removes another job's truncate from
    the history a rebuild is judged by; the mirror records the newest one it went past, with its
    checkpoint, and the record keeps refusing the rebuild that would lose what it moved out."""
    from olake_cow.core.checkpoint import OTHER_TRUNCATE_PROPERTY

    boundary = snap(3, 2, "delete", added=0, deleted=1, **{BOUNDARY_KEY: "run"})  # its files moved out
    record = ((OTHER_TRUNCATE_PROPERTY, f"{UUID}/3"),)
    alone = plan(source(*chain(1, 2), boundary), mirror(2))  # the truncate alone since the checkpoint
    assert alone == Advance(m(3), record) and has_work(alone)  # the trigger starts the run that records it
    assert not has_work(Advance(m(3)))  # a rewrite alone: not worth a run
    assert plan(source(*chain(1, 2), boundary, snap(4, 3)), mirror(2)) == Merge(m(4), 4, False, m(2), "", record)
    assert plan(source(*chain(1, 2, 3)), mirror(2)).properties == ()  # no truncate, nothing recorded
    # a first build takes what the source holds now: nothing it went past
    assert readonly.plan(source(*chain(1, 2), boundary, snap(4, 3)), MISSING).properties == ()

    expired = source(snap(4, 3), snap(5, 4))  # 1-3 expired: the truncate is out of the history
    recorded = mirror(4, props=dict(record))
    asked = readonly.plan(expired, recorded, rebuild_reason="the mirror was built with --delete-mode keep")
    assert isinstance(asked, Blocked) and "source snapshot 3" in asked.reason, asked
    assert plan(expired, recorded) == Merge(m(5), 5, False, m(4))  # incremental merges go on
    assert readonly.plan(expired, mirror(4), rebuild_reason="asked").rebuild  # unrecorded: as before
    recreated = source(snap(4, 3), snap(5, 4), uuid="another-uuid")  # a record names its source
    assert readonly.plan(recreated, mirror(4, uuid="another-uuid", props=dict(record)), rebuild_reason="asked").rebuild


def test_the_mark_a_truncate_job_leaves_on_olakes_table_refuses_any_other_mirror_built_from_it():
    """A truncate-mode job names its mirror on OLake's table with each truncate. The mark outlives
    snapshot expiry: no other mirror is first built, or a readonly one rebuilt, from the emptied table;
    the job's own mirror, and mirrors already built, go on."""
    from dataclasses import replace

    from olake_cow.core.checkpoint import TRUNCATED_INTO_PROPERTY

    marked = replace(source(*chain(4, 5)), properties={TRUNCATED_INTO_PROPERTY: "ns_cow.t_cow"})  # 1-3 expired
    assert resolve_mode(marked, MISSING, None, "ns_cow.t_cow") == SourceMode.TRUNCATE  # its own, before its build
    for asked in (None, SourceMode.READONLY, SourceMode.TRUNCATE):
        with pytest.raises(SourceModeError, match=r"into its mirror ns_cow\.t_cow: .* other_cow\.t_cow built from it"):
            resolve_mode(marked, MISSING, asked, "other_cow.t_cow")
    built = mirror(5)
    assert resolve_mode(marked, built, None, "other_cow.t_cow") == SourceMode.READONLY  # built before: goes on
    assert plan(replace(marked, snapshots=marked.snapshots + (snap(6, 5),), current_id=6), built) == \
        Merge(m(6), 6, False, m(5))
    refused = readonly.plan(marked, mirror(2), rebuild_reason=None)  # its snapshot 2 expired: a rebuild
    assert isinstance(refused, Blocked) and "into its mirror ns_cow.t_cow" in refused.reason, refused
    assert readonly.plan(source(*chain(4, 5)), mirror(2)).rebuild  # unmarked: rebuilt as before


def test_a_run_whose_target_another_run_merged_past_is_done_and_a_rolled_back_source_is_not():
    """A run plans to the source's snapshot when it started; another run may publish further first."""
    src = source(*chain(1, 2, 3, 4))
    assert plan(src, mirror(4), target=3) == Done(
        "the mirror already holds source snapshot 4, past this run's target 3: another run merged it")
    rolled_back = source(*chain(1, 2, 3, 4), current=3)  # 4 is no longer in the source's history
    step = plan(rolled_back, mirror(4))
    assert isinstance(step, Merge) and step.rebuild and "rolled back" in step.reason
