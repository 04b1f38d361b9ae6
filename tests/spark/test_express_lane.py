"""The express lane end to end on real Iceberg tables: OLake's tables in Glue and S3 on a moto server,
the trigger's handler and the merge function's handler run in-process against it (as Lambda would
run them, with the payload the trigger sent), EMR Serverless stood in by moto. A small sync is
mirrored by the merge function; what it cannot do (a new column, a truncate-mode table) comes back
and goes to one EMR run; the merge function's calls are granted by the template's MergeRole."""
import json
import urllib.request
import uuid
from types import SimpleNamespace

import pytest

from olake_cow.spark.session import local_aws_jars
from testkit.catalogs import KEY, REGION, glue_destination, glue_io, recorded_calls, renamed
from testkit.lakes import first_build, olake_changes

pytestmark = [pytest.mark.spark, pytest.mark.skipif(not local_aws_jars(), reason="AWS SDK jars not installed "
                                                    "(make setup)")]


@pytest.fixture
def lane(moto_s3_glue_server, make_lake, monkeypatch):
    """(a readonly Glue lake, the trigger's account on the same moto server with the merge function)."""
    from testkit.aws import Account

    url = moto_s3_glue_server.url
    request = urllib.request.Request(f"{url}/moto-api/config", data=json.dumps(
        {"lambda": {"use_docker": False}}).encode(), method="POST")  # the function is invoked, never run there
    urllib.request.urlopen(request, timeout=30).close()
    destination = renamed(glue_destination(url), "gluelane")
    lake = make_lake(destination, "glue", "readonly", "cow", glue_io(url))
    for k, v in {"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": KEY,
                 "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION, "POWERTOOLS_TRACE_DISABLED": "true",
                 "POWERTOOLS_SERVICE_NAME": "olake-cow-trigger", "POWERTOOLS_METRICS_NAMESPACE": "OlakeCow"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.setattr("testkit.aws.SECRET_ID", f"olake/{lake.ns}")
    account = Account(monkeypatch, config=destination, seed=False)
    account.add_merge_function(SOURCE_NAMESPACES=lake.ns, OLAKE_SECRET_ID=account.secret_arn)
    yield lake, account
    from olake_trigger import handler

    handler.reset()


def merge_function(payload):
    """The merge function's handler in-process, as Lambda runs it for an asynchronous invocation."""
    from olake_merge import handler

    ctx = SimpleNamespace(function_name="olake-cow-merge", memory_limit_in_mb=3008, aws_request_id=str(uuid.uuid4()),
                          invoked_function_arn=f"arn:aws:lambda:{REGION}:123456789012:function:olake-cow-merge")
    return handler.lambda_handler(json.loads(json.dumps(payload)), ctx)


def summary_at(account, uri):
    bucket, key = uri[len("s3://"):].split("/", 1)
    return json.loads(account.s3.get_object(Bucket=bucket, Key=key)["Body"].read())


def test_a_small_sync_is_mirrored_by_the_merge_function_with_no_emr_run(lane):
    lake, account = lane
    first_build(lake)
    olake_changes(lake, 10)
    started = account.invoke({"namespace": lake.ns})
    assert started["status"] == "started" and started["engine"] == "lambda", started
    [payload] = account.lane_requests
    answer = merge_function(payload)
    assert answer["status"] == "succeeded" and answer["unfinished"] == [], answer
    lake.assert_mirror_matches("t", engines=["pyiceberg"])  # the OLake writer's model, read back
    [entry] = summary_at(account, started["summary"])["tables"]
    assert entry["engine"] == "python" and entry["status"] == "merged", entry
    end = account.invoke(account.lane_end_event(payload, answer))
    assert end["status"] == "finished" and end["summary_status"] == "succeeded" and "follow_up" not in end, end
    assert account.job_runs() == []
    # nothing new: the trigger's metadata check and the job agree
    assert account.invoke({"namespace": lake.ns})["status"] == "skipped"


def test_what_the_merge_function_cannot_do_goes_to_one_emr_run(lane):
    """The trigger sends a small sync to the merge function; before it runs, OLake's table gains a
    list of structs (pyiceberg would turn a null one into []): the function hands the table back,
    and the lane's end starts the one EMR run that mirrors it."""
    lake, account = lane
    first_build(lake)
    lake.writer.commit("t", [{"_olake_id": "100", "_op_type": "c", "v": 5, "s": "x"}])
    started = account.invoke({"namespace": lake.ns})
    assert started["engine"] == "lambda", started
    [payload] = account.lane_requests
    lake.writer.add_column("t", "l", "array<struct<p:int>>")
    lake.writer.commit("t", [{"_olake_id": "101", "_op_type": "c", "v": 6, "s": "y", "l": None}])
    answer = merge_function(payload)
    assert answer["status"] == "succeeded" and answer["unfinished"] == ["t"], answer
    [entry] = summary_at(account, started["summary"])["tables"]
    assert entry["status"] == "handed_over" and "column l" in entry["engine_reason"], entry
    end = account.invoke(account.lane_end_event(payload, answer))
    emr = end["follow_up"]
    assert emr["status"] == "started" and emr["engine"] == "emr" and emr["tables"] == ["t"], end
    # the EMR run, as EMR would run it: the job's command line of the request
    [run] = account.job_runs()
    args = run["jobDriver"]["sparkSubmit"]["entryPointArguments"]
    assert lake.run_raw(*[a for a in args if a not in ("--secret-id", account.secret_arn)]) == 0
    lake.assert_mirror_matches("t")


def test_a_table_the_merge_function_cannot_carry_goes_straight_to_emr(lane):
    """A list of structs the trigger reads in the table's metadata: no merge function is invoked for
    it, one EMR run is started, and the routing says why."""
    lake, account = lane
    first_build(lake)
    lake.writer.add_column("t", "l", "array<struct<p:int>>")
    lake.writer.commit("t", [{"_olake_id": "100", "_op_type": "c", "v": 5, "s": "x", "l": [{"p": 1}]}])
    started = account.invoke({"namespace": lake.ns})
    assert started["status"] == "started" and started["engine"] == "emr", started
    assert "column l" in started["routing"]["t"], started
    assert account.lane_requests == []


def test_the_merge_function_hands_a_truncate_mode_table_back_untouched(lane, make_lake):
    lake, account = lane
    lake.mode = "truncate"
    _built_truncate(lake)
    before = lake.source_metadata()
    payload = {"olake_cow_lane": {"namespace": lake.ns, "run_id": "lane-test", "tables": ["t"], "max_mb": 256,
                                  "emr_after": [], "summary_uri": "", "argv": [
                                      "--secret-id", account.secret_arn, "--source-namespace", lake.ns,
                                      "--cow-namespace", lake.cow_ns, "--tables", "t"]}}
    answer = merge_function(payload)
    assert answer["unfinished"] == ["t"] and answer["exit_code"] == 0, answer
    assert lake.source_metadata() == before  # the python engine never truncates OLake's table


def _built_truncate(lake):
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", [{"_olake_id": str(i), "v": i, "s": f"r{i}"} for i in range(20)])
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100}])


