"""`make bench-lane`: the express lane's freshness, from an OLake commit event to the mirror's commit,
each step a new process as a cold Lambda pays it. OLake's table in Glue and S3 on a moto server
(its own process), unpartitioned and bucket(16, _olake_id), its mirror built once by the Spark job
(not timed); then for each sync: OLake's
CDC commit of --changes keys (not timed), the trigger's handler on that commit's S3 event (a new
process: QuietPeriodSeconds 0, the debounce aside), which routes the table to the lane, then the
merge function's handler on the payload the trigger sent (a new process: imports, the secret,
Glue, the merge, the commit). The lane's end goes back to the trigger (not timed). The mirror is
checked against the source resolved by Spark after the last sync. Writes docs/bench-lane.json.

    .venv/bin/python bench/lane.py             # 200k rows, 2,000 changes, 3 syncs
    .venv/bin/python bench/lane.py --quick     # 5k rows: checks the harness
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Any, Dict, List

from bench import ROOT, compile_job
from bench.cold import COLUMNS, source_frame
from bench.engines import batch

REGION, KEY, CATALOG, BUCKET = "us-east-1", "testing", "lanebench", "lake"


def step(kind: str, event: Dict[str, Any], env: Dict[str, str], tmp: str) -> Dict[str, Any]:
    """One handler (bench/lane_step.py) in a new process: its answer and wall time."""
    src, out = os.path.join(tmp, f"{kind}-in.json"), os.path.join(tmp, f"{kind}-out.json")
    with open(src, "w", encoding="utf-8") as f:
        json.dump(event, f)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "bench.lane_step", kind, src, out], env=env, cwd=ROOT,
                          capture_output=True, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{kind} failed: {done.stderr[-3000:]}")
    with open(out, encoding="utf-8") as f:
        return {"wall_s": round(wall, 2), **json.load(f)}


def account(url: str, destination: Dict[str, Any]) -> Dict[str, str]:
    """The trigger's AWS resources on the moto server; its environment (and the boto3 clients')."""
    import boto3

    request = urllib.request.Request(f"{url}/moto-api/config", method="POST",
                                      data=json.dumps({"lambda": {"use_docker": False}}).encode())
    urllib.request.urlopen(request, timeout=30).close()
    kw = {"endpoint_url": url, "region_name": REGION, "aws_access_key_id": KEY, "aws_secret_access_key": KEY}
    secret = boto3.client("secretsmanager", **kw).create_secret(Name="olake/destination",
                                                                SecretString=json.dumps(destination))["ARN"]
    boto3.client("dynamodb", **kw).create_table(
        TableName="olake-cow-state", BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])
    app = boto3.client("emr-serverless", **kw).create_application(name="olake-cow", releaseLabel="emr-7.12.0",
                                                                   type="SPARK")["applicationId"]
    role = boto3.client("iam", **kw).create_role(RoleName="merge", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    from testkit.aws import _empty_zip

    fn = boto3.client("lambda", **kw).create_function(FunctionName="olake-cow-merge", Runtime="python3.13",
                                                      Role=role, Handler="olake_merge.handler.lambda_handler",
                                                      Code={"ZipFile": _empty_zip()})["FunctionArn"]
    return {"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": KEY,
            "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION, "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_SERVICE_NAME": "olake-cow-bench", "POWERTOOLS_METRICS_NAMESPACE": "OlakeCow",
            "OLAKE_SECRET_ID": secret, "STATE_TABLE": "olake-cow-state", "EMR_APPLICATION_ID": app,
            "EMR_EXECUTION_ROLE_ARN": "arn:aws:iam::123456789012:role/job",
            "JOB_ENTRY_POINT": f"s3://{BUCKET}/code/main.py", "JOB_PY_FILES": f"s3://{BUCKET}/code/olake_cow.zip",
            "SUMMARY_S3_URI": f"s3://{BUCKET}/summaries", "SOURCE_NAMESPACES": "*", "QUIET_PERIOD_SECONDS": "0",
            "WAREHOUSE_LOCATION": f"s3://{BUCKET}/warehouse", "MERGE_FUNCTION_ARN": fn}


def commit_event(url: str, ns: str) -> Dict[str, Any]:
    """The S3 Object Created event of the source's newest metadata file, as EventBridge sends it."""
    import boto3

    glue = boto3.client("glue", endpoint_url=url, region_name=REGION, aws_access_key_id=KEY,
                        aws_secret_access_key=KEY)
    location = glue.get_table(DatabaseName=ns, Name="t")["Table"]["Parameters"]["metadata_location"]
    key = location.split(f"s3://{BUCKET}/", 1)[1]
    return {"version": "0", "id": f"bench-{time.time_ns()}", "source": "aws.s3", "detail-type": "Object Created",
            "time": "2026-11-29T00:00:00Z", "region": REGION, "resources": [f"arn:aws:s3:::{BUCKET}"],
            "detail": {"bucket": {"name": BUCKET}, "object": {"key": key, "size": 1}, "reason": "PutObject"}}


