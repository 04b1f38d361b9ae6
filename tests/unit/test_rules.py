"""Audit, checkpoint parsing, identifier quoting and the MERGE text."""
import pytest

from olake_cow.audit import audit, audit_problems
from olake_cow.changes import ACTION, escape_glob, merge_sql
from olake_cow.checkpoint import Marker, parse_marker
from olake_cow.errors import AuditError, InvalidNameError
from olake_cow.identifiers import qualified, quote, validate_name
from olake_cow.modes import MirrorFormat
from olake_cow.snapshots import Snapshot

pytestmark = pytest.mark.unit


def test_audit_refuses_delete_files_and_wrong_counts():
    good = Snapshot(1, None, 1, "overwrite", {"total-records": "5", "total-delete-files": "0"})
    bad = Snapshot(2, None, 2, "overwrite", {"total-records": "6", "total-delete-files": "1",
                                            "total-equality-deletes": "3"})
    audit(good, 5, "m")
    assert audit_problems(bad, 5) == ["total-delete-files=1", "total-equality-deletes=3",
                                      "rows=6 (total-records minus deleted positions), expected 5"]
    with pytest.raises(AuditError, match="staged snapshot 2 failed its audit"):
        audit(bad, 5, "m")


def test_a_dv_mirror_may_hold_deletion_vectors_and_nothing_else():
    dvs = {"total-records": "12", "total-delete-files": "2", "total-position-deletes": "2", "added-dvs": "1"}
    audit(Snapshot(1, None, 1, "overwrite", dvs), 10, "m", MirrorFormat.DV)
    assert audit_problems(Snapshot(1, None, 1, "overwrite", dvs), 10, MirrorFormat.COW) == [
        "total-delete-files=2", "total-position-deletes=2"]
    v2_file = {**dvs, "added-position-delete-files": "1"}
    equality = {**dvs, "added-equality-delete-files": "1", "total-equality-deletes": "4"}
    assert audit_problems(Snapshot(2, 1, 2, "overwrite", v2_file), 10, MirrorFormat.DV) == [
        "added-position-delete-files=1"]
    with pytest.raises(AuditError, match="total-equality-deletes=4; added-equality-delete-files=1"):
        audit(Snapshot(3, 1, 3, "overwrite", equality), 10, "m", MirrorFormat.DV)


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


def test_glob_characters_in_paths_are_escaped():
    assert escape_glob("/w/t[1]/{a}*?.parquet") == "/w/t\\[1\\]/\\{a\\}\\*\\?.parquet"


def test_merge_prunes_the_mirror_by_the_change_sets_key_range():
    from olake_cow.changes import range_condition

    sql = merge_sql("`m`", "`v`", ["_olake_id", "a"], ["_olake_id", "a", ACTION], keys=("k1", "k'9"))
    assert "ON t.`_olake_id` = s.`_olake_id` AND t.`_olake_id` >= 'k1' AND t.`_olake_id` <= 'k\\'9' WHEN" in sql
    assert range_condition("", None) == "false"  # an empty change set matches no mirror row
