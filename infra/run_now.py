"""Runs a compaction on demand through the deployed trigger and prints the result.

    python infra/run_now.py --stack olake-cow --namespace sales [--tables a,b] [--force] [--dry-run] [--no-wait]
Waits for the EMR Serverless run to end and prints its per-table summary (exit 1 if it failed).
"""
import argparse
import json
import sys
import time

FINAL = ("SUCCESS", "FAILED", "CANCELLED")


def stack_outputs(cfn, stack: str) -> dict:
    out = cfn.describe_stacks(StackName=stack)["Stacks"][0].get("Outputs", [])
    return {o["OutputKey"]: o["OutputValue"] for o in out}


def wait_and_report(emr, s3, application_id: str, job_run_id: str, summary_uri: str, poll_s: float = 15.0,
                    echo=print) -> int:
    last = None
    while True:
        state = emr.get_job_run(applicationId=application_id, jobRunId=job_run_id)["jobRun"]["state"]
        if state != last:
            echo(f"job run {job_run_id}: {state}")
            last = state
        if state in FINAL:
            break
        time.sleep(poll_s)
    bucket, _, key = summary_uri[len("s3://"):].partition("/")
    try:
        summary = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    except Exception as exc:  # noqa: BLE001 - a run that died early writes no summary
        echo(f"no summary at {summary_uri} ({type(exc).__name__})")
        return 1
    echo(f"{'table':28} {'status':11} {'merged':>6} {'upserted':>9} {'deleted':>8}  error")
    for t in summary.get("tables", []):
        echo(f"{t['table']:28} {t['status']:11} {t.get('boundaries_merged', 0):>6} "
             f"{t.get('rows_upserted', 0):>9} {t.get('rows_deleted', 0):>8}  {t.get('error') or ''}")
    ok = state == "SUCCESS" and summary.get("status") == "succeeded"
    return 0 if ok else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stack", default="olake-cow")
    p.add_argument("--namespace", required=True)
    p.add_argument("--tables", help="comma separated (default: every table with new commits)")
    p.add_argument("--force", action="store_true", help="run even if the idle check finds nothing new")
    p.add_argument("--dry-run", action="store_true", help="show the request the trigger would send")
    p.add_argument("--no-wait", action="store_true")
    p.add_argument("--region")
    args = p.parse_args(argv)
    import boto3

    session = boto3.session.Session(region_name=args.region)
    outputs = stack_outputs(session.client("cloudformation"), args.stack)
    payload = {"namespace": args.namespace, "force": args.force, "dry_run": args.dry_run}
    if args.tables:
        payload["tables"] = [t.strip() for t in args.tables.split(",") if t.strip()]
    resp = session.client("lambda").invoke(FunctionName=outputs["TriggerFunctionName"],
                                           Payload=json.dumps(payload).encode())
    result = json.loads(resp["Payload"].read() or b"{}")
    print(json.dumps(result, indent=2))
    if resp.get("FunctionError"):
        return 2
    if result.get("status") != "started" or args.no_wait:
        return 0 if result.get("status") in ("started", "skipped", "queued", "dry_run") else 1
    return wait_and_report(session.client("emr-serverless"), session.client("s3"), outputs["ApplicationId"],
                           result["job_run_id"], result["summary"])


if __name__ == "__main__":
    sys.exit(main())
