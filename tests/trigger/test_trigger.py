"""The trigger Lambda end to end against moto: outcomes are read back from moto's state (job
runs, schedules, DynamoDB items) and from the EMF metrics printed on stdout."""
import json
import logging
import re

import pytest

from olake_trigger.events import EventError
from testkit.aws import BUCKET, SECRET_ID, SECRETS, emf_points, fixture

pytestmark = pytest.mark.aws


def args_of(run):
    return run["jobDriver"]["sparkSubmit"]["entryPointArguments"]


def arg(run, name):
    a = args_of(run)
    return a[a.index(name) + 1] if name in a else None


def metric(points, name, **dims):
    return [v for n, v, d in points if n == name and all(d.get(k) == x for k, x in dims.items())]


# --- each event kind starts the right job ----------------------------------------------------
def test_commit_event_starts_a_job_for_its_namespace_and_table(aws):
    aws.glue_table("sales", "orders", "source_new_commit")
    aws.glue_table("sales_cow", "orders_cow", "mirror_after_job")
    out = aws.invoke(aws.commit_event("sales", "orders"))
    assert out["status"] == "started", out
    [run] = aws.job_runs()
    assert run["jobRunId"] == out["job_run_id"]
    assert arg(run, "--secret-id") == SECRET_ID
    assert arg(run, "--source-namespace") == "sales"
    assert arg(run, "--cow-namespace") == "sales_cow"
    assert arg(run, "--tables") == "orders"
    assert arg(run, "--summary-out").startswith(f"s3://{BUCKET}/olake-cow/summaries/sales/sales-")
    params = run["jobDriver"]["sparkSubmit"]["sparkSubmitParameters"]
    assert "/usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar" in params
    assert f"--py-files s3://{BUCKET}/olake-cow/code/olake_cow.zip" in params
    assert run["jobDriver"]["sparkSubmit"]["entryPoint"] == f"s3://{BUCKET}/olake-cow/code/main.py"
    assert run["tags"] == {"olake-cow:namespace": "sales", "olake-cow:trigger": "commit"}
    mon = run["configurationOverrides"]["monitoringConfiguration"]
    assert mon["cloudWatchLoggingConfiguration"]["logGroupName"] == "/olake-cow/jobs"
    assert mon["s3MonitoringConfiguration"]["logUri"] == f"s3://{BUCKET}/olake-cow/logs/"
    assert run["executionTimeoutMinutes"] == 180
    item = aws.state_item("sales")
    assert item["job_run_id"]["S"] == run["jobRunId"] and "pending" not in item


def test_a_start_reads_each_glue_table_once(aws):
    from testkit import iam

    aws.glue_table("sales", "orders", "source_new_commit")
    aws.glue_table("sales_cow", "orders_cow", "mirror_after_job")
    with iam.api_calls() as seen:
        assert aws.invoke(aws.commit_event("sales", "orders"))["status"] == "started"
    reads = [(p["DatabaseName"], p["Name"]) for action, p, _ in seen if action == "glue:GetTable"]
    assert sorted(reads) == sorted(set(reads)) and ("sales", "orders") in reads, reads


def test_schedule_input_starts_one_job_per_namespace(aws):
    out = aws.invoke(fixture("schedule_input.json"))  # sales (orders only) and crm (all tables)
    assert out["status"] == "multiple"
    runs = {arg(r, "--source-namespace"): r for r in aws.job_runs()}
    assert set(runs) == {"sales", "crm"}
    assert arg(runs["sales"], "--tables") == "orders"
    assert arg(runs["crm"], "--tables") == "contacts"  # every table of the namespace with work (its only one)
    assert runs["crm"]["tags"]["olake-cow:trigger"] == "schedule"


def test_eventbridge_scheduled_event_with_namespaces_in_detail(aws):
    out = aws.invoke(fixture("scheduled_event.json"))
    assert out["status"] == "started"
    [run] = aws.job_runs()
    assert arg(run, "--source-namespace") == "sales" and arg(run, "--tables") == "orders"  # all with work


def test_direct_invocation_returns_the_job_run_id(aws):
    out = aws.invoke(fixture("direct.json"))
    [run] = aws.job_runs()
    assert out == {"namespace": "sales", "status": "started", "job_run_id": run["jobRunId"],
                   "client_token": out["client_token"], "tables": ["orders"], "summary": arg(run, "--summary-out")}
    assert run["tags"]["olake-cow:trigger"] == "direct"


def test_direct_dry_run_starts_nothing_and_shows_the_request(aws):
    out = aws.invoke({"namespace": "sales", "dry_run": True})
    assert out["status"] == "dry_run" and out["would_start"] is True
    assert out["request"]["jobDriver"]["sparkSubmit"]["entryPointArguments"][:4] == [
        "--secret-id", SECRET_ID, "--source-namespace", "sales"]
    assert aws.job_runs() == []


