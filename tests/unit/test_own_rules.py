"""Nothing but its own, on literal metadata records: ownership no single property can forge, the
mirror's columns and format version as the job left them, another job's truncates of a readonly
mirror's source, the truncate planner's way out after expiry, and the one decision the job's
loop and the trigger's idle check share (core/identity.py, core/readonly.py, core/truncate.py,
core/planner.py)."""
import dataclasses
import re

import pytest

from olake_cow.core.checkpoint import CHECKPOINT_PROPERTY, DATA_CHECKPOINT_PROPERTY, FORMAT_PROPERTY, Marker
from olake_cow.core.identity import (
    MADE_BY,
    MADE_BY_PROPERTY,
    Owner,
    foreign_change,
    incompatible_column,
    ownership,
    restore_advice,
)
from olake_cow.core.modes import SourceMode
from olake_cow.core.planner import TableAsk, has_work, plan_table, rebuild_reason
from olake_cow.core.readonly import intervals, other_truncates
from olake_cow.core.snapshots import BOUNDARY_KEY, Snapshot, TableState
from olake_cow.core.steps import Advance, Blocked, Merge, Truncate

pytestmark = pytest.mark.unit
UUID = "src-uuid"
SOURCE = "sales.t"
M1 = Marker(UUID, 10, 1).wap_id


def snap(sid, parent, op="overwrite", *, wap=None, boundary=False, adds=1, removes=0):
    summary = {"operation": op, "added-data-files": str(adds), "deleted-data-files": str(removes)}
    if wap:
        summary["wap.id"] = wap
    if boundary:
        summary[BOUNDARY_KEY] = "other-run"
    return Snapshot(sid, parent, sid * 1000, op, summary, sequence_number=sid)


def table(*snaps, uuid="m", current=None, props=None, fields=None, past=None, types=None, version=2):
    cur = current if current is not None else (snaps[-1].snapshot_id if snaps else None)
    fields = fields if fields is not None else {1: "_olake_id", 2: "v", 3: "customer"}
    past = past if past is not None else set(fields.items())
    return TableState(True, uuid, cur, tuple(snaps), dict(props or {}), fields=fields,
                      past_fields=frozenset(past), types=types or {n: "string" for n in fields.values()},
                      format_version=version)


def ours(*snaps, **kw):
    props = {MADE_BY_PROPERTY: MADE_BY, "olake-cow.source-table": SOURCE, DATA_CHECKPOINT_PROPERTY: M1,
             CHECKPOINT_PROPERTY: M1, **kw.pop("props", {})}
    return table(*snaps, props=props, **kw)


# --- ownership -----------------------------------------------------------------------------------
def test_the_made_by_marker_alone_does_not_make_a_table_the_jobs():
    forged = table(snap(1, None, "append"), props={MADE_BY_PROPERTY: MADE_BY})
    found = ownership(forged, SOURCE, "sales_cow.t_cow")
    assert found.owner == Owner.FOREIGN and "names no source" in found.reason
    assert "drop" not in found.reason


def test_the_markers_without_any_job_commit_do_not_make_a_table_with_data_the_jobs():
    forged = table(snap(1, None, "append"), props={MADE_BY_PROPERTY: MADE_BY, "olake-cow.source-table": SOURCE})
    assert ownership(forged, SOURCE, "m").owner == Owner.FOREIGN


def test_a_mirror_created_by_a_run_that_stopped_before_its_first_publish_is_the_jobs():
    created = table(props={MADE_BY_PROPERTY: MADE_BY, "olake-cow.source-table": SOURCE})
    assert ownership(created, SOURCE, "m").owner == Owner.OURS


def test_one_legacy_property_is_not_proof_but_a_published_marker_is():
    assert ownership(table(snap(1, None, "append"), props={"olake-cow.source-mode": "readonly"}),
                     SOURCE, "m").owner == Owner.FOREIGN
    assert ownership(table(snap(1, None, wap=M1)), SOURCE, "m").owner == Owner.LEGACY


