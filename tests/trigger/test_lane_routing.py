"""The express lane, trigger side, against moto: which tables go to the merge function and which to
EMR (budget, lane off, unsupported catalog, mode or format), one lease for both (a lane run in
flight starts no EMR run), and the lane's end (its destination record): what it left goes to EMR,
once. The merge function itself runs on real Iceberg tables in tests/spark/test_express_lane.py."""
import json

import pytest

from testkit.aws import SECRET_ID, emf_points, fixture

pytestmark = pytest.mark.aws
MB = 1024 * 1024


def args_of(run):
    return run["jobDriver"]["sparkSubmit"]["entryPointArguments"]


def arg(args, name):
    return args[args.index(name) + 1] if name in args else None


def big_commit(mb=600):
    """The readonly source with its newest commit adding `mb` MB (over the lane's 256 MB budget)."""
    meta = fixture("ro_source_new_commit.metadata.json")
    newest = max(meta["snapshots"], key=lambda s: s["sequence-number"])
    newest["summary"]["added-files-size"] = str(mb * MB)
    return meta


def readonly(aws, *tables, big=()):
    """Readonly sources with a commit their mirrors have not absorbed; `big` ones over the budget."""
    for t in tables:
        aws.glue_table("sales", t, big_commit() if t in big else "ro_source_new_commit")
        mirror = fixture("ro_mirror_after_job.metadata.json")
        mirror["properties"]["olake-cow.source-table"] = f"sales.{t}"
        aws.glue_table("sales_cow", f"{t}_cow", mirror)


def lane_payload(aws):
    [payload] = aws.lane_requests
    return payload


def test_a_merge_that_fits_goes_to_the_merge_function_and_no_emr_run_starts(aws):
    aws.add_merge_function()
    readonly(aws, "orders")
    out = aws.invoke({"namespace": "sales"})
    assert out["status"] == "started" and out["engine"] == "lambda", out
    assert out["routing"] == {"orders": "fits the lane's budget"} and out["tables"] == ["orders"]
    assert aws.job_runs() == []
    body = lane_payload(aws)["olake_cow_lane"]
    assert body["run_id"] == out["job_run_id"] and body["run_id"].startswith("lane-")
    assert body["tables"] == ["orders"] and body["max_mb"] == 256 and body["emr_after"] == []
    # the job's own command line, the secret by its id only
    assert arg(body["argv"], "--secret-id") == SECRET_ID and arg(body["argv"], "--tables") == "orders"
    assert arg(body["argv"], "--summary-out") == out["summary"]
    item = aws.state_item("sales")
    assert item["job_run_id"]["S"] == body["run_id"]
    # the lane's lease: the function's timeout twice (one retry) and the margin, not an EMR run's 3.5 h
    assert int(item["lease_until"]["N"]) == int(aws.now) + 2 * 600 + 30 * 60


def test_a_merge_over_the_budget_goes_to_emr(aws):
    aws.add_merge_function()
    readonly(aws, "orders", big=["orders"])
    out = aws.invoke({"namespace": "sales"})
    assert out["engine"] == "emr" and "over the python engine's budget of 256 MB" in out["routing"]["orders"], out
    assert aws.lane_requests == [] and len(aws.job_runs()) == 1


def test_the_budget_is_the_stacks(aws):
    aws.add_merge_function(EXPRESS_LANE_MAX_MB=1024)
    readonly(aws, "orders", big=["orders"])
    out = aws.invoke({"namespace": "sales"})
    assert out["engine"] == "lambda", out
    assert lane_payload(aws)["olake_cow_lane"]["max_mb"] == 1024


@pytest.mark.parametrize("env, reason", [
    ({"EXPRESS_LANE_MAX_MB": 0}, "budget is 0 MB"),
    ({"MIRROR_FORMAT": "dv"}, "dv mirrors run on EMR"),
])
def test_a_closed_lane_sends_everything_to_emr(aws, env, reason):
    aws.add_merge_function(**env)
    readonly(aws, "orders")
    out = aws.invoke({"namespace": "sales"})
    assert out["engine"] == "emr" and reason in out["routing"]["*"], out
    assert aws.lane_requests == [] and len(aws.job_runs()) == 1