def test_client_token_is_stable_for_a_retried_invocation(aws):
    from olake_trigger.jobs import client_token

    window = "schedule:2026-11-21T02:00:00Z"
    assert client_token("sales", window) == client_token("sales", window)
    assert client_token("sales", "w1") != client_token("sales", "w2")
    assert client_token("sales", "w1") != client_token("crm", "w1")
    token = client_token("a namespace/with odd chars" * 5, "w")
    assert len(token) <= 64 and all(c.isalnum() or c in "._-" for c in token)


# --- debounce, single flight, duplicates -----------------------------------------------------
def test_ten_commit_events_in_the_quiet_period_start_one_job(aws):
    aws.apply_env(QUIET_PERIOD_SECONDS=60)
    for i in range(4):
        aws.glue_table("sales", f"t{i}", "source_new_commit")
    for i in range(10):
        out = aws.invoke(aws.commit_event("sales", f"t{i % 4}"))
        assert out["status"] == "debounced"
        aws.now += 5
    assert aws.job_runs() == []
    [schedule] = aws.schedules()
    # fires early (a commit moved the quiet period): nothing starts, the schedule moves
    aws.now -= 30
    early = aws.fire(schedule["Name"])
    assert early["status"] == "debounced" and early["due"] == aws.now + 30 - 5 + 60
    aws.now = early["due"]
    out = aws.fire(schedule["Name"])
    assert out["status"] == "started", out
    [run] = aws.job_runs()
    assert arg(run, "--tables") == "t0,t1,t2,t3"
    # a duplicate firing: queued while the run is going, and nothing left to do once it has ended
    aws.set_job_state(run["jobRunId"], "RUNNING")
    assert aws.fire(schedule["Name"])["status"] == "queued"
    aws.set_job_state(run["jobRunId"], "SUCCESS")
    assert aws.fire(schedule["Name"])["status"] == "skipped"
    assert len(aws.job_runs()) == 1


def test_events_while_a_job_runs_start_none_and_one_follow_up_after_it(aws):
    aws.glue_table("sales", "customers", "source_new_commit")
    aws.glue_table("sales", "idle", "source_after_job")
    aws.glue_table("sales_cow", "idle_cow", "mirror_after_job")
    first = aws.invoke(aws.commit_event("sales", "orders"))
    aws.set_job_state(first["job_run_id"], "RUNNING")
    for table in ("orders", "customers", "orders"):
        out = aws.invoke(aws.commit_event("sales", table))
        assert out["status"] == "queued" and out["job_run_id"] == first["job_run_id"]
    assert aws.invoke({"namespace": "sales"})["status"] == "queued"
    assert len(aws.job_runs()) == 1
    aws.set_job_state(first["job_run_id"], "SUCCESS")
    end = aws.invoke(aws.end_event(first["job_run_id"]))
    assert end["follow_up"]["status"] == "started", end
    runs = aws.job_runs()
    assert len(runs) == 2
    follow = [r for r in runs if r["jobRunId"] != first["job_run_id"]][0]
    # the direct request asked for all tables: each with new commits, not the idle one
    assert arg(follow, "--tables") == "customers,orders"
    assert follow["tags"]["olake-cow:trigger"] == "followup"
    # the same end event again, and a late RUNNING event: nothing more
    assert aws.invoke(aws.end_event(first["job_run_id"]))["status"] == "duplicate"
    assert aws.invoke(aws.end_event(first["job_run_id"], state="RUNNING"))["status"] == "ignored"
    assert len(aws.job_runs()) == 2


def test_a_duplicated_event_starts_nothing(aws):
    event = aws.commit_event("sales", "orders")
    assert aws.invoke(event)["status"] == "started"
    job = aws.job_runs()[0]["jobRunId"]
    aws.invoke(aws.end_event(job))
    assert aws.invoke(event)["status"] == "duplicate"
    assert len(aws.job_runs()) == 1


def test_a_delivery_that_crashed_midway_is_retried_not_dropped_as_a_duplicate(aws, monkeypatch):
    from olake_trigger.state import StateStore

    event = aws.commit_event("sales", "orders")
    real = StateStore.add_pending

    def crash(*args, **kwargs):
        raise RuntimeError("the Lambda died here")

    monkeypatch.setattr(StateStore, "add_pending", crash)
    with pytest.raises(RuntimeError):
        aws.invoke(event)
    assert aws.job_runs() == []
    monkeypatch.setattr(StateStore, "add_pending", real)
    assert aws.invoke(event)["status"] == "started"  # the async retry of the same delivery
    assert len(aws.job_runs()) == 1
    assert aws.invoke(event)["status"] == "duplicate"