def test_a_checkpoint_property_of_a_source_none_of_the_commits_came_from_is_not_proof():
    forged = table(snap(1, None, wap=Marker("other", 5, 1).wap_id), props={CHECKPOINT_PROPERTY: M1})
    assert ownership(forged, SOURCE, "m").owner == Owner.FOREIGN


# --- the mirror's columns and format version --------------------------------------------------------
SRC = table(snap(1, None), uuid=UUID)


def test_a_column_dropped_from_the_mirror_is_someone_elses_change():
    m = ours(snap(5, None, wap=M1), fields={1: "_olake_id", 2: "v"}, past={(1, "_olake_id"), (2, "v"), (3, "customer")})
    assert "column customer of the mirror was dropped" in foreign_change(m, SRC)


def test_a_column_renamed_in_the_mirror_is_someone_elses_change():
    m = ours(snap(5, None, wap=M1), fields={1: "_olake_id", 2: "v", 3: "cust"},
             past={(1, "_olake_id"), (2, "v"), (3, "customer"), (3, "cust")})
    assert "renamed to cust" in foreign_change(m, SRC)


def test_a_column_added_to_the_mirror_is_someone_elses_change():
    m = ours(snap(5, None, wap=M1), fields={1: "_olake_id", 2: "v", 3: "customer", 9: "mine"})
    assert "column mine is in no schema of its source" in foreign_change(m, SRC)


def test_a_rename_the_mirror_followed_from_its_source_is_the_jobs():
    src = table(snap(1, None), uuid=UUID, fields={1: "_olake_id", 2: "v", 3: "client"},
                past={(1, "_olake_id"), (2, "v"), (3, "customer"), (3, "client")})
    m = ours(snap(5, None, wap=M1), fields={1: "_olake_id", 2: "v", 3: "client"},
             past={(1, "_olake_id"), (2, "v"), (3, "customer"), (3, "client")})
    assert foreign_change(m, src) is None


def test_a_column_the_source_dropped_stays_in_the_mirror_without_alarm():
    src = table(snap(1, None), uuid=UUID, fields={1: "_olake_id", 2: "v"},
                past={(1, "_olake_id"), (2, "v"), (3, "customer")})
    assert foreign_change(ours(snap(5, None, wap=M1)), src) is None


def test_a_format_version_someone_changed_is_someone_elses_change():
    m = ours(snap(5, None, wap=M1), version=3, props={FORMAT_PROPERTY: "cow"})
    assert "set its format-version to 3" in foreign_change(m, SRC)
    assert foreign_change(ours(snap(5, None, wap=M1), version=3, props={FORMAT_PROPERTY: "dv"}), SRC) is None


def test_a_source_column_of_a_type_the_mirror_cannot_take_is_named():
    src = table(snap(1, None), uuid=UUID, types={"_olake_id": "string", "v": "string", "customer": "string"})
    held = ours(snap(5, None, wap=M1), types={"_olake_id": "string", "v": "int", "customer": "string"})
    assert "column v is now string and the mirror's is int" in incompatible_column(src, held)
    promoted = table(snap(1, None), uuid=UUID, types={"_olake_id": "string", "v": "long", "customer": "string"})
    assert incompatible_column(promoted, held) is None
    wider = table(snap(1, None), uuid=UUID, types={"v": "decimal(12, 2)"})
    assert incompatible_column(wider, ours(snap(5, None, wap=M1), types={"v": "decimal(10, 2)"})) is None


def test_a_truncate_mirror_someone_changed_is_refused_with_advice_that_keeps_it():
    m = ours(snap(5, None, wap=M1), fields={1: "_olake_id", 2: "v"}, past={(1, "_olake_id"), (2, "v"), (3, "customer")})
    step = plan_table(SRC, m, SourceMode.TRUNCATE, TableAsk())
    assert isinstance(step, Blocked) and "dropped by someone else" in step.reason
    assert "rollback_to_snapshot('<mirror>', 5)" in restore_advice(m)
    assert "Do not drop the mirror" in step.reason and "nothing was written or truncated" in step.reason