def test_without_the_lane_nothing_changes(aws):
    readonly(aws, "orders")
    out = aws.invoke({"namespace": "sales"})
    assert out["status"] == "started" and "engine" not in out and "routing" not in out, out
    assert aws.lane_requests == [] and len(aws.job_runs()) == 1


@pytest.mark.parametrize("request_extra, reason", [
    ({"force": True}, "a forced run goes to EMR"),
    ({"verify": True}, "--verify runs on EMR"),
    ({"maintenance": {"compact_files": True}}, "maintenance runs on EMR"),
])
def test_what_the_python_engine_does_not_run_goes_to_emr(aws, request_extra, reason):
    aws.add_merge_function()
    readonly(aws, "orders")
    out = aws.invoke({"namespace": "sales", **request_extra})
    assert out["engine"] == "emr" and reason in out["routing"]["*"], out
    assert aws.lane_requests == []


def test_a_truncate_mode_mirror_goes_to_emr(aws):
    aws.add_merge_function()
    aws.glue_table("sales", "orders", "source_new_commit")
    aws.glue_table("sales_cow", "orders_cow", "mirror_after_job")
    out = aws.invoke({"namespace": "sales"})
    assert out["engine"] == "emr" and "truncate mode" in out["routing"]["orders"], out


def test_a_first_build_goes_to_emr(aws):
    aws.add_merge_function()
    aws.glue_table("sales", "fresh", "ro_source_new_commit")
    out = aws.invoke({"namespace": "sales", "tables": ["fresh"]})
    assert out["engine"] == "emr" and "first build" in out["routing"]["fresh"], out


@pytest.mark.parametrize("writer, lane", [
    ({"catalog_type": "hive", "hive_uri": "thrift://metastore:9083"}, False),
    ({"catalog_type": "jdbc", "jdbc_url": "jdbc:mysql://db:3306/iceberg"}, False),
    ({"catalog_type": "jdbc", "jdbc_url": "jdbc:postgresql://db:5432/iceberg", "jdbc_username": "u",
      "jdbc_password": "p"}, True),
])
def test_a_catalog_the_trigger_cannot_read_goes_to_the_lane_only_if_the_python_engine_opens_it(aws, writer, lane):
    """No metadata from the Lambda: the merge function asks the catalog itself and hands back what
    does not fit."""
    aws.add_merge_function(JOB_EXTRA_JARS="s3://lake/jars/driver.jar")
    config = {"type": "ICEBERG", "writer": {"catalog_name": "lake", "iceberg_s3_path": "s3://lake/warehouse",
                                            "aws_region": "us-east-1", **writer}}
    aws.sm.put_secret_value(SecretId=SECRET_ID, SecretString=json.dumps(config))
    out = aws.invoke({"namespace": "sales", "tables": ["orders"]})
    assert out["status"] == "started" and out["engine"] == ("lambda" if lane else "emr"), out
    assert len(aws.lane_requests) == lane and len(aws.job_runs()) == (not lane)
    if not lane:
        assert "EMR runs it" in out["routing"]["*"]


def test_tables_over_the_budget_wait_for_one_emr_run_after_the_lane(aws, capsys):
    aws.add_merge_function()
    readonly(aws, "orders", "refunds", big=["refunds"])
    out = aws.invoke({"namespace": "sales"})
    assert out["engine"] == "lambda" and out["tables"] == ["orders"] and out["emr_after"] == ["refunds"], out
    assert aws.job_runs() == []  # never both at once: one lease
    request = lane_payload(aws)
    end = aws.invoke(aws.lane_end_event(request, {"status": "succeeded", "unfinished": [], "duration_s": 4.2}))
    assert end["status"] == "finished" and end["engine"] == "lambda", end
    assert end["follow_up"]["status"] == "started" and end["follow_up"]["tables"] == ["refunds"], end
    [run] = aws.job_runs()
    assert arg(args_of(run), "--tables") == "refunds" and run["tags"]["olake-cow:trigger"] == "lane-handover"
    points = emf_points(capsys.readouterr().out)
    billed = [v for n, v, d in points if n == "BilledLambdaGBSeconds"]
    assert billed == [round(4.2 * 3008 / 1024, 3)]
    assert [v for n, v, d in points if n == "Runs" and d.get("engine") == "lambda"] == [1.0]


