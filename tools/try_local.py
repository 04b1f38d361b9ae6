"""`make try-local`: the README's deploy -> run-now -> destroy path without an AWS account, on a moto
server on this machine. The stack is the real template.yaml through SAM's translator, created by
moto's CloudFormation but for the resource types it cannot create (testkit/moto_stack.py STAND_INS,
made through moto's APIs and printed). Prints each step and what it left, and checks at the end that
OLake's objects are exactly as they were.

    python tools/try_local.py [--stack olake-cow-local] [--keep-server]

Exit codes: 0 every step did what the README says, 1 a step did not (printed)."""
import argparse
import json
import os
import re
import socket
import sys
import time

from testkit import iam
from testkit.moto_stack import MotoStacks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

REGION = "eu-west-1"
BUCKET = "my-olake-bucket"


def step(title: str) -> None:
    print(f"\n==> {title}", flush=True)


def check(ok: bool, what: str, detail: str = "") -> None:
    print(f"    {'ok' if ok else 'FAILED'}: {what}", flush=True)
    if not ok:
        print(detail)
        raise SystemExit(1)


def quietly(call, *args, **kwargs):
    """Run a trigger call with the Lambda's JSON log lines captured; returns (result, metric names)."""
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        result = call(*args, **kwargs)
    names = []
    for line in buffer.getvalue().splitlines():
        if line.startswith("{") and '"_aws"' in line:
            for directive in json.loads(line)["_aws"]["CloudWatchMetrics"]:
                names += [m["Name"] for m in directive["Metrics"] if m["Name"] not in names]
    return result, names