def test_the_compactors_own_commits_and_mirror_commits_start_nothing(aws):
    own = aws.commit_event("sales", "orders", meta="source_after_job")  # current snapshot: our truncate
    assert aws.invoke(own)["status"] == "ignored"
    mirror = aws.commit_event("sales_cow", "orders_cow")
    assert "not a watched source namespace" in aws.invoke(mirror)["reason"]
    other = aws.commit_event("hr", "people")
    assert aws.invoke(other)["status"] == "ignored"
    data = fixture("s3_object_created.json")
    data["detail"]["object"]["key"] = "warehouse/sales/orders/data/00000-0-abc.parquet"
    assert aws.invoke(data)["status"] == "ignored"
    assert aws.job_runs() == []


def test_a_lost_end_event_is_noticed_by_the_next_trigger(aws):
    first = aws.invoke(aws.commit_event("sales", "orders"))["job_run_id"]
    # moto's run is already SUCCESS and no end event came: the next commit finishes it, then starts anew
    out = aws.invoke(aws.commit_event("sales", "orders"))
    assert out["status"] == "started" and out["job_run_id"] != first
    assert len(aws.job_runs()) == 2


# --- idle check (Glue) ---------------------------------------------------------------------
def test_no_new_source_commit_starts_nothing(aws, capsys):
    aws.glue_table("sales", "orders", "source_after_job")
    aws.glue_table("sales_cow", "orders_cow", "mirror_after_job")
    out = aws.invoke({"namespace": "sales"})
    assert out["status"] == "skipped", out
    assert aws.job_runs() == []
    assert metric(emf_points(capsys.readouterr().out), "Skipped", namespace="sales") == [1.0]
    assert "lease_until" not in aws.state_item("sales")  # the lease was given back


@pytest.mark.parametrize("source_meta, status", [
    ("ro_source_after_job", "skipped"),  # the mirror holds the current snapshot
    ("ro_source_rewritten", "skipped"),  # only another tool's rewrite since: content unchanged
    ("ro_source_new_commit", "started"),
])
def test_the_idle_check_reads_readonly_mirrors_with_the_jobs_planner(aws, source_meta, status):
    aws.glue_table("sales", "orders", source_meta)
    aws.glue_table("sales_cow", "orders_cow", "ro_mirror_after_job")
    out = aws.invoke({"namespace": "sales"})
    assert out["status"] == status, out
    assert len(aws.job_runs()) == (status == "started")


def test_only_tables_with_new_commits_are_compacted(aws):
    aws.glue_table("sales", "orders", "source_new_commit")
    aws.glue_table("sales", "refunds", "source_after_job")
    aws.glue_table("sales_cow", "orders_cow", "mirror_after_job")
    aws.glue_table("sales_cow", "refunds_cow", "mirror_after_job")
    out = aws.invoke({"namespace": "sales"})
    assert out["tables"] == ["orders"]
    [run] = aws.job_runs()
    assert arg(run, "--tables") == "orders"


def test_force_skips_the_idle_check(aws):
    aws.glue_table("sales", "orders", "source_after_job")
    aws.glue_table("sales_cow", "orders_cow", "mirror_after_job")
    assert aws.invoke({"namespace": "sales", "force": True})["status"] == "started"


REST_CONFIG = {"type": "ICEBERG", "writer": {
    "catalog_type": "polaris", "catalog_name": "lake", "rest_catalog_url": "https://catalog.example.com/api/catalog",
    "iceberg_s3_path": "lake_warehouse", "oauth2_uri": "https://catalog.example.com/api/catalog/v1/oauth/tokens",
    "credential": "client:Rest-Client-Secret-1", "scope": "PRINCIPAL_ROLE:ALL", "aws_region": "us-east-1"}}


def test_a_rest_catalog_is_not_read_by_the_trigger_each_request_starts_the_run_which_decides(aws):
    """The trigger reads only Glue (its role's GetTable and the metadata in S3). For a REST catalog it
    does not call the catalog (often outside the AWS network, with credentials the job holds): every
    commit or request starts the run, whose idle path commits nothing when nothing is new."""
    aws.sm.put_secret_value(SecretId=SECRET_ID, SecretString=json.dumps(REST_CONFIG))
    aws.apply_env(WAREHOUSE_LOCATION=f"s3://{BUCKET}/warehouse")  # the template's WarehouseBucket/Prefix
    out = aws.invoke(aws.commit_event("sales", "ghost_table_not_in_any_glue_db"))
    assert out["status"] == "started", out
    [run] = aws.job_runs()
    assert arg(run, "--tables") == "ghost_table_not_in_any_glue_db"
    aws.set_job_state(run["jobRunId"], "SUCCESS")
    aws.invoke(aws.end_event(run["jobRunId"], "SUCCESS"))
    assert aws.invoke({"namespace": "sales"})["status"] == "started"  # no Glue idle check either
    assert "Rest-Client-Secret-1" not in json.dumps(aws.job_runs(), default=str)