def test_every_call_of_the_merge_function_is_granted_by_its_role_and_one_grant_less_fails(lane, moto_s3_glue_server):
    from testkit.iam import ungranted
    from testkit.moto_stack import template_role_policies

    lake, account = lane
    first_build(lake)
    olake_changes(lake, 10)
    account.invoke({"namespace": lake.ns})
    [payload] = account.lane_requests
    moto_s3_glue_server.start_recording()
    assert merge_function(payload)["unfinished"] == []
    calls = recorded_calls(moto_s3_glue_server)
    actions = {c.action for c in calls}
    assert {"secretsmanager:GetSecretValue", "glue:GetTable", "glue:UpdateTable", "s3:GetObject",
            "s3:PutObject"} <= actions, actions
    params = {"WarehouseBucket": "lake", "WarehousePrefix": "warehouse", "ArtifactsBucket": "lake",
              "ArtifactsPrefix": "olake-cow", "SourceNamespaces": lake.ns, "DestinationSecretArn": account.secret_arn}
    policies = template_role_policies("MergeRole", params)
    # the summary bucket's check (HeadBucket) is refused and left to the run, as for the job role
    assert ungranted(calls, policies) == ["s3:ListBucket on arn:aws:s3:::lake"]
    for sid in ("WriteMirrorObjects", "GlueMirrorTables", "ReadDestinationConfig", "ReadWarehouseObjects"):
        fewer = [{**doc, "Statement": [st for st in doc["Statement"] if st.get("Sid") != sid]} for doc in policies]
        assert len(ungranted(calls, fewer)) > 1, sid
