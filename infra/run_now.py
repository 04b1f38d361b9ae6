"""Starts a mirror run on demand through the deployed trigger Lambda (a direct invocation), waits for
the EMR Serverless run to end, and prints its per-table summary. Without --force the trigger first
checks the catalog and starts nothing when no table has new commits (status "skipped").

    python -m infra.run_now --namespace sales [--stack olake-cow] [--tables a,b] [--force] [--verify]
                            [--dry-run] [--no-wait] [--region R]
    make run-now NAMESPACE=sales [RUN_ARGS="--force"]     (the same, from the deploy environment)

Exit codes: 0 the run succeeded (or nothing to do, queued, dry run), 1 it failed, 2 the trigger
refused the request or an AWS error (one line says what to fix).
"""
import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from infra import awsenv
from olake_cow.core.job_request import FINAL_STATES

if TYPE_CHECKING:  # typed clients (development stubs only)
    from mypy_boto3_emr_serverless import EMRServerlessClient
    from mypy_boto3_s3 import S3Client




def stack_outputs(cfn: Any, stack: str) -> dict:
    found = awsenv.describe_stack(cfn, stack, "; or deploy it first (make deploy)")
    return {o["OutputKey"]: o["OutputValue"] for o in found.get("Outputs", [])}


def wait_and_report(emr: "EMRServerlessClient", s3: "S3Client", application_id: str, job_run_id: str,
                    summary_uri: str, poll_s: float = 15.0, echo: Callable[..., None] = print) -> int:
    last = None
    while True:
        state = emr.get_job_run(applicationId=application_id, jobRunId=job_run_id)["jobRun"]["state"]
        if state != last:
            echo(f"job run {job_run_id}: {state}")
            last = state
        if state in FINAL_STATES:
            break
        time.sleep(poll_s)
    bucket, key = awsenv.uris.split_s3(summary_uri)
    try:
        summary = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    except Exception as exc:  # noqa: BLE001 - a run that died early writes no summary
        echo(f"no summary at {summary_uri} ({type(exc).__name__})")
        return 1
    echo(f"{'table':28} {'status':13} {'merges':>6} {'upserted':>9} {'deleted':>8}  error")
    for t in summary.get("tables", []):
        echo(f"{t['table']:28} {t['status']:13} {t.get('merges', 0):>6} "
             f"{t.get('rows_upserted', 0):>9} {t.get('rows_deleted', 0):>8}  {t.get('error') or ''}")
    ok = state == "SUCCESS" and summary.get("status") == "succeeded"
    return 0 if ok else 1


REFUSALS = ("refused", "invalid_config", "invalid_settings")


def refused(result: dict, function_error: bool, stack: str) -> str:
    """One line for an answer of the trigger that started nothing because of what it was given."""
    if function_error:
        return f"the trigger of stack {stack} failed: {result.get('errorMessage') or result}"
    if result.get("status") in REFUSALS:
        return f"the trigger of stack {stack} refused the request ({result['status']}): {result.get('reason')}"
    return ""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="run_now", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stack", default="olake-cow", help="the deployed stack's name (default olake-cow)")
    p.add_argument("--namespace", required=True, help="the source namespace to mirror")
    p.add_argument("--tables", help="comma separated (default: every table of the namespace with new commits)")
    p.add_argument("--force", action="store_true", help="start the run even if the catalog check finds nothing new")
    p.add_argument("--verify", action="store_true",
                   help="also compare each mirror with its source (readonly mirrors; a full scan of both)")
    p.add_argument("--dry-run", action="store_true", help="print the StartJobRun request the trigger would send")
    p.add_argument("--no-wait", action="store_true", help="print the trigger's answer and return")
    p.add_argument("--region", help="AWS region (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's)")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    return awsenv.run("run_now", lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    session = awsenv.session(args.region)
    outputs = stack_outputs(session.client("cloudformation"), args.stack)
    payload = {"namespace": args.namespace, "force": args.force, "dry_run": args.dry_run, "verify": args.verify}
    if args.tables:
        payload["tables"] = [t.strip() for t in args.tables.split(",") if t.strip()]
    resp = session.client("lambda").invoke(FunctionName=outputs["TriggerFunctionName"],
                                           Payload=json.dumps(payload).encode())
    result = json.loads(resp["Payload"].read() or b"{}")
    refusal = refused(result, bool(resp.get("FunctionError")), args.stack)
    if refusal:
        raise awsenv.SetupError(refusal)  # one line on stderr, exit 2: nothing was started
    print(json.dumps(result, indent=2))
    if result.get("status") != "started" or args.no_wait:
        return 0 if result.get("status") in ("started", "skipped", "queued", "dry_run") else 1
    return wait_and_report(session.client("emr-serverless"), session.client("s3"), outputs["ApplicationId"],
                           result["job_run_id"], result["summary"])


if __name__ == "__main__":
    sys.exit(main())