def express_lane(moto: MotoStacks, stack: str) -> None:
    """A small sync of sales.orders goes to the stack's merge function; what the function hands back
    goes to one EMR run. The function itself runs on real tables in tests/spark/test_express_lane.py:
    here its end is the destination record Lambda would send."""
    step("make run-now STACK=... NAMESPACE=sales RUN_ARGS='--tables orders' (a small sync: the express lane)")
    merge_fn = moto.outputs(stack)["MergeFunctionName"]
    with iam.api_calls() as seen:
        lane, _ = quietly(moto.invoke, stack, {"namespace": "sales", "tables": ["orders"]})
    sent = [json.loads(p["Payload"]) for action, p, _ in seen if action == "lambda:InvokeFunction"]
    check(lane["status"] == "started" and lane.get("engine") == "lambda" and len(sent) == 1,
          f"routed to the merge function {merge_fn} ({lane.get('routing')}); no EMR run; the lease is its",
          json.dumps(lane))
    config = moto.client("lambda").get_function_event_invoke_config(FunctionName=merge_fn)
    ends = {k: v["Destination"].rsplit(":", 1)[-1] for k, v in config["DestinationConfig"].items()}
    check(set(ends.values()) == {f"{stack}-trigger"}, f"its asynchronous invocation retries "
          f"{config['MaximumRetryAttempts']} time(s) and reports to the trigger: {ends}")
    end_record = {"requestContext": {"condition": "Success", "approximateInvokeCount": 1},
                  "requestPayload": sent[0], "responsePayload": {"status": "succeeded", "unfinished": ["orders"]}}
    end, _ = quietly(moto.invoke, stack, end_record)
    emr = end.get("follow_up") or {}
    check(end["status"] == "finished" and emr.get("engine") == "emr" and emr.get("tables") == ["orders"],
          f"its end handing orders back (as for a new column) releases the namespace and starts one EMR run "
          f"{emr.get('job_run_id')} for orders", json.dumps(end))
    app = moto.outputs(stack)["ApplicationId"]
    run = moto.client("emr-serverless").get_job_run(applicationId=app, jobRunId=emr["job_run_id"])["jobRun"]
    moto.finish_run(stack, run)
    quietly(moto.invoke, stack, {"source": "aws.emr-serverless", "id": f"try-local-{run['jobRunId']}",
                                 "detail-type": "EMR Serverless Job Run State Change",
                                 "detail": {"applicationId": app, "jobRunId": run["jobRunId"], "state": "SUCCESS"}})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="try_local", description=__doc__.split("\n\n")[0])
    p.add_argument("--stack", default="olake-cow-local", help="the stack's name (default olake-cow-local)")
    p.add_argument("--keep-server", action="store_true", help="keep the moto server running at the end")
    args = p.parse_args(argv)

    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    import urllib.request  # the merge function is invoked, never run by moto (no Docker here)

    urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/config", method="POST", data=json.dumps(
        {"lambda": {"use_docker": False}}).encode()), timeout=30).close()
    moto = MotoStacks(url, REGION)
    started = time.time()
    try:
        step(f"a moto server at {url}, region {REGION}: OLake's lake s3://{BUCKET}/warehouse with two namespaces")
        moto.seed_lake(BUCKET, "warehouse", {"sales": ["orders", "refunds"], "crm": ["contacts"]})
        olake = moto.objects(BUCKET, "warehouse/")
        print(f"    {len(olake)} objects of OLake's; Glue databases sales, crm")

        step("make secret FILE=build/try-local/destination.json")
        os.makedirs(os.path.join(ROOT, "build", "try-local"), exist_ok=True)
        with open(os.path.join(ROOT, "build", "try-local", "destination.json"), "w", encoding="utf-8") as f:
            json.dump({"type": "ICEBERG", "writer": {"catalog_type": "glue", "aws_region": REGION,
                                                     "iceberg_s3_path": f"s3://{BUCKET}/warehouse"}}, f)
        code, out = moto.make("secret", "FILE=build/try-local/destination.json")
        check(code == 0, "the config passed the job's rules and was stored", out)
        arn = re.search(r"arn:aws:secretsmanager:\S+", out).group(0)

        step(f"make bucket-events BUCKET={BUCKET}")
        code, out = moto.make("bucket-events", f"BUCKET={BUCKET}")
        check(code == 0, "EventBridge notifications on", out)

        step(f"make deploy STACK={args.stack} WAREHOUSE_BUCKET={BUCKET} WAREHOUSE_PREFIX=warehouse NAMESPACES=sales")
        code, out = moto.deploy(args.stack, WAREHOUSE_BUCKET=BUCKET, WAREHOUSE_PREFIX="warehouse",
                                NAMESPACES="sales", SECRET_ARN=arn)
        print("\n".join("    " + line for line in out.splitlines() if line.startswith(("==>", "    ok"))))
        check(code == 0, f"checked, claimed s3://{BUCKET}/olake-cow/{args.stack}/, code uploaded, stack created", out)
        created = moto.client("cloudformation").describe_stack_resources(StackName=args.stack)["StackResources"]
        stood_in = moto.stood_in.get(args.stack, [])
        check(bool(created), f"the stack is template.yaml through SAM's translator: {len(created)} resources created "
              f"by moto's CloudFormation; stood in through moto's APIs (types it cannot create): "
              + ", ".join(f"{name} ({kind})" for name, kind in stood_in))

        step("make deploy STACK=other ARTIFACTS_PREFIX=warehouse ... (a location that holds OLake's data)")
        code, out = moto.make("deploy", STACK="other", WAREHOUSE_BUCKET=BUCKET, WAREHOUSE_PREFIX="warehouse",
                              NAMESPACES="crm", SECRET_ARN=arn, ARTIFACTS_PREFIX="warehouse", DEPLOY_DRY_RUN="1")
        said = [line for line in out.splitlines() if "error:" in line]
        check(code == 2 and bool(said), "refused before anything was uploaded: " + (said[0] if said else ""), out)

        step(f"make run-now STACK={args.stack} NAMESPACE=sales RUN_ARGS=--dry-run, then --force")
        dry, _ = quietly(moto.run_now, args.stack, "sales", dry_run=True)
        check(dry["status"] == "dry_run", "the StartJobRun request the trigger would send: "
              + " ".join(dry["request"]["jobDriver"]["sparkSubmit"]["entryPointArguments"][:6]) + " ...")
        run, metrics = quietly(moto.run_now, args.stack, "sales", force=True)
        check(run["status"] == "started" and run["end"]["summary_status"] == "succeeded",
              f"run {run.get('job_run_id')} started for {run.get('tables')}; published {', '.join(metrics)}")
        refused, _ = quietly(moto.invoke, args.stack, {"namespace": "sales", "tables": ["ghost"]})
        check(refused["status"] == "refused", f"a table Glue lacks is refused, no run billed: {refused['reason']}")
        express_lane(moto, args.stack)
        metadata = sorted(k for k in olake if k.startswith("warehouse/sales/orders/metadata/")
                          and k.endswith(".metadata.json"))[-1]
        commit = {"source": "aws.s3", "detail-type": "Object Created", "id": "try-local-commit",
                  "detail": {"bucket": {"name": BUCKET}, "object": {"key": metadata}}}
        debounced, _ = quietly(moto.invoke, args.stack, commit)
        check(debounced["status"] == "debounced", f"an OLake commit (s3://{BUCKET}/{metadata}) is debounced: the run "
              f"starts once the sync has been quiet ({debounced.get('reason', '')})")
        calls = moto.calls.get(args.stack, [])
        missing = iam.ungranted(calls, moto.role_policies(args.stack, "TriggerRole"))
        actions = len({c.action for c in calls})
        check(bool(calls) and not missing, f"each of the trigger's {len(calls)} AWS calls ({actions} actions) is "
              "granted by the stack's TriggerRole on the resource it touched",
              "not granted:\n" + "\n".join(missing))

        step(f"make destroy STACK={args.stack} DESTROY_ARGS=\"--remove-artifacts --remove-mirrors --remove-secret "
             "--disable-bucket-events --yes\"")
        code, out = moto.destroy(args.stack, "--remove-artifacts", "--remove-mirrors", "--remove-secret",
                                 "--disable-bucket-events", "--yes")
        print("\n".join("    " + line for line in out.splitlines() if line.startswith(("==>", "    kept"))))
        check(code == 0, "the stack, its artifacts, its mirrors, the secret and the notifications removed", out)
        check(moto.objects(BUCKET, "warehouse/") == olake, "OLake's objects exactly as they were")
        check(moto.objects(BUCKET, "olake-cow/") == {}, "nothing of the stack's left in the bucket")
        print(f"\ndone in {time.time() - started:.0f} s: deploy -> run-now -> destroy on moto; on AWS the same "
              "make targets run without the stand-ins (README, Deploy)")
        return 0
    finally:
        if not args.keep_server:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
