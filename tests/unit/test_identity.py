"""Whose table is at a mirror's name, and whether its current snapshot is what the job left, on
literal metadata records (core/identity.py)."""
import dataclasses

import pytest

from olake_cow.core.checkpoint import (
    CHECKPOINT_PROPERTY,
    DATA_CHECKPOINT_PROPERTY,
    DATA_ROWS_PROPERTY,
    DATA_SNAPSHOT_PROPERTY,
    FORMAT_PROPERTY,
    REJECTED_PROPERTY,
    SOURCE_PROPERTY,
    Marker,
    published_properties,
)
from olake_cow.core.errors import MirrorFormatError
from olake_cow.core.formats import WRITE_MODE_KEYS, MirrorFormat, built_format
from olake_cow.core.identity import (
    MADE_BY,
    MADE_BY_PROPERTY,
    Ground,
    Owner,
    delete_mode_change,
    edited_records,
    foreign_change,
    foreign_files_problem,
    foreign_metadata,
    gc_disabled,
    ground_problem,
    is_table_metadata,
    location_problem,
    mirror_ground_problem,
    ownership,
    restore_advice,
    source_problem,
)
from olake_cow.core.mirror_props import kept_properties
from olake_cow.core.modes import SourceMode, resolve_format, upgrade_waits
from olake_cow.core.planner import TableAsk, plan_table
from olake_cow.core.snapshots import MISSING, Snapshot, TableState
from olake_cow.core.steps import Blocked

pytestmark = pytest.mark.unit
M1, M2 = Marker("u", 10, 1).wap_id, Marker("u", 20, 2).wap_id


def snap(sid, parent, op="overwrite", wap=None):
    return Snapshot(sid, parent, sid, op, {"operation": op, **({"wap.id": wap} if wap else {})})


def mirror(*snaps, current=None, **props):
    return TableState(True, "m", current if current is not None else snaps[-1].snapshot_id, tuple(snaps),
                      {MADE_BY_PROPERTY: MADE_BY, "olake-cow.source-table": "sales.t", **props})


def test_the_job_may_write_its_own_mirror_an_earlier_versions_and_a_missing_one():
    assert ownership(MISSING, "sales.t", "m").owner == Owner.NONE
    assert ownership(mirror(snap(1, None, wap=M1)), "sales.t", "m").owner == Owner.OURS
    legacy = TableState(True, "m", 1, (snap(1, None, wap=M1),), {CHECKPOINT_PROPERTY: M1})
    assert ownership(legacy, "sales.t", "m").owner == Owner.LEGACY


def test_a_table_without_the_marker_or_of_another_source_is_not_writable():
    users = TableState(True, "x", 1, (snap(1, None, "append"),), {"owner": "me"})
    assert ownership(users, "sales.t", "m").owner == Owner.FOREIGN and not ownership(users, "sales.t", "m").writable
    other = ownership(mirror(snap(1, None, wap=M1)), "crm.t", "m")
    assert other.owner == Owner.OTHER_SOURCE and "is the mirror of sales.t, not of crm.t" in other.reason


def test_a_source_name_someone_set_or_removed_does_not_make_the_jobs_mirror_anothers():
    """The markers of the job's commits carry the UUID of the table they came from: a mirror whose
    olake-cow.source-table someone set or removed is still this source's (a note says so), and one
    whose commits came from another table is still refused."""
    ours = mirror(snap(1, None, wap=M1))  # M1: a marker of source UUID "u"
    for forged in ("crm.t", None):
        props = {k: v for k, v in ours.properties.items() if k != SOURCE_PROPERTY}
        edited = dataclasses.replace(ours, properties={**props, **({SOURCE_PROPERTY: forged} if forged else {})})
        found = ownership(edited, "sales.t", "m", "u")
        assert found.owner == Owner.OURS and f"{SOURCE_PROPERTY} was" in found.note, forged
        assert not ownership(edited, "sales.t", "m").writable, forged  # no UUID given: as before
        assert not ownership(edited, "sales.t", "m", "another-table").writable, forged
    assert ownership(ours, "sales.t", "m", "u").note == ""