def test_a_mirror_rolled_back_past_the_jobs_commit_is_advised_the_call_that_reaches_it():
    """Iceberg's rollback_to_snapshot reaches only an ancestor of the current snapshot."""
    rolled = ours(snap(4, None), snap(5, 4, wap=M1), current=4)
    assert "set_current_snapshot('<mirror>', 5)" in restore_advice(rolled)
    assert "rollback_to_snapshot" not in restore_advice(rolled)


@pytest.mark.parametrize("rows, named", [(30, True), (29, False)])
def test_a_truncate_mirror_whose_last_commit_lives_on_in_a_compaction_is_advised_that_compaction(rows, named):
    """The job's maintenance compacted the mirror and expired its commits; then someone committed.
    The compaction right before that commit shows the rows the job left, so it is the one to go
    back to; one that shows other rows is not named (what it rewrote was someone's)."""
    from olake_cow.core.checkpoint import DATA_ROWS_PROPERTY

    totals = {"total-records": str(rows), "total-delete-files": "0"}
    compacted = Snapshot(7, 5, 7000, "replace", {"operation": "replace", **totals}, sequence_number=7)
    theirs = Snapshot(8, 7, 8000, "overwrite", {"operation": "overwrite", "total-records": "29",
                                                "total-delete-files": "0"}, sequence_number=8)
    m = ours(compacted, theirs, props={DATA_ROWS_PROPERTY: "30"})
    step = plan_table(SRC, m, SourceMode.TRUNCATE, TableAsk())
    assert isinstance(step, Blocked) and "committed by someone else" in step.reason
    advice = restore_advice(m)
    assert ("rollback_to_snapshot('<mirror>', 7)" in advice) == named, advice
    assert ("a rewrite of the job's last commit" in advice) == named, advice


@pytest.mark.parametrize("props, found", [
    ({}, None),
    ({"gc.enabled": "false"}, "gc.enabled=false"),
    ({"write.data.path": "s3://lake/elsewhere/data"}, "outside its location"),
])
def test_a_readonly_mirror_to_be_made_anew_is_not_when_its_metadata_shows_the_drop_would_delete_others_files(
        props, found):
    """Creating a mirror anew drops it, purging every file: on ground its metadata shows is not its own,
    the planner blocks it (the trigger starts no run that could only fail) and nothing is dropped."""
    src = dataclasses.replace(SRC, location="s3://lake/wh/sales/t")
    m = ours(snap(5, None, wap=M1), fields={1: "_olake_id", 2: "v"}, past={(1, "_olake_id"), (2, "v"), (3, "customer")},
             props=props)
    m = dataclasses.replace(m, location="s3://lake/wh/sales_cow/t_cow")
    step = plan_table(src, m, SourceMode.READONLY, TableAsk())
    if found is None:
        assert isinstance(step, Merge) and step.rebuild, step
    else:
        assert isinstance(step, Blocked) and found in step.reason and "nothing was deleted" in step.reason, step
        assert "column customer of the mirror was dropped" in step.reason
    # the same ground with no column changed: rebuilt in place (nothing dropped), not blocked
    same = dataclasses.replace(m, fields=dict(SRC.fields), past_fields=SRC.past_fields)
    assert not isinstance(plan_table(src, same, SourceMode.READONLY, TableAsk()), Blocked)


