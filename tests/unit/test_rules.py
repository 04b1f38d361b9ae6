"""Audit, checkpoint parsing, identifier quoting and the MERGE text."""
import pytest

from olake_cow.core.audit import ChangeCounts, audit, audit_problems
from olake_cow.core.checkpoint import Marker, parse_marker
from olake_cow.core.errors import AuditError, InvalidNameError
from olake_cow.core.identifiers import qualified, quote, validate_name
from olake_cow.core.modes import MirrorFormat
from olake_cow.core.snapshots import Snapshot
from olake_cow.spark.changes import ACTION, merge_sql

pytestmark = pytest.mark.unit


def snap(sid, **summary):
    return Snapshot(sid, None, sid, "overwrite", {k.replace("_", "-"): str(v) for k, v in summary.items()})


def test_a_cow_merge_passes_when_its_commit_matches_the_change_set():
    # 3 upserts (1 new key, 2 updated) and 1 delete of a held key; the merge rewrote a 10-row file
    staged = snap(1, total_records=12, added_records=11, deleted_records=10, total_delete_files=0)
    counts = ChangeCounts(upserts=3, deletes=1)
    assert audit_problems(staged, 11, counts, rebuild=False) == []
    audit(staged, 11, counts, False, "m")


def test_a_cow_merge_that_lost_upserts_or_removed_too_much_is_refused():
    counts = ChangeCounts(upserts=3, deletes=1)
    lost = snap(1, total_records=10, added_records=2, deleted_records=2)
    assert audit_problems(lost, 10, counts, False)[0] == "added-records=2, fewer than the change set's 3 upserts"
    wiped = snap(2, total_records=3, added_records=3, deleted_records=11)
    assert any("11 mirror rows replaced or removed" in p for p in audit_problems(wiped, 11, counts, False))
    with pytest.raises(AuditError, match="staged snapshot 2 failed its audit"):
        audit(wiped, 11, counts, False, "m")


def test_a_cow_mirror_holds_no_delete_file_and_a_rebuild_shows_what_it_wrote():
    bad = snap(2, total_records=6, added_records=6, total_delete_files=1, total_equality_deletes=3)
    assert audit_problems(bad, 0, ChangeCounts(0, 0), rebuild=True) == [
        "total-delete-files=1", "total-equality-deletes=3"]
    short = snap(3, total_records=5, added_records=6)
    assert audit_problems(short, 0, ChangeCounts(0, 0), rebuild=True) == [
        "rows=5 (total-records minus deleted positions), expected the 6 written"]


def test_a_dv_merge_adds_each_upsert_once_and_marks_at_most_one_row_per_key():
    counts = ChangeCounts(upserts=3, deletes=1)
    # 2 updates and 1 delete marked in deletion vectors, 3 rows written: 10 -> 10 shown
    good = snap(1, total_records=13, total_position_deletes=3, added_position_deletes=3, added_records=3,
                total_delete_files=2, added_dvs=2)
    assert audit_problems(good, 10, counts, False, MirrorFormat.DV) == []
    as_cow = audit_problems(good, 10, counts, False, MirrorFormat.COW)
    assert as_cow[:2] == ["total-delete-files=2", "total-position-deletes=3"]  # a cow mirror may hold none
    # a file that had a deletion vector (2 positions) gets a new one with 2 + 1 positions
    merged = snap(3, total_records=13, total_position_deletes=3, added_position_deletes=3,
                  removed_position_deletes=2, added_records=1)
    assert audit_problems(merged, 10, ChangeCounts(upserts=1, deletes=0), False, MirrorFormat.DV) == []
    twice = snap(2, total_records=14, total_position_deletes=3, added_position_deletes=3, added_records=4)
    assert audit_problems(twice, 10, counts, False, MirrorFormat.DV)[0] == (
        "added-records=4, expected the change set's 3 upserts")


def test_a_dv_mirror_may_hold_deletion_vectors_and_nothing_else():
    counts = ChangeCounts(upserts=1, deletes=0)
    base = {"total_records": 11, "total_position_deletes": 1, "added_position_deletes": 1, "added_records": 1}
    v2_file = snap(2, added_position_delete_files=1, **base)
    assert audit_problems(v2_file, 10, counts, False, MirrorFormat.DV) == ["added-position-delete-files=1"]
    equality = snap(3, added_equality_delete_files=1, total_equality_deletes=4, **base)
    with pytest.raises(AuditError, match="total-equality-deletes=4; added-equality-delete-files=1"):
        audit(equality, 10, counts, False, "m", MirrorFormat.DV)


@pytest.mark.parametrize("value", [None, "", "x", "olake-cow:u", "olake-cow::5", "olake-cow:u:x",
                                   "other:u:5", "olake-cow:u:5:x", "olake-cow:u:5:6:7"])
def test_foreign_wap_ids_are_not_checkpoints(value):
    assert parse_marker(value) is None


@pytest.mark.parametrize("marker", [Marker("abc-def", -123), Marker("abc-def", 42, 7)])
def test_marker_round_trips(marker):
    assert parse_marker(marker.wap_id) == marker


def test_identifiers_are_quoted():
    assert quote("a`b") == "`a``b`"
    assert qualified("c", "n s", "t.x") == "`c`.`n s`.`t.x`"