def lane_end(request: Dict[str, Any], answer: Dict[str, Any]) -> Dict[str, Any]:
    return {"version": "1.0", "requestContext": {"condition": "Success", "approximateInvokeCount": 1},
            "requestPayload": request, "responsePayload": answer}


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--changes", type=int, default=2_000)
    p.add_argument("--syncs", type=int, default=3)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "bench-lane.json"))
    a = p.parse_args(argv)
    if a.quick:
        a.rows, a.changes, a.syncs = 5_000, 200, 1
    from olake_cow.core.identifiers import qualified
    from testkit.local import local_session, writer_session
    from testkit.olake_writer import OlakeWriter
    from testkit.servers import MotoServer

    compile_job()
    tmp = tempfile.mkdtemp(prefix="olake-cow-lane-")
    server = MotoServer(BUCKET, KEY, REGION).start()
    try:
        url = server.url
        destination = {"type": "ICEBERG", "writer": {
            "catalog_type": "glue", "catalog_name": CATALOG, "iceberg_s3_path": f"s3://{BUCKET}/warehouse",
            "aws_region": REGION, "glue_endpoint": url, "s3_endpoint": url, "aws_access_key": KEY,
            "aws_secret_key": KEY}}
        dest = os.path.join(tmp, "destination.json")
        with open(dest, "w", encoding="utf-8") as f:
            json.dump(destination, f)
        env = {**os.environ, **account(url, destination),
               "PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "emr_job"), os.path.join(ROOT, "lambda"), ROOT])}
        os.environ.update({k: env[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")})
        root, cfg = local_session(destination)
        system = root._jvm.java.lang.System  # the Glue client's credentials: Java's default chain
        for prop, value in (("aws.accessKeyId", KEY), ("aws.secretAccessKey", KEY), ("aws.region", REGION)):
            system.setProperty(prop, value)
        from olake_cow.cli import main as job

        result: Dict[str, Any] = {"rows": a.rows, "changes": a.changes, "workloads": []}
        for ns, partition_by in (("plain", ()), ("bucketed", ("bucket(16, _olake_id)",))):
            writer = OlakeWriter(writer_session(root, cfg), CATALOG, ns)
            writer.create_table("t", COLUMNS, partition_by=partition_by)
            df = source_frame(writer.spark, a.rows, "decimal")
            (df if partition_by else df.sortWithinPartitions("_olake_id")).writeTo(qualified(CATALOG, ns, "t")).append()
            assert job(["--destination-details", dest, "--source-namespace", ns, "--quiet"]) == 0  # first build
            rng, size, syncs = random.Random(7), a.rows, []
            for _ in range(a.syncs):
                size = batch(writer, "t", "decimal", size, a.changes, rng, bool(partition_by))
                trigger = step("trigger", commit_event(url, ns), env, tmp)
                assert trigger["outcome"]["engine"] == "lambda", trigger["outcome"]
                [request] = trigger["lane"]
                merge = step("merge", request, env, tmp)
                assert merge["answer"]["unfinished"] == [], merge["answer"]
                step("trigger", lane_end(request, merge["answer"]), env, tmp)  # releases the lease (not timed)
                syncs.append({"trigger_s": trigger["wall_s"], "merge_s": merge["wall_s"],
                              "commit_to_mirror_s": round(trigger["wall_s"] + merge["wall_s"], 2),
                              "merge_work_s": merge["work_s"]})
                print(ns, syncs[-1], flush=True)
            mirror = writer.spark.table(qualified(CATALOG, ns + "_cow", "t_cow")).count()
            resolved = writer.spark.table(qualified(CATALOG, ns, "t")).count()
            assert mirror == resolved, (ns, mirror, resolved)
            result["workloads"].append({"name": ns, "partition_by": list(partition_by), "syncs": syncs,
                                        "median": {k: statistics.median(s[k] for s in syncs) for k in syncs[0]}})
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1, sort_keys=True)
        for w in result["workloads"]:
            print(w["name"], "median", w["median"])
        root.stop()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