@pytest.mark.parametrize("recorded, held, source, told", [
    ("readonly", "readonly", "clean", "readonly"),
    ("bogus", "readonly", "clean", "readonly"),  # a value that is no mode is the checkpoint's to decide
    (None, "readonly", "clean", "readonly"),
    # the property set to truncate over a readonly checkpoint: OLake's table was never truncated
    ("truncate", "readonly", "clean", "readonly"),
    ("truncate", "readonly", "marked", None),  # some job truncates it: the marker may be forged
    ("truncate", "readonly", "boundary", None),
    ("truncate", "readonly", "other-uuid", None),  # not even this source's marker
    # the property set to readonly over a truncate checkpoint: OLake's table names this mirror
    ("readonly", "truncate", "marked", "truncate"),
    ("readonly", "truncate", "marked-elsewhere", None),  # another mirror's truncates
    ("readonly", "truncate", "clean", None),
    ("readonly", "truncate", "boundary", None),  # an older job's boundary does not name the mirror
])
def test_a_mode_property_that_contradicts_the_checkpoint_is_set_back_only_where_olakes_table_tells(
        recorded, held, source, told):
    """Someone set olake-cow.source-mode against the checkpoint (a readonly one carries a sequence
    number, a truncate one names a boundary). OLake's table tells which one is the job's when it
    names this mirror as the one its truncates go into (truncate) or was never truncated (readonly):
    the run takes that mode and sets the property back (noted). Otherwise either guess could cost
    data (a truncate run truncates OLake's table, a readonly rebuild of a truncate mirror drops the
    rows only it holds): refused before anything runs, naming the property to set back."""
    from olake_cow.core.checkpoint import TRUNCATED_INTO_PROPERTY
    from olake_cow.core.errors import SourceModeError
    from olake_cow.core.mirror_props import set_back
    from olake_cow.core.modes import MODE_PROPERTY, resolve_mode

    marker = M1 if held == "readonly" else Marker(UUID, 1).wap_id
    if source == "other-uuid":
        marker = Marker("x", 10, 1).wap_id
    m = ours(snap(5, None, wap=marker), props={MODE_PROPERTY: recorded} if recorded else {})
    into = {"marked": "sales_cow.T_cow", "marked-elsewhere": "other_cow.t_cow"}.get(source)
    if source == "boundary":
        src = table(snap(1, None), snap(2, 1, "delete", boundary=True, adds=0, removes=1), uuid=UUID)
    else:
        src = table(snap(1, None), uuid=UUID, props={TRUNCATED_INTO_PROPERTY: into} if into else None)
    if told is None:
        with pytest.raises(SourceModeError, match=f"checkpoint is a {held}-mode one.*set the property back"):
            resolve_mode(src, m, None, "sales_cow.t_cow")
        assert set_back(src, m, "sales_cow.t_cow") == ({}, [])
        return
    assert resolve_mode(src, m, None, "sales_cow.t_cow") == SourceMode(told)
    reset, notes = set_back(src, m, "sales_cow.t_cow")
    if recorded in ("readonly", "truncate") and recorded != told:
        assert reset == {MODE_PROPERTY: told} and f"was set to {recorded!r} by someone else" in notes[0], notes
        with pytest.raises(SourceModeError, match="a run does not change that"):  # asked for the edited one
            resolve_mode(src, m, SourceMode(recorded), "sales_cow.t_cow")
    else:
        assert reset == {} and notes == []


# --- another job's truncates of a readonly mirror's source ----------------------------------------------
def test_another_jobs_truncate_alone_is_not_a_change_of_a_readonly_mirror():
    src = table(snap(1, None), snap(2, 1, "delete", boundary=True, adds=0, removes=3), uuid=UUID)
    m = ours(snap(5, None, wap=Marker(UUID, 1, 1).wap_id), props={DATA_CHECKPOINT_PROPERTY: Marker(UUID, 1, 1).wap_id,
                                                                  CHECKPOINT_PROPERTY: Marker(UUID, 1, 1).wap_id})
    assert isinstance(plan_table(src, m, SourceMode.READONLY, TableAsk()), Advance)
    assert other_truncates(src, m) == [2]


def test_rows_new_before_another_jobs_truncate_are_read_where_they_were_live():
    src = table(snap(1, None), snap(2, 1), snap(3, 2, "delete", boundary=True, adds=0, removes=2), snap(4, 3),
                uuid=UUID)
    found = intervals(src, Marker(UUID, 1, 1), 4, {})
    assert [(iv.start_seq, iv.end_id, iv.removing) for iv in found] == [(1, 2, ()), (3, 4, ())]