@pytest.mark.parametrize("name", ["", "  ", "a\x00b", "a/b", "x" * 300, "a\u200bb"])
def test_unusable_names_are_refused(name):
    with pytest.raises(InvalidNameError):
        validate_name("table", name)


def test_merge_statement_deletes_updates_and_inserts_by_key():
    sql = merge_sql("`c`.`n`.`m`", "`v`", ["_olake_id", "a", "late"], ["_olake_id", "a", ACTION])
    assert "WHEN MATCHED AND s.`__olake_cow_action` = 'D' THEN DELETE" in sql
    assert "t.`late` = NULL" in sql and "t.`a` = s.`a`" in sql
    assert "INSERT (`_olake_id`, `a`) VALUES (s.`_olake_id`, s.`a`)" in sql


def test_merge_prunes_the_mirror_to_the_key_intervals_a_change_can_touch():
    from olake_cow.spark.changes import interval_condition

    sql = merge_sql("`m`", "`v`", ["_olake_id", "a"], ["_olake_id", "a", ACTION], intervals=[("k1", "k'9")])
    assert "ON t.`_olake_id` = s.`_olake_id` AND (t.`_olake_id` >= 'k1' AND t.`_olake_id` <= 'k\\'9') WHEN" in sql
    two = interval_condition("t.", [("a", "b"), ("x", "z")])
    assert two == "((t.`_olake_id` >= 'a' AND t.`_olake_id` <= 'b') OR (t.`_olake_id` >= 'x' AND t.`_olake_id` <= 'z'))"
    assert interval_condition("", []) == "false"  # no mirror file can hold a changed key
    assert " AND " not in merge_sql("`m`", "`v`", ["_olake_id"], ["_olake_id", ACTION]).split(" WHEN")[0]


def test_a_key_list_keeps_a_null_keys_rows_with_the_rows_it_does_not_list():
    from olake_cow.spark.changes import key_condition

    assert key_condition("t.", ["a", None, "b'c"]) == "t.`_olake_id` IN ('a', 'b\\'c')"
    assert key_condition("", ["a"], listed=False) == "(`_olake_id` IS NULL OR `_olake_id` NOT IN ('a'))"
    assert key_condition("", [None]) == "false" and key_condition("", [None], listed=False) == "true"
    sql = merge_sql("`m`", "`v`", ["_olake_id"], ["_olake_id", ACTION], intervals=[("a", "z")], keys=["k"])
    assert "AND t.`_olake_id` IN ('k') WHEN" in sql

def test_a_rebuild_splits_its_keys_into_ranges_of_about_equal_size():
    from olake_cow.spark.changes import range_bounds

    keys = [f"{i:04d}" for i in range(1000)]
    assert range_bounds(keys, 4) == ["0250", "0500", "0750"]
    assert range_bounds(keys, 1) == [] and range_bounds([], 4) == []
    assert range_bounds(["a"] * 10 + ["b"] * 2, 4) == []  # the quantiles are all one key: one range


def test_a_rebuild_writes_files_of_the_target_size_but_up_to_32_ranges_of_6_mb():
    from olake_cow.core.filesize import rebuild_partitions

    mb = 1024 * 1024
    assert rebuild_partitions(220 * mb, 128 * mb, 2) == 32  # 32 ranges of about 7 MB
    assert rebuild_partitions(54 * mb, 128 * mb, 2) == 9  # each range keeps 6 MB
    assert rebuild_partitions(20 * mb, 128 * mb, 2) == 3
    assert rebuild_partitions(1 * mb, 128 * mb, 2) == 1
    assert rebuild_partitions(10_000 * mb, 128 * mb, 32) == 79  # by size
    assert rebuild_partitions(500 * mb, 128 * mb, 64) == 64  # one per core
    assert rebuild_partitions(0, 128 * mb, 8) == 1


def test_compaction_writes_the_key_ranges_a_rebuild_writes_not_one_target_sized_file():
    from olake_cow.core.filesize import range_file_bytes

    mb = 1024 * 1024
    assert range_file_bytes(55 * mb, 128 * mb) == 55 * mb // 9  # a 1M-row mirror: 9 ranges, not one file
    assert range_file_bytes(880 * mb, 128 * mb) == 880 * mb // 32  # 16M rows: 32 ranges of 27.5 MB
    assert range_file_bytes(10_000 * mb, 128 * mb) == 10_000 * mb // 79  # by the target size
    assert range_file_bytes(3 * mb, 128 * mb) == 3 * mb  # under two ranges: one file
    assert range_file_bytes(0, 128 * mb) == 128 * mb  # size not known: the target


def test_a_tables_columns_come_from_its_current_schema():
    from olake_cow.core.snapshots import state_from_metadata

    meta = {"format-version": 2, "table-uuid": "u", "current-schema-id": 1, "schemas": [
        {"schema-id": 0, "fields": [{"id": 1, "name": "_olake_id"}]},
        {"schema-id": 1, "fields": [{"id": 1, "name": "_olake_id"}, {"id": 2, "name": "v"}]}]}
    state = state_from_metadata(meta)
    assert state.columns == ("_olake_id", "v") and state.key_field_id == 1