def test_publishes_and_content_keeping_rewrites_are_the_jobs_own():
    m = mirror(snap(1, None, wap=M1), snap(2, 1, wap=M2), snap(3, 2, "replace"),
               **{DATA_CHECKPOINT_PROPERTY: M2, CHECKPOINT_PROPERTY: Marker("u", 30, 3).wap_id})
    assert foreign_change(m) is None  # the checkpoint moved on without a data commit


def test_a_users_commit_after_the_last_publish_is_foreign():
    m = mirror(snap(1, None, wap=M1), snap(2, 1, "delete"), **{DATA_CHECKPOINT_PROPERTY: M1})
    assert "snapshot 2 (delete) was committed by someone else" in foreign_change(m)


def test_a_rollback_to_an_older_publish_is_foreign():
    m = mirror(snap(1, None, wap=M1), snap(2, 1, wap=M2), current=1, **{DATA_CHECKPOINT_PROPERTY: M2})
    assert "holds source snapshot 10, not 20" in foreign_change(m)
    before_any = mirror(snap(0, None, "append"), snap(1, 0, wap=M1), current=0, **{DATA_CHECKPOINT_PROPERTY: M1})
    assert foreign_change(before_any) is not None


def test_a_commit_someone_published_under_the_jobs_wap_id_is_foreign():
    """The marker is anyone's to stage a commit with; the id of the snapshot the job published, set in
    the publish's commit, is what tells its own from a forged one (a cherry-pick names it as source)."""
    ours = {DATA_CHECKPOINT_PROPERTY: M1, DATA_SNAPSHOT_PROPERTY: "1"}
    forged = mirror(snap(1, None, wap=M1), snap(2, 1, "delete", wap=M1), **ours)
    assert "snapshot 2 carries the job's checkpoint marker but is not snapshot 1" in foreign_change(forged)
    assert "rollback_to_snapshot('<mirror>', 1)" in restore_advice(forged)  # the job's, not the forged one
    assert foreign_change(mirror(snap(1, None, wap=M1), snap(3, 1, "replace"), **ours)) is None
    picked = Snapshot(5, 4, 5, "append", {"published-wap-id": M1, "source-snapshot-id": "1"})
    assert foreign_change(mirror(snap(4, None, "replace"), picked, **ours)) is None
    legacy = mirror(snap(1, None, wap=M1), snap(2, 1, "delete", wap=M1), **{DATA_CHECKPOINT_PROPERTY: M1})
    assert foreign_change(legacy) is None  # a mirror of an earlier version recorded no id: the marker rule


def rows(sid, parent, op, records, delete_files=0, wap=None, positions=0, equality=0):
    s = snap(sid, parent, op, wap)
    return dataclasses.replace(s, summary={**s.summary, "total-records": str(records),
                                           "total-delete-files": str(delete_files),
                                           "total-position-deletes": str(positions),
                                           "total-equality-deletes": str(equality)})


def test_a_rewrite_that_shows_other_rows_than_the_job_published_is_foreign():
    """A rewrite keeps rows: one showing a count other than the job's publish followed someone's
    commit, whether the job's snapshots are still there or were expired (the count is recorded
    with the publish, for a snapshot without delete files)."""
    published = rows(1, None, "overwrite", 100, wap=M1)
    ours = {DATA_CHECKPOINT_PROPERTY: M1, **published_properties(M1, 1, published.summary, 2)}
    assert ours[DATA_ROWS_PROPERTY] == "100"
    assert foreign_change(mirror(published, rows(2, 1, "replace", 100), **ours)) is None  # a compaction
    shrunk = mirror(published, rows(2, 1, "replace", 99), **ours)
    assert "snapshot 2 (replace) shows 99 rows, not the 100 of snapshot 1" in foreign_change(shrunk)
    expired = TableState(True, "m", 3, (rows(3, 2, "replace", 99),), ours)
    assert "shows 99 rows" in foreign_change(expired)
    assert foreign_change(TableState(True, "m", 3, (rows(3, 2, "replace", 100),), ours)) is None
    # with format-version 2 delete files the count is not exact: neither recorded nor compared
    assert published_properties(M1, 1, rows(1, None, "overwrite", 100, 2).summary, 2)[DATA_ROWS_PROPERTY] == "unknown"
    assert foreign_change(mirror(published, rows(2, 1, "replace", 99, 1), **ours)) is None
    legacy = {DATA_CHECKPOINT_PROPERTY: M1, DATA_SNAPSHOT_PROPERTY: "1"}  # a version that recorded no count
    assert foreign_change(mirror(published, rows(2, 1, "replace", 99), **legacy)) is None