# --- truncate mode: the way out after expiry --------------------------------------------------------------
def truncate_pair(expired_checkpoint=True):
    bmark = Marker(UUID, 3).wap_id
    snaps = [snap(4, 3), snap(5, 4)] if expired_checkpoint else [snap(2, 1), snap(3, 2, "delete", boundary=True)]
    src = table(*snaps, uuid=UUID)
    m = ours(snap(50, None, wap=bmark), props={DATA_CHECKPOINT_PROPERTY: bmark, CHECKPOINT_PROPERTY: bmark,
                                                "olake-cow.source-mode": "truncate"})
    return src, m


def test_expiry_past_a_truncate_mirrors_checkpoint_stops_and_names_the_way_out():
    src, m = truncate_pair()
    src = table(snap(5, 4), uuid=UUID)  # snapshot 4 (after the checkpoint) expired too
    step = plan_table(src, m, SourceMode.TRUNCATE, TableAsk())
    assert isinstance(step, Blocked) and "--resume-from-source" in step.reason
    assert "drop" not in step.reason.lower()
    assert isinstance(plan_table(src, m, SourceMode.TRUNCATE, TableAsk(resume=True)), Truncate)


def test_a_source_rolled_back_past_a_truncate_mirrors_checkpoint_is_not_resumed():
    _, m = truncate_pair()
    rolled = table(snap(1, None), snap(3, 1, "delete", boundary=True), snap(7, 1), uuid=UUID, current=7)
    step = plan_table(rolled, m, SourceMode.TRUNCATE, TableAsk(resume=True))
    assert isinstance(step, Blocked) and "rolled back" in step.reason and "drop" not in step.reason.lower()


# --- one decision for the trigger and the job -------------------------------------------------------------
def test_a_delete_mode_change_is_work_for_the_trigger_as_for_the_job():
    src = table(snap(1, None), uuid=UUID)
    m = ours(snap(5, None, wap=Marker(UUID, 1, 1).wap_id),
             props={"olake-cow.delete-mode": "keep", DATA_CHECKPOINT_PROPERTY: Marker(UUID, 1, 1).wap_id,
                    CHECKPOINT_PROPERTY: Marker(UUID, 1, 1).wap_id})
    assert not has_work(plan_table(src, m, SourceMode.READONLY, TableAsk("keep")))
    step = plan_table(src, m, SourceMode.READONLY, TableAsk("hard"))
    assert isinstance(step, Merge) and step.rebuild and has_work(step)
    assert "--delete-mode keep" in rebuild_reason(src, m, TableAsk("hard"))


def test_a_file_size_property_no_file_size_is_falls_back_to_the_default():
    from olake_cow.core.filesize import MB, mirror_target_bytes, usable_file_size

    assert usable_file_size("lots") is None and usable_file_size("0") is None and usable_file_size(None) is None
    assert usable_file_size(str(64 * MB)) == 64 * MB
    assert mirror_target_bytes({"write.target-file-size-bytes": "lots"}) == 128 * MB


@pytest.mark.parametrize("answer, message", [
    ((404, "text/plain", b"not found"), "is not found (404), so no Iceberg REST catalog answers there"),
    ((403, "application/xml", b"<?xml version='1.0'?><Error><Code>AccessDenied</Code></Error>"),
     "with XML, as an S3 endpoint does"),
])
def test_a_rest_url_that_answers_as_something_else_is_refused_before_spark(answer, message):
    import http.server
    import threading

    from olake_cow.core.config import parse_destination
    from olake_cow.core.errors import ConfigError
    from olake_cow.preflight import check_rest_catalog

    status, kind, body = answer

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        cfg = parse_destination({"catalog_type": "rest", "iceberg_s3_path": "wh",
                                 "rest_catalog_url": f"http://127.0.0.1:{server.server_port}"})
        with pytest.raises(ConfigError, match=re.escape(message)):
            check_rest_catalog(cfg, timeout=5)
    finally:
        server.shutdown()
        server.server_close()