PERIODIC = {"trigger": "schedule", "namespaces": ["sales"],
            "maintenance": {"compact_files": True, "rewrite_manifests": True}}


def test_a_periodic_run_with_nothing_new_and_no_maintenance_due_starts_nothing(aws, capsys):
    aws.glue_table("sales", "orders", "source_after_job")
    aws.glue_table("sales_cow", "orders_cow", "mirror_after_job")
    out = aws.invoke({**PERIODIC, "window": "w1"})
    assert out["status"] == "skipped" and "no maintenance due" in out["reason"], out
    assert aws.job_runs() == []
    assert metric(emf_points(capsys.readouterr().out), "Skipped", namespace="sales") == [1.0]


def test_maintenance_that_is_due_starts_a_run_for_it(aws):
    aws.glue_table("sales", "orders", "source_after_job")
    aws.glue_table("sales_cow", "orders_cow", "mirror_after_job")
    # a month later: the source has snapshots older than its retention (up to the merged boundary)
    aws.now = max(s["timestamp-ms"] for s in fixture("source_after_job.metadata.json")["snapshots"]) / 1000 + 30 * 86400
    aws.apply_env(SOURCE_EXPIRY_HOURS="168")  # the stack asks for source expiry (it writes OLake's tables)
    out = aws.invoke({**PERIODIC, "window": "w2"})
    assert out["status"] == "started", out
    [run] = aws.job_runs()
    assert arg(run, "--tables") == "orders"
    assert args_of(run)[-4:] == ["--expire-source-older-than", "168", "--rewrite-manifests", "--compact-files"]


@pytest.mark.parametrize("recorded, status", [(None, "started"), ("40", "skipped"), ("32", "started")])
def test_compaction_is_not_due_again_until_files_were_added_since_the_last(aws, recorded, status):
    # 40 small files (one per date partition, say) that a compaction which left 40 could not join.
    mirror = fixture("mirror_after_job.metadata.json")
    current = next(s for s in mirror["snapshots"] if s["snapshot-id"] == mirror["current-snapshot-id"])
    current["summary"].update({"total-data-files": "40", "total-files-size": str(40 * 2**20)})
    if recorded is not None:
        mirror["properties"]["olake-cow.compacted-files"] = recorded
    aws.glue_table("sales", "orders", "source_after_job")
    aws.glue_table("sales_cow", "orders_cow", mirror)
    out = aws.invoke({"trigger": "schedule", "namespaces": ["sales"], "maintenance": {"compact_files": True},
                      "window": f"w-{recorded}"})
    assert out["status"] == status, out
    assert len(aws.job_runs()) == (status == "started")


def test_maintenance_in_a_direct_invocation(aws):
    aws.invoke({"namespace": "sales", "maintenance": {"only": True, "remove_orphans_hours": 72,
                                                      "orphans_dry_run": True}})
    [run] = aws.job_runs()
    assert args_of(run)[-4:] == ["--remove-orphans-older-than", "72", "--orphans-dry-run", "--maintenance-only"]


# --- config and bad input ----------------------------------------------------------------
@pytest.mark.parametrize("secret, why", [
    ('{"type": "ICEBERG", "writer": {"catalog_type": "jdbc", "jdbc_url": "jdbc:postgresql://db/x", '
     '"jdbc_password": "Pg-Secret-Password-1"}}', "writer.iceberg_s3_path is required"),
    ('{"type": "ICEBERG", "writer": {"catalog_type": "glue", "iceberg_s3_path": "s3://lake/w", '
     '"aws_secret_key": 12345678}}', "writer.aws_secret_key must be a string"),
    ("not json Pg-Secret-Password-1", "not valid JSON"),
])
def test_an_invalid_secret_starts_nothing_and_says_why(aws, capsys, caplog, secret, why):
    aws.sm.put_secret_value(SecretId=SECRET_ID, SecretString=secret)
    out = aws.invoke(aws.commit_event("sales", "orders"))
    assert out["status"] == "invalid_config" and why in out["reason"]
    assert aws.job_runs() == []
    captured = capsys.readouterr()
    logs = "\n".join(r.getMessage() for r in caplog.records)
    assert why in logs
    assert metric(emf_points(captured.out), "InvalidConfig") == [1.0]
    for value in ("Pg-Secret-Password-1", "12345678"):
        assert value not in captured.out + captured.err + logs