def test_one_record_of_the_jobs_publish_someone_set_is_read_as_the_job_set_it():
    """olake-cow.data-snapshot, data-checkpoint and data-rows are set from one staged snapshot in the
    publish's commit: while it is in the metadata, one of them someone set is read as the job set it
    (named in a note), where the current history and the checkpoint property agree with the other.
    Before, a truncate mirror was refused ("committed by someone else", "rolled back") with advice
    that named no property, and a readonly one rebuilt. A rollback plus a record set to match it is
    not believed: the job's next merge onto the older snapshot would lack the later publish's rows;
    the advice names the publish the other record and the checkpoint property agree on."""
    first, published = rows(1, None, "overwrite", 90, wap=M1), rows(2, 1, "overwrite", 100, wap=M2)
    ours = {CHECKPOINT_PROPERTY: M2, **published_properties(M2, 2, published.summary, 2)}
    clean = mirror(first, published, **ours)
    assert foreign_change(clean) is None and edited_records(clean) == ({}, None)
    for key, forged, note in ((DATA_SNAPSHOT_PROPERTY, "1", f"snapshot 2, which the mirror holds, carries the data "
                                                            f"checkpoint {M2}"),
                              (DATA_CHECKPOINT_PROPERTY, M1, f"carries {M2}"),
                              (DATA_ROWS_PROPERTY, "5", "shows 100 rows")):
        edited = mirror(first, published, **{**ours, key: forged})
        assert foreign_change(edited) is None, key
        reset, said = edited_records(edited)
        assert f"{key} was set to" in said and note in said, key
        assert reset == {key: ours[key]}, key  # what a run sets back
        compacted = mirror(first, published, rows(3, 2, "replace", 100), **{**ours, key: forged})
        assert foreign_change(compacted) is None, key
    shrunk = mirror(first, published, rows(3, 2, "replace", 99), **{**ours, DATA_ROWS_PROPERTY: "99"})
    assert "shows 99 rows, not the 100" in foreign_change(shrunk)  # someone's delete before a compaction
    for key, forged in ((DATA_SNAPSHOT_PROPERTY, "1"), (DATA_CHECKPOINT_PROPERTY, M1)):
        hidden = mirror(first, published, current=1, **{**ours, key: forged})
        assert foreign_change(hidden) is not None and edited_records(hidden)[1] is None, key
        assert not edited_records(hidden)[0], key  # not the job's to set back: the refusal names it
        assert "set_current_snapshot('<mirror>', 2)" in restore_advice(hidden), key  # the job's, not 1
        assert foreign_change(dataclasses.replace(hidden, current_id=2)) is None, key  # the advice followed


def test_a_rollback_past_the_jobs_last_publish_onto_a_rewrite_is_seen_after_an_expiry():
    """The job's maintenance compacts (rewrite 5) and expires every older snapshot; its next publish 6
    is on 5. Someone rolls the mirror back to 5: no marker is in the current history, 5's parent is
    gone and 5 shows as many rows as 6 (an update, an insert and a delete), so only 6, still in the
    metadata with a newer sequence number, tells the rollback. Before: taken as the job's state, and
    the next merge published onto 5 without 6's changes (found by the random user test, salt r)."""
    def seq(s):
        return dataclasses.replace(s, sequence_number=s.snapshot_id)

    rewrite, published = seq(rows(5, 4, "replace", 30)), seq(rows(6, 5, "overwrite", 30, wap=M2))
    ours = {CHECKPOINT_PROPERTY: M2, **published_properties(M2, 6, published.summary, 2)}
    assert foreign_change(mirror(rewrite, published, **ours)) is None
    back = mirror(rewrite, published, current=5, **ours)
    assert "older than snapshot 6, the job's last publish" in foreign_change(back)
    assert "set_current_snapshot('<mirror>', 6)" in restore_advice(back)
    compacted = mirror(rewrite, published, seq(rows(7, 6, "replace", 30)), **ours)
    assert foreign_change(compacted) is None