def test_one_source_has_one_truncating_stack_and_no_other():
    from infra.preflight import mode_conflict

    others = {"ro": {"SourceNamespaces": "sales,crm", "SourceMode": "readonly"},
              "tr": {"SourceNamespaces": "hr", "SourceMode": "truncate"}}
    assert "mirrored by stack 'ro' in readonly mode" in mode_conflict("new", ["sales"], "truncate", others)
    assert "mirrored by stack 'tr' in truncate mode" in mode_conflict("new", ["hr"], "readonly", others)
    assert "mirrored by stack 'tr' in truncate mode" in mode_conflict("new", ["hr"], "truncate", others)
    assert mode_conflict("new", ["sales"], "readonly", others) is None  # readonly beside readonly
    assert mode_conflict("new", ["ops"], "truncate", others) is None
    assert mode_conflict("new", ["ops"], "truncate", {"all": {"SourceNamespaces": "*"}}) is not None


def test_two_readonly_stacks_of_one_namespace_write_its_mirrors_alike():
    """Both write <ns>_cow: another delete mode would rebuild the mirrors at each run of either stack,
    another mirror format have each stack's runs refused on the other's mirrors."""
    from infra.preflight import mode_conflict

    others = {"ro": {"SourceNamespaces": "sales", "SourceMode": "readonly", "DeleteMode": "keep", "MirrorFormat": ""}}
    assert mode_conflict("new", ["sales"], "readonly", others, {}) is None  # the defaults are keep and ""
    assert mode_conflict("new", ["sales"], "readonly", others, {"DeleteMode": "keep"}) is None
    hard = mode_conflict("new", ["sales"], "readonly", others, {"DeleteMode": "hard"})
    assert "with DeleteMode='keep'" in hard and "sales_cow" in hard and "DeleteMode='hard'" in hard
    assert "MirrorFormat=''" in mode_conflict("new", ["sales"], "readonly", others, {"MirrorFormat": "dv"})
    assert mode_conflict("new", ["crm"], "readonly", others, {"DeleteMode": "hard"}) is None  # not shared
    assert mode_conflict("new", ["crm"], "readonly", {"all": {"SourceNamespaces": "*", "MirrorFormat": "dv"}},
                         {}) is not None


def test_the_columns_of_a_recreated_source_are_not_held_against_the_mirror():
    recreated = table(snap(1, None), uuid="new-uuid", fields={1: "_olake_id", 2: "v"})
    assert foreign_change(ours(snap(5, None, wap=M1)), recreated) is None  # `customer` is no user's addition


def test_a_file_system_namespace_without_tables_or_a_named_table_is_refused_before_spark(tmp_path):
    from olake_cow.cli import check_local_namespace
    from olake_cow.core.config import parse_destination
    from olake_cow.core.errors import ConfigError
    from olake_cow.core.options import JobOptions

    cfg = parse_destination({"catalog_type": "hadoop", "iceberg_s3_path": f"file://{tmp_path}"})
    job = JobOptions("sales", "sales_cow", None)
    with pytest.raises(ConfigError, match="namespace 'sales' does not exist"):
        check_local_namespace(cfg, job, None)
    (tmp_path / "sales").mkdir()
    with pytest.raises(ConfigError, match="namespace 'sales' holds no tables: nothing to mirror"):
        check_local_namespace(cfg, job, None)
    (tmp_path / "sales" / "orders" / "metadata").mkdir(parents=True)
    check_local_namespace(cfg, job, None)
    check_local_namespace(cfg, job, ["orders"])
    with pytest.raises(ConfigError, match=re.escape("table sales.refunds does not exist")):
        check_local_namespace(cfg, job, ["orders", "refunds"])