def test_a_missing_secret_says_which(aws):
    aws.apply_env(OLAKE_SECRET_ID="olake/nope")
    out = aws.invoke({"namespace": "sales"})
    assert out["status"] == "invalid_config" and "olake/nope" in out["reason"]
    assert "ResourceNotFoundException" in out["reason"]


@pytest.mark.parametrize("event, why", [
    ({"source": "aws.ec2", "detail-type": "EC2 Instance State-change Notification"}, "unsupported event"),
    ({"namespace": "sales", "table": "orders"}, "unknown key(s): table"),
    ({"namespace": ""}, "namespace name is empty"),
    ({"namespace": "sales", "tables": "   "}, "'tables' must be a non-empty list"),
    ({"namespace": "sales", "dry_run": "yes"}, "'dry_run' must be true or false"),
    ({"trigger": "schedule"}, "needs 'namespaces'"),
    ({"trigger": "schedule", "namespaces": ["a"], "tables": {"b": ["t"]}}, "not in 'namespaces'"),
    ({"trigger": "cron"}, "unknown trigger 'cron'"),
    ([1, 2], "must be a JSON object"),
    ({"namespace": "sales", "maintenance": {"expire_hours": 1}}, "'maintenance' has unknown key(s) expire_hours"),
    ({"namespace": "sales", "maintenance": {"expire_mirror_hours": "1d"}},
     "'maintenance.expire_mirror_hours' must be a number of hours"),
    ({"namespace": "sales", "maintenance": {"expire_mirror_hours": -2}},
     "'maintenance.expire_mirror_hours' must be a number of hours from 0 to"),
    ({"namespace": "Sales"}, "namespace 'Sales' is not one of this stack's source namespaces"),
    ({"namespace": "sales-db"}, "namespace 'sales-db' is not one of this stack's source namespaces"),
    ({"namespace": "sales", "tables": ["Orders"]}, "table name 'Orders' cannot be used with a glue catalog"),
    ({"namespace": "sales", "maintenance": {"orphans_dry_run": True}},
     "'maintenance.orphans_dry_run' needs 'maintenance.remove_orphans_hours'"),
    ({"namespace": "sales", "maintenance": {"only": True}}, "'maintenance.only' needs at least one"),
    ({"trigger": "schedule", "namespaces": ["sales"], "maintenance": ["compact"]}, "'maintenance' must be an object"),
    ({"namespace": "sales", "maintenance": {"compact_files": "yes"}}, "'maintenance.compact_files' must be true or"),
])
def test_anything_else_is_rejected_with_a_clear_error(aws, event, why):
    with pytest.raises(EventError, match=".*".join(map(__import__("re").escape, why.split(".*")))):
        aws.invoke(event)
    assert aws.job_runs() == []


def test_missing_environment_names_the_variables(aws, monkeypatch):
    monkeypatch.delenv("EMR_APPLICATION_ID")
    monkeypatch.delenv("JOB_ENTRY_POINT")
    from olake_trigger import handler

    handler.reset()
    out = aws.invoke({"namespace": "sales"})
    assert out["status"] == "invalid_settings"
    assert "EMR_APPLICATION_ID" in out["reason"] and "JOB_ENTRY_POINT" in out["reason"]


# --- results ---------------------------------------------------------------------------
SUMMARY = {
    "status": "failed", "duration_s": 95.5, "finished_at": "2026-11-21T10:30:00+00:00",
    "tables": [
        {"table": "orders", "status": "merged", "rows_upserted": 120, "rows_deleted": 7, "files_written": 3,
         "duration_s": 40.0, "last_change_ms": 1795000000000 + 0, "merges": 1},
        {"table": "refunds", "status": "up_to_date", "rows_upserted": 0, "rows_deleted": 0, "files_written": 0,
         "duration_s": 2.0, "last_change_ms": None},
        {"table": "returns", "status": "failed", "error": "boom", "duration_s": 1.0},
    ],
}