def test_an_upgrade_in_place_waits_for_a_mirror_as_the_job_left_it():
    """--upgrade-mirror cannot be undone: it waits while someone's commit or column is on the mirror
    (the run refuses, rebuilds or keeps it first), not for a format version someone set, which is
    what the upgrade settles (the refusal of that change advises it)."""
    ours = {DATA_CHECKPOINT_PROPERTY: M1, DATA_SNAPSHOT_PROPERTY: "1"}
    assert upgrade_waits(MISSING, mirror(snap(1, None, wap=M1), **ours)) is None
    changed = mirror(snap(1, None, wap=M1), snap(2, 1, "delete"), **ours)
    assert "committed by someone else" in str(upgrade_waits(MISSING, changed))
    set_v3 = dataclasses.replace(mirror(snap(1, None, wap=M1), **ours), format_version=3)
    assert foreign_change(set_v3) is not None and upgrade_waits(MISSING, set_v3) is None


def test_a_mirrors_format_is_what_its_table_is_whatever_one_property_says():
    """olake-cow.mirror-format is anyone's to edit: format version 2 is cow (a dv mirror is made at 3
    and no table goes back), and a format version 3 table whose write modes are all merge-on-read is a
    dv mirror; a cow mirror whose format version someone raised stays a change the job names. Before,
    a cow mirror whose property said dv was merged as dv (position delete files in a cow mirror), and
    a dv mirror without it was called a cow mirror of format version 2."""
    ours = {DATA_CHECKPOINT_PROPERTY: M1, DATA_SNAPSHOT_PROPERTY: "1"}
    mor = {k: "merge-on-read" for k in WRITE_MODE_KEYS}

    def made(version, **props):
        return dataclasses.replace(mirror(snap(1, None, wap=M1), **ours, **props), format_version=version)

    for forged in ("dv", "garbage", None):
        cow = made(2, **mor, **({FORMAT_PROPERTY: forged} if forged else {}))
        assert built_format(cow) == MirrorFormat.COW and foreign_change(cow) is None, forged
        assert kept_properties(cow, SourceMode.READONLY, "sales.t", None)[FORMAT_PROPERTY] == "cow"
    for forged in ("cow", "garbage", None):
        dv = made(3, **mor, **({FORMAT_PROPERTY: forged} if forged else {}))
        assert built_format(dv) == MirrorFormat.DV and foreign_change(dv) is None, forged
        assert resolve_format(dv, MirrorFormat.DV) == (MirrorFormat.DV, False)
        assert kept_properties(dv, SourceMode.READONLY, "sales.t", None)[FORMAT_PROPERTY] == "dv"
    # and one write mode someone set as well (the job sets them again before a merge): most say dv
    tweaked = made(3, **{**mor, "write.update.mode": "copy-on-write", FORMAT_PROPERTY: "cow"})
    assert built_format(tweaked) == MirrorFormat.DV and foreign_change(tweaked) is None
    raised = made(3, **{FORMAT_PROPERTY: "cow", "write.delete.mode": "merge-on-read"})
    assert built_format(raised) == MirrorFormat.COW
    assert "a cow mirror (format version 2) and someone set its format-version to 3" in foreign_change(raised)
    # asked for dv, it needs no --upgrade-mirror: nothing irreversible is left to do
    assert resolve_format(raised, MirrorFormat.DV) == (MirrorFormat.DV, True)
    with pytest.raises(MirrorFormatError, match="is a cow mirror \\(format version 2\\)"):
        resolve_format(made(2), MirrorFormat.DV)