def test_what_the_lane_hands_over_goes_to_emr_once(aws):
    aws.add_merge_function()
    readonly(aws, "orders", "refunds")
    aws.invoke({"namespace": "sales"})
    request = lane_payload(aws)
    assert request["olake_cow_lane"]["tables"] == ["orders", "refunds"]
    end = aws.invoke(aws.lane_end_event(request, {"status": "succeeded", "unfinished": ["refunds"]}))
    # the summary the lane wrote says so too: the trigger reads it, as it reads an EMR run's
    [run] = aws.job_runs()
    assert arg(args_of(run), "--tables") == "refunds", end
    # EMR's end: the follow-up (nothing pending) goes nowhere; the lane is not asked again for refunds
    aws.lane_requests.clear()
    assert aws.invoke(aws.end_event(run["jobRunId"]))["status"] == "finished"
    assert aws.lane_requests == [] and len(aws.job_runs()) == 1


@pytest.mark.parametrize("condition", ["RetriesExhausted", "EventAgeExceeded"])
def test_a_lane_that_failed_or_timed_out_hands_all_its_tables_to_emr(aws, condition):
    aws.add_merge_function()
    readonly(aws, "orders")
    aws.invoke({"namespace": "sales"})
    request = lane_payload(aws)
    end = aws.invoke(aws.lane_end_event(request, condition=condition, invocations=2))
    assert end["status"] == "finished" and end["follow_up"]["engine"] == "emr", end
    assert "the express lane handed these tables to EMR" in end["follow_up"]["routing"]["*"]
    [run] = aws.job_runs()
    assert arg(args_of(run), "--tables") == "orders"


def test_a_lane_in_flight_holds_the_namespace_against_emr(aws):
    aws.add_merge_function()
    readonly(aws, "orders")
    first = aws.invoke({"namespace": "sales"})
    assert first["engine"] == "lambda"
    queued = aws.invoke({"namespace": "sales", "tables": ["orders"]})
    assert queued["status"] == "queued" and queued["job_run_id"] == first["job_run_id"], queued
    assert aws.job_runs() == [] and len(aws.lane_requests) == 1
    # its end starts the follow-up for what was queued: routed again (it fits: the lane)
    end = aws.invoke(aws.lane_end_event(aws.lane_requests[0], {"status": "succeeded", "unfinished": []}))
    assert end["follow_up"]["status"] == "started" and end["follow_up"]["engine"] == "lambda", end
    assert aws.job_runs() == []


def test_a_lost_lane_end_frees_the_namespace_when_its_lease_ends(aws):
    aws.add_merge_function()
    readonly(aws, "orders")
    aws.invoke({"namespace": "sales"})
    aws.now += 2 * 600 + 30 * 60 + 1
    again = aws.invoke({"namespace": "sales"})
    assert again["status"] == "started" and again["job_run_id"] != aws.lane_requests[0]["olake_cow_lane"]["run_id"]


def test_a_lane_end_delivered_twice_is_handled_once(aws):
    aws.add_merge_function()
    readonly(aws, "orders", "refunds", big=["refunds"])
    aws.invoke({"namespace": "sales"})
    event = aws.lane_end_event(lane_payload(aws), {"status": "succeeded", "unfinished": []})
    assert aws.invoke(event)["status"] == "finished"
    assert aws.invoke(event)["status"] == "duplicate"
    assert len(aws.job_runs()) == 1


def test_a_dry_run_shows_the_route(aws):
    aws.add_merge_function()
    readonly(aws, "orders", "refunds", big=["refunds"])
    out = aws.invoke({"namespace": "sales", "dry_run": True})
    assert out["status"] == "dry_run" and out["engine"] == "lambda" and out["emr_after"] == ["refunds"], out
    assert aws.lane_requests == [] and aws.job_runs() == []


def test_a_forged_lane_end_is_rejected(aws):
    from olake_trigger.events import EventError

    event = aws.lane_end_event({"olake_cow_lane": {"namespace": "sales", "run_id": "not-a-lane", "argv": [],
                                                   "max_mb": 1, "tables": None}})
    with pytest.raises(EventError, match="must start with 'lane-'"):
        aws.invoke(event)