def test_a_jobs_end_publishes_metrics_from_its_summary(aws, capsys):
    started = aws.invoke({"namespace": "sales"})
    [run] = aws.job_runs()
    finished_ms = 1795000000000 + 600_000
    summary = dict(SUMMARY, finished_at="2026-11-21T10:30:00+00:00")
    summary["tables"][0]["last_change_ms"] = finished_ms - 600_000
    import datetime as dt

    summary["finished_at"] = dt.datetime.fromtimestamp(finished_ms / 1000, dt.timezone.utc).isoformat()
    aws.put_summary(run, summary)
    capsys.readouterr()
    out = aws.invoke(aws.end_event(started["job_run_id"]))
    assert out["status"] == "finished" and out["summary_status"] == "failed"
    points = emf_points(capsys.readouterr().out)
    ns = {"namespace": "sales"}
    assert metric(points, "TablesMerged", **ns) == [1.0]
    assert metric(points, "TablesFailed", **ns) == [1.0]
    assert metric(points, "RowsUpserted", **ns)[-1] == 120.0
    assert metric(points, "RowsDeleted", table="orders") == [7.0]
    assert metric(points, "FilesWritten", table="orders") == [3.0]
    assert metric(points, "TableFailed", table="returns") == [1.0]
    assert metric(points, "LagSeconds", table="orders") == [600.0]
    assert metric(points, "DurationSeconds", table="orders") == [40.0]
    assert 95.5 in metric(points, "DurationSeconds", **ns)
    assert metric(points, "JobFailed", **ns) == [1.0]  # a table failed
    # the alarm series (service dimension only) gets the same failure and lag
    assert [v for n, v, d in points if n == "JobFailed" and set(d) == {"service"}] == [1.0]
    assert [v for n, v, d in points if n == "LagSeconds" and set(d) == {"service"}] == [600.0]
    assert "lease_until" not in aws.state_item("sales")


def test_a_cancelled_job_without_summary_counts_a_failure(aws, capsys):
    job = aws.invoke({"namespace": "sales"})["job_run_id"]
    capsys.readouterr()
    out = aws.invoke(aws.end_event(job, state="CANCELLED"))
    assert out["status"] == "finished"
    assert metric(emf_points(capsys.readouterr().out), "JobFailed", namespace="sales") == [1.0]


def test_end_events_of_other_applications_or_jobs_are_ignored(aws):
    assert aws.invoke(aws.end_event("00x", app_id="other-app"))["status"] == "ignored"
    other = aws.emr.start_job_run(applicationId=aws.app_id, clientToken="x", name="someone else",
                                  executionRoleArn=aws.env["EMR_EXECUTION_ROLE_ARN"],
                                  jobDriver={"sparkSubmit": {"entryPoint": "s3://x/y.py"}})
    assert aws.invoke(aws.end_event(other["jobRunId"]))["status"] == "ignored"


# --- secrets ---------------------------------------------------------------------------
def test_no_secret_value_in_logs_or_job_arguments(aws, capsys, caplog):
    aws.glue_table("sales", "orders", "source_new_commit")
    aws.invoke(aws.commit_event("sales", "orders"))
    aws.invoke(fixture("schedule_input.json"))
    aws.invoke({"namespace": "sales", "dry_run": True})
    for run in aws.job_runs():
        aws.invoke(aws.end_event(run["jobRunId"], state="FAILED"))
    captured = capsys.readouterr()
    texts = {"stdout": captured.out, "stderr": captured.err,
             "log records": "\n".join(r.getMessage() for r in caplog.records),
             "job runs": json.dumps(aws.job_runs(), default=str)}
    runs = aws.job_runs()
    # the commit's run, then the schedule's two: every one of them carries the secret's id, not its values
    assert sorted((r["tags"]["olake-cow:namespace"], r["tags"]["olake-cow:trigger"]) for r in runs) == [
        ("crm", "schedule"), ("sales", "commit"), ("sales", "schedule")]
    for run in runs:
        args = run["jobDriver"]["sparkSubmit"]["entryPointArguments"]
        assert args[args.index("--secret-id") + 1] == SECRET_ID
    for value in SECRETS.values():
        for where, text in texts.items():
            assert value not in text, f"secret leaked into {where}"


def test_source_mode_and_verify_reach_the_job_from_a_payload_or_the_deployment(aws):
    out = aws.invoke({"namespace": "sales", "source_mode": "truncate", "verify": True})
    assert out["status"] == "started", out
    [run] = aws.job_runs()
    assert arg(run, "--source-mode") == "truncate" and "--verify" in args_of(run)
    aws.apply_env(SOURCE_MODE="readonly")
    out = aws.invoke({"trigger": "schedule", "namespaces": ["crm"], "window": "w9", "force": True})
    crm = [r for r in aws.job_runs() if arg(r, "--source-mode") and r["jobRunId"] == out["job_run_id"]]
    assert crm and arg(crm[0], "--source-mode") == "readonly" and "--verify" not in args_of(crm[0])


@pytest.mark.parametrize("event, why", [
    ({"namespace": "sales", "source_mode": "sometimes"}, "'source_mode' must be readonly or truncate"),
    ({"trigger": "schedule", "namespaces": ["sales"], "verify": True}, "unknown key(s): verify"),
])
def test_bad_mode_or_keys_in_a_payload_are_named(aws, event, why):
    with pytest.raises(EventError, match=re.escape(why)):
        aws.invoke(event)
    assert aws.job_runs() == []