def test_a_dv_mirror_counts_the_rows_its_deletion_vectors_leave():
    """In format version 3 a rewritten data file's deletion vector goes with it, so records less
    vector positions is exact (Spark 3.5 and 4.1 summaries, checked by hand: a partial rewrite, a
    manifest rewrite). Format-version 2 position deletes outlive the files they delete, and equality
    deletes have no count: neither is counted."""
    published = rows(1, None, "overwrite", 100, 3, wap=M1, positions=7)
    ours = {DATA_CHECKPOINT_PROPERTY: M1, **published_properties(M1, 1, published.summary, 3)}
    assert ours[DATA_ROWS_PROPERTY] == "93"

    def v3(*snaps):
        return dataclasses.replace(mirror(*snaps, **ours, **{"olake-cow.mirror-format": "dv"}), format_version=3)

    assert foreign_change(v3(published, rows(2, 1, "replace", 96, 2, positions=3))) is None  # a partial compaction
    assert foreign_change(v3(published, rows(2, 1, "replace", 93))) is None  # every vector folded
    someones = "snapshot 2 (replace) shows 92 rows, not the 93 of snapshot 1"
    assert someones in foreign_change(v3(published, rows(2, 1, "replace", 100, 4, positions=8)))
    expired = dataclasses.replace(TableState(True, "m", 3, (rows(3, 2, "replace", 100, 4, positions=8),),
                                             {**ours, "olake-cow.mirror-format": "dv"}), format_version=3)
    assert "shows 92 rows" in foreign_change(expired)
    assert foreign_change(v3(published, rows(2, 1, "replace", 100, 5, positions=7, equality=1))) is None
    assert foreign_change(mirror(published, rows(2, 1, "replace", 100, 4, positions=8), **ours)) is None  # v2
    with_equality = rows(1, None, "overwrite", 100, 3, positions=7, equality=2).summary
    assert published_properties(M1, 1, with_equality, 3)[DATA_ROWS_PROPERTY] == "unknown"


def test_a_rejected_snapshot_made_current_is_foreign():
    m = mirror(snap(1, None, wap=M1), snap(2, 1, wap=M2), **{DATA_CHECKPOINT_PROPERTY: M1, REJECTED_PROPERTY: "2"})
    assert "failed its audit" in foreign_change(m)


def test_a_mirror_whose_history_was_expired_past_its_publishes_is_trusted_after_rewrites_only():
    m = TableState(True, "m", 3, (snap(3, 2, "replace"),), {DATA_CHECKPOINT_PROPERTY: M1})
    assert foreign_change(m) is None
    # someone's delete, then an expiry that took every snapshot the job made: still someone's
    deleted = TableState(True, "m", 4, (snap(3, 2, "replace"), snap(4, 3, "delete")), {DATA_CHECKPOINT_PROPERTY: M1})
    assert "snapshot 4 (delete) was committed by someone else after the job's last commit (the job's own snapshots " \
           "were expired since)" in foreign_change(deleted)
    # a mirror of an earlier version recorded no data checkpoint and may hold unmarked commits of its own
    legacy = TableState(True, "m", 4, (snap(3, 2, "replace"), snap(4, 3, "append")), {})
    assert foreign_change(legacy) is None


def test_an_older_mirror_without_the_data_checkpoint_is_not_called_rolled_back():
    m = mirror(snap(1, None, wap=M1), snap(2, 1, wap=M2), current=1)
    assert foreign_change(m) is None


def test_a_delete_mode_change_is_found_only_where_one_was_recorded():
    assert delete_mode_change(mirror(snap(1, None), **{"olake-cow.delete-mode": "keep"}), "hard") == "keep"
    assert delete_mode_change(mirror(snap(1, None), **{"olake-cow.delete-mode": "hard"}), "hard") is None
    assert delete_mode_change(mirror(snap(1, None)), "hard") is None


@pytest.mark.parametrize("location, inside", [
    ("s3://lake/wh/sales/t/mirror", "its source table"),
    ("s3a://lake/wh/sales/t_cow", "its source namespace's folder"),
    ("s3://lake/wh/sales_cow/t_cow", None),
    ("s3://lake/wh/salesx/t_cow", None),
    ("file:///wh/sales/t_cow", "its source namespace's folder"),
])
def test_a_mirror_location_inside_its_source_is_refused(location, inside):
    source = "s3://lake/wh/sales/t" if location.startswith("s3") else "file:/wh/sales/t"
    problem = location_problem(location, source, "sales_cow.t_cow")
    assert (problem is None) if inside is None else (inside in problem)


SOURCE = Ground("sales.t", "s3://lake/wh/sales/t", ("s3://lake/wh/sales/t/data", "s3://lake/wh/sales/t/metadata"),
                ("s3://lake/wh/sales/t/data/a.parquet",))


def mirror_ground(location="s3a://lake/cow/t_cow", data=None, metadata=None, files=()):
    folders = (data or f"{location}/data", metadata or f"{location}/metadata")
    return Ground("sales_cow.t_cow", location, folders, tuple(files) or (f"{location}/data/m.parquet",))


@pytest.mark.parametrize("mine, other, found", [
    (mirror_ground(), SOURCE, None),
    (mirror_ground(), None, None),
    (SOURCE, mirror_ground(), None),
    # someone points the mirror's data path at OLake's data folder, or moves the mirror onto OLake's table
    (mirror_ground(data="s3://lake/wh/sales/t/data"), SOURCE, "outside its location"),
    (mirror_ground(data="s3://lake/wh/sales/t/data/x"), None, "outside its location"),
    (mirror_ground("s3://lake/wh/sales/t", files=("s3://lake/wh/sales/t/data/m.parquet",)), SOURCE,
     "lie in one another"),
    # ... or the mirror's location somewhere inside OLake's folders: the source's orphans would take it
    (SOURCE, mirror_ground("s3://lake/wh/sales/t/data/cow", files=("s3://lake/wh/sales/t/data/cow/data/m.parquet",)),
     "lie in one another"),
    (SOURCE, Ground("sales_cow.t_cow", "s3://lake/cow/t_cow", ("s3://lake/cow/t_cow/data",),
                    ("s3://lake/wh/sales/t/data/m.parquet",)), "lies in its folders"),
    # a moved table: its files lie outside its new location
    (mirror_ground("s3://lake/elsewhere/t_cow", files=("s3://lake/cow/t_cow/data/m.parquet",)), SOURCE,
     "outside its location"),
    # one place spelled two ways is one place; a sibling sharing a name's prefix is not inside it
    (mirror_ground("s3a://lake/wh/sales/t", files=("s3://lake/wh/sales/t/data/m.parquet",)), SOURCE,
     "lie in one another"),
    (mirror_ground("s3://lake/wh/sales/t_cow"), SOURCE, None),
    # someone turned off deleting the table's files (Iceberg's gc.enabled): none is deleted, as Iceberg would
    (dataclasses.replace(mirror_ground(), gc_off="false"), SOURCE, "gc.enabled=false"),
    (dataclasses.replace(SOURCE, gc_off="no"), None, "gc.enabled=no"),
])
def test_files_are_deleted_only_on_a_tables_own_ground(mine, other, found):
    problem = ground_problem(mine, "removing its orphan files", other)
    assert (problem is None) if found is None else (found in problem and "nothing was deleted" in problem), problem


@pytest.mark.parametrize("value, off", [(None, None), ("true", None), ("TRUE", None), ("false", "false"),
                                        ("no", "no"), ("", ""), (" true", " true")])
def test_gc_is_off_exactly_when_iceberg_reads_it_off(value, off):
    """Iceberg reads gc.enabled with Boolean.parseBoolean: only "true", in any case, leaves it on."""
    assert gc_disabled({} if value is None else {"gc.enabled": value}) == off


def _placed(location, **props):
    return TableState(True, "u", None, (), props, location="s3://lake/" + location)


@pytest.mark.parametrize("mirror_state, found", [
    (_placed("cow/t_cow"), False),
    (_placed("cow/t_cow", **{"write.data.path": "s3://lake/wh/sales/t/data/mine"}), True),
    (_placed("cow/t_cow", **{"write.folder-storage.path": "s3a://lake/wh/sales/t"}), True),
    (_placed("cow/t_cow", **{"write.metadata.path": "s3://lake/wh/sales/t/metadata"}), True),
    (_placed("wh/sales/t"), True),  # moved onto OLake's table
    (_placed("wh/sales"), True),  # OLake's table inside the mirror's folders
    (_placed("wh/sales/t_cow"), False),
    (TableState(False), False),
])
def test_a_mirror_writing_into_olakes_folders_is_found_from_metadata(mirror_state, found):
    source = _placed("wh/sales/t")
    assert (mirror_ground_problem(source, mirror_state) is not None) == found