@pytest.mark.parametrize("event", [
    {"namespace": "sales", "maintenance": {"expire_source_hours": 24, "expire_mirror_hours": 24}},
    {"trigger": "schedule", "namespaces": ["sales"], "maintenance": {"expire_source_hours": 168}},
])
def test_source_expiry_in_a_request_is_refused_because_it_writes_olakes_tables(aws, event):
    with pytest.raises(EventError, match="source expiry writes OLake's tables"):
        aws.invoke(event)
    assert aws.job_runs() == []


def test_only_the_stacks_source_expiry_setting_makes_periodic_runs_expire_source_snapshots(aws):
    out = aws.invoke({**PERIODIC, "window": "w1", "force": True})
    [run] = aws.job_runs()
    assert out["status"] == "started" and "--expire-source-older-than" not in args_of(run)
    aws.apply_env(SOURCE_EXPIRY_HOURS="72")
    aws.invoke({**PERIODIC, "window": "w2", "force": True})
    aws.invoke({"namespace": "sales", "force": True, "maintenance": {"compact_files": True}})
    periodic, direct = [r for r in aws.job_runs() if r["jobRunId"] != run["jobRunId"]]
    if "--expire-source-older-than" not in args_of(periodic):
        periodic, direct = direct, periodic
    assert arg(periodic, "--expire-source-older-than") == "72"
    assert "--expire-source-older-than" not in args_of(direct)  # an on-demand run never does


def test_a_runs_end_publishes_what_emr_billed_and_its_estimated_cost(aws, capsys):
    from moto.emrserverless.models import emrserverless_backends

    from testkit.aws import ACCOUNT, REGION

    job = aws.invoke({"namespace": "sales"})["job_run_id"]
    for run in emrserverless_backends[ACCOUNT][REGION].job_runs[aws.app_id]:
        run.billed_resource_utilization = {"vCPUHour": 2.5, "memoryGBHour": 10.0, "storageGBHour": 1.0}
    aws.apply_env(PRICE_VCPU_HOUR="0.05", PRICE_GB_HOUR="0.005", PRICE_STORAGE_GB_HOUR="0.0001")
    capsys.readouterr()
    assert aws.invoke(aws.end_event(job))["status"] == "finished"
    points = emf_points(capsys.readouterr().out)
    ns = {"namespace": "sales"}
    assert metric(points, "BilledVCPUHours", **ns) == [2.5]
    assert metric(points, "BilledMemoryGBHours", **ns) == [10.0]
    assert metric(points, "BilledStorageGBHours", **ns) == [1.0]
    assert metric(points, "EstimatedCostUSD", **ns) == [pytest.approx(2.5 * 0.05 + 10 * 0.005 + 0.0001)]


def test_a_runs_metrics_name_the_mirror_format_and_mode_without_a_billed_dimension(aws, capsys):
    job = aws.invoke({"namespace": "sales"})["job_run_id"]
    [run] = aws.job_runs()
    summary = json.loads(json.dumps(SUMMARY))
    summary["tables"][0].update(mirror_format="dv", source_mode="readonly")
    summary["tables"][1].update(mirror_format="cow", source_mode="readonly")
    aws.put_summary(run, summary)
    capsys.readouterr()
    assert aws.invoke(aws.end_event(job))["status"] == "finished"
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    merged = [r for r in records if "TablesMerged" in r and r.get("namespace") == "sales"]
    assert merged and merged[0]["mirror_format"] == "cow,dv" and merged[0]["source_mode"] == "readonly"
    dims = {d for group in merged[0]["_aws"]["CloudWatchMetrics"][0]["Dimensions"] for d in group}
    assert dims == {"namespace", "service"}  # the format is metadata, not a dimension
    per_table = [r for r in records if r.get("table") == "orders" and "RowsUpserted" in r]
    assert per_table and per_table[0]["mirror_format"] == "dv"


# --- tables the job would skip or refuse never start a run ------------------------------------
def _without_key(meta):
    """The metadata of a plain Iceberg table: OLake's table with `_olake_id` renamed away."""
    out = json.loads(json.dumps(meta))
    for schema in out["schemas"]:
        for f in schema["fields"]:
            if f["name"] == "_olake_id":
                f["name"] = "id"
    return out


def _foreign(meta):
    """A user's table at the mirror's name: no olake-cow property, no checkpoint marker."""
    out = json.loads(json.dumps(meta))
    out["properties"] = {k: v for k, v in out["properties"].items() if not k.startswith("olake-cow")}
    for snap in out["snapshots"]:
        for key in ("wap.id", "published-wap-id"):
            snap["summary"].pop(key, None)
    return out