def test_a_truncate_mirror_writing_into_olakes_folders_is_blocked_before_anything_is_written():
    source = TableState(True, "u", 5, (snap(5, None, "append"),), {}, location="s3://lake/wh/sales/t")
    placed = mirror(snap(1, None, wap=M1), **{DATA_CHECKPOINT_PROPERTY: M1, CHECKPOINT_PROPERTY: M1})
    apart = dataclasses.replace(placed, location="s3://lake/cow/t_cow")
    assert not isinstance(plan_table(source, apart, SourceMode.TRUNCATE, TableAsk()), Blocked)
    placed = mirror(snap(1, None, wap=M1), **{DATA_CHECKPOINT_PROPERTY: M1, CHECKPOINT_PROPERTY: M1,
                                              "write.data.path": "s3://lake/wh/sales/t/data/x"})
    step = plan_table(source, dataclasses.replace(placed, location="s3://lake/cow/t_cow"), SourceMode.TRUNCATE,
                      TableAsk())
    assert isinstance(step, Blocked) and "in OLake's table's s3://lake/wh/sales/t" in step.reason, step
    assert "nothing was written or truncated" in step.reason


def test_the_advice_on_files_outside_a_tables_location_never_costs_the_only_copy():
    """The table may be a truncate mirror (the only complete copy) or OLake's own: the way out is to
    move it back or take the commit out of its history, never to drop it."""
    advice = foreign_files_problem("sales_cow.orders_cow", "s3://l/sales_cow/orders_cow",
                                   ["s3://l/sales/orders/data/1.parquet"], "expiring its snapshots")
    assert "nothing was deleted" in advice and "SET LOCATION" in advice and "cleanExpiredFiles(false)" in advice
    assert "Do not drop the table" in advice and "drop" not in advice.replace("Do not drop the table", "").lower()


def test_orphan_removal_is_the_tables_own_only_when_every_metadata_file_it_lists_is():
    """What orphan removal listed shows another table in the folders: a metadata file of another
    UUID, or one that cannot be read. The table's own (a commit that lost a race) are no sign."""
    wh = "s3://lake/sales_cow/orders_cow/metadata"
    named = [f"{wh}/v3.metadata.json", f"{wh}/00001-ab.gz.metadata.json", f"{wh}/snap-1-ab.avro",
             f"{wh}/version-hint.text", "s3://lake/x.metadata.json/data/0.parquet"]
    assert [is_table_metadata(p) for p in named] == [True, True, False, False, False]
    own = [(f"{wh}/00002-lost-race.metadata.json", "u1")]
    assert foreign_metadata("u1", own) is None and foreign_metadata("u1", []) is None
    assert foreign_metadata("A2C4-E6", [(f"{wh}/v2.metadata.json", "a2c4-e6")]) is None  # written in either case
    other = own + [(f"{wh}/00001-kept.metadata.json", "u2"), (f"{wh}/v9.metadata.json", None)]
    assert foreign_metadata("u1", other) == (f"{wh}/00001-kept.metadata.json", "the metadata of table u2")
    assert foreign_metadata("u1", other[2:]) == (f"{wh}/v9.metadata.json", "a table metadata file it cannot read")
    assert foreign_metadata(None, own) is not None  # the table's own UUID unknown: nothing is proven

    def endless():  # stops at the first foreign file, reads no more
        yield f"{wh}/1.metadata.json", "u2"
        raise AssertionError("read past the first foreign metadata file")
    assert foreign_metadata("u1", endless())[0].endswith("/1.metadata.json")


def test_sources_without_a_string_olake_id_are_skipped_or_refused():
    assert source_problem(TableState(True, key_field_id=None), "table s.t").skip
    refused = source_problem(TableState(True, key_field_id=1, key_type="long"), "table s.t")
    assert not refused.skip and "of type long" in refused.reason
    assert source_problem(TableState(True, key_field_id=1), "table s.t") is None


def test_every_foreign_state_case_in_the_doc_names_a_test_that_exists():
    import os

    from testkit.docs import ROOT, bad_input_cases

    cases = bad_input_cases("foreign-state")
    assert len(cases) >= 15
    for case, test in cases.items():
        path, name = test.strip("`").split("::")
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            assert f"def {name}(" in f.read(), case