def _format_v1(meta):
    """OLake's table as an Iceberg v1 table: readonly mode reads only v2 row-level deletes (the
    planner's Blocked step: the run would fail the table until the user acts)."""
    return dict(json.loads(json.dumps(meta)), **{"format-version": 1})


@pytest.mark.parametrize("source, mirror, needs_you", [
    (lambda: _without_key(fixture("ro_source_new_commit.metadata.json")), lambda: None, None),
    (lambda: fixture("ro_source_new_commit.metadata.json"),
     lambda: _foreign(fixture("ro_mirror_after_job.metadata.json")), "was not made by olake-cow"),
    (lambda: _format_v1(fixture("ro_source_new_commit.metadata.json")),
     lambda: fixture("ro_mirror_after_job.metadata.json"), "format version 1"),
], ids=["no-olake-id", "foreign-mirror", "blocked-step"])
def test_a_table_the_job_would_skip_or_refuse_starts_no_run_on_a_schedule(aws, capsys, caplog, source, mirror,
                                                                           needs_you):
    """A table the job would skip (not OLake's) starts no run, quietly; one it would fail (a
    refusal, a Blocked step) starts no run either, since every run could only fail until the user
    acts, but is reported as needing them: the answer names it, the log says why and the
    TablesBlocked metric, which the stack alarms on, counts it."""
    aws.glue_table("sales", "orders", source())
    if mirror() is not None:
        aws.glue_table("sales_cow", "orders_cow", mirror())
    capsys.readouterr()
    trigger_log = logging.getLogger("olake_trigger")  # Powertools' handler does not pass it on to caplog's
    trigger_log.addHandler(caplog.handler)
    try:
        out = aws.invoke({"namespace": "sales", "tables": ["orders"]})
    finally:
        trigger_log.removeHandler(caplog.handler)
    assert out["status"] == "skipped", out
    assert aws.job_runs() == []
    blocked = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"TablesBlocked"' in line]
    if needs_you is None:
        assert "needs_you" not in out and not blocked, (out, blocked)
        return
    assert set(out["needs_you"]) == {"orders"} and needs_you in out["needs_you"]["orders"], out
    assert "orders" in out["reason"] and "need(s) you" in out["reason"], out
    assert any("sales.orders needs you" in r.getMessage() and r.levelname == "ERROR" for r in caplog.records)
    alarmed = [r for r in blocked if "namespace" not in r]  # the service-wide point the alarm watches
    assert alarmed and alarmed[0]["TablesBlocked"] == [1.0], blocked


def test_a_stack_asking_another_mode_than_the_mirrors_starts_no_run_and_says_how_to_switch(aws):
    """SourceMode=truncate on a stack whose mirror was built readonly: the run would refuse the
    table at every sync (a run does not change a mirror's mode), so none is started; the answer
    carries the job's own advice and TablesBlocked counts it."""
    aws.apply_env(SOURCE_MODE="truncate")
    aws.glue_table("sales", "orders", fixture("ro_source_new_commit.metadata.json"))
    aws.glue_table("sales_cow", "orders_cow", fixture("ro_mirror_after_job.metadata.json"))
    out = aws.invoke({"namespace": "sales", "tables": ["orders"]})
    assert out["status"] == "skipped" and aws.job_runs() == [], out
    assert "built in readonly mode" in out["needs_you"]["orders"], out


def test_a_large_schemas_first_sync_is_one_run_of_the_namespace_with_a_small_state_item(aws):
    """1,000 tables of 155-character names commit in one sync: their names alone are 155 KB (5,000
    would pass DynamoDB's 400 KB item). The pending set becomes "all tables" and no item nears 100 KB."""
    aws.apply_env(QUIET_PERIOD_SECONDS=60)
    names = [f"t{i:05d}_" + "x" * 148 for i in range(1000)]
    assert {len(n) for n in names} == {155}
    largest = 0
    for i, name in enumerate(names):
        out = aws.invoke(aws.commit_event("sales", name))
        assert out["status"] == "debounced", out
        if i % 50 == 0 or i == len(names) - 1:
            item = aws.state_item("sales")
            largest = max(largest, len(json.dumps(item)))
    assert largest < 100_000, largest
    assert aws.state_item("sales")["pending"]["SS"] == ["*"]
    [schedule] = aws.schedules()
    aws.now += 61
    aws.glue_table("sales", names[0], "source_new_commit")
    out = aws.fire(schedule["Name"])
    assert out["status"] == "started", out
    [run] = aws.job_runs()
    # every table of the namespace was checked (orders had no commit event), and those with work run
    assert arg(run, "--tables").split(",") == ["orders", names[0]]
