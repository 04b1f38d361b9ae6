"""Removes an olake-cow deployment: the stack (`sam delete`) and the trigger's pending debounce
schedules (in the stack's own schedule group, <stack>-debounce, so another stack's are never
touched). OLake's tables are never touched. What the stack does not own stays unless asked for:

  --remove-artifacts       the job's code, run summaries and job logs under s3://<ArtifactsBucket>/<ArtifactsPrefix>/
  --remove-mirrors         the mirror databases (<namespace>_cow in Glue), their tables and their data in S3
  --remove-secret          the destination secret (Secrets Manager keeps it 7 days, then deletes it)
  --disable-bucket-events  EventBridge notifications of the warehouse bucket (other notifications stay)

Removing data needs --yes. The stack's parameters (buckets, namespaces, secret) are read before it
is deleted; with --skip-stack (the stack is gone already) give them as options.

    python infra/destroy.py [--stack olake-cow] [--region R] [--remove-mirrors --yes] ...
    make destroy STACK=olake-cow [DESTROY_ARGS="--remove-artifacts --yes"]   (the same, from the deploy environment)

Exit codes: 0 removed, 2 a missing --yes, an unknown stack, or an AWS error (one line says what).
"""
import argparse
import os
import subprocess
import sys
from typing import Dict, List, Optional

import awsenv


def schedule_group(stack: str) -> str:
    """The stack's debounce schedule group (template.yaml, DebounceSchedules)."""
    return f"{stack}-debounce"


def stack_parameters(cfn, stack: str) -> Dict[str, str]:
    found = awsenv.describe_stack(cfn, stack, "; with --skip-stack, give the buckets, namespaces and secret "
                                              "as options")
    return {p["ParameterKey"]: p.get("ResolvedValue") or p.get("ParameterValue", "")
            for p in found.get("Parameters", [])}


def delete_schedules(scheduler, group: str) -> List[str]:
    """Delete the schedules of one schedule group (none when the group is gone)."""
    from botocore.exceptions import ClientError

    names = []
    try:
        for page in scheduler.get_paginator("list_schedules").paginate(GroupName=group):
            names += [s["Name"] for s in page.get("Schedules", [])]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return []
        raise
    for name in names:
        scheduler.delete_schedule(Name=name, GroupName=group)
    return names


def delete_prefix(s3, bucket: str, prefix: str) -> int:
    """Delete every object under s3://bucket/prefix/ (the trailing slash is added); returns the count."""
    prefix = prefix.rstrip("/") + "/"
    removed = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
            removed += len(keys)
    return removed


def delete_mirrors(glue, s3, namespaces: List[str], suffix: str = "_cow") -> List[str]:
    """Drop the mirror databases of `namespaces` (never a source database), with their data."""
    from botocore.exceptions import ClientError

    dropped = []
    for ns in namespaces:
        database = ns + suffix
        try:
            tables = [t for page in glue.get_paginator("get_tables").paginate(DatabaseName=database)
                      for t in page.get("TableList", [])]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "EntityNotFoundException":
                continue
            raise
        for t in tables:
            location = (t.get("StorageDescriptor") or {}).get("Location") or ""
            if location.startswith("s3://"):
                bucket, _, prefix = location[len("s3://"):].partition("/")
                if prefix.strip("/"):
                    delete_prefix(s3, bucket, prefix)
            glue.delete_table(DatabaseName=database, Name=t["Name"])
            dropped.append(f"{database}.{t['Name']}")
        glue.delete_database(Name=database)
    return dropped


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="destroy", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stack", default="olake-cow", help="the stack's name (default olake-cow)")
    p.add_argument("--region", help="AWS region (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's)")
    p.add_argument("--remove-artifacts", action="store_true", help="remove code, summaries and logs of the job")
    p.add_argument("--remove-mirrors", action="store_true", help="drop the mirror databases and their data")
    p.add_argument("--remove-secret", action="store_true", help="delete the destination secret")
    p.add_argument("--disable-bucket-events", action="store_true",
                   help="turn off EventBridge notifications of the warehouse bucket")
    p.add_argument("--yes", action="store_true", help="confirm the removal of data (mirrors, artifacts, secret)")
    p.add_argument("--skip-stack", action="store_true", help="the stack is gone already: only the other steps")
    p.add_argument("--artifacts", metavar="s3://bucket/prefix", help="with --skip-stack: the artifacts location")
    p.add_argument("--namespaces", metavar="A,B", help="with --skip-stack: the source namespaces")
    p.add_argument("--secret", metavar="ARN", help="with --skip-stack: the destination secret")
    p.add_argument("--bucket", help="with --skip-stack: the warehouse bucket")
    p.add_argument("--sam", default=os.environ.get("SAM", "sam"), help="the SAM CLI to run (default: sam on PATH)")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    if (args.remove_artifacts or args.remove_mirrors or args.remove_secret) and not args.yes:
        print("destroy: removing mirrors, artifacts or the secret deletes data: add --yes", file=sys.stderr)
        return 2
    return awsenv.run("destroy", lambda: _destroy(args))


def _destroy(args: argparse.Namespace) -> int:
    session = awsenv.session(args.region)
    region = session.region_name
    params: Dict[str, str] = {}
    if not args.skip_stack:
        params = stack_parameters(session.client("cloudformation"), args.stack)
    gone = delete_schedules(session.client("scheduler"), schedule_group(args.stack))
    print(f"==> {len(gone)} pending debounce schedule(s) of stack {args.stack} deleted")
    if not args.skip_stack:
        print(f"==> deleting stack {args.stack} in {region}", flush=True)
        done = subprocess.run([args.sam, "delete", "--stack-name", args.stack, "--region", region, "--no-prompts"])
        if done.returncode != 0:
            raise awsenv.SetupError(f"sam delete failed (exit {done.returncode}); nothing else was removed")
    artifacts = args.artifacts or (f"s3://{params['ArtifactsBucket']}/{params.get('ArtifactsPrefix', 'olake-cow')}"
                                   if params.get("ArtifactsBucket") else None)
    namespaces = [n.strip() for n in (args.namespaces or params.get("SourceNamespaces", "")).split(",") if n.strip()]
    secret = args.secret or params.get("DestinationSecretArn")
    bucket = args.bucket or params.get("WarehouseBucket")
    if args.remove_artifacts:
        if not artifacts:
            raise awsenv.SetupError("--remove-artifacts: the artifacts location is unknown; pass --artifacts")
        b, _, prefix = artifacts[len("s3://"):].partition("/")
        print(f"==> {delete_prefix(session.client('s3'), b, prefix)} object(s) removed under {artifacts}/")
    if args.remove_mirrors:
        if not namespaces:
            raise awsenv.SetupError("--remove-mirrors: the namespaces are unknown; pass --namespaces")
        dropped = delete_mirrors(session.client("glue"), session.client("s3"), namespaces)
        print(f"==> {len(dropped)} mirror table(s) dropped with their data: {', '.join(dropped) or '-'}")
    if args.remove_secret:
        if not secret:
            raise awsenv.SetupError("--remove-secret: the secret is unknown; pass --secret")
        session.client("secretsmanager").delete_secret(SecretId=secret, RecoveryWindowInDays=7)
        print(f"==> secret {secret} scheduled for deletion in 7 days")
    if args.disable_bucket_events:
        if not bucket:
            raise awsenv.SetupError("--disable-bucket-events: the bucket is unknown; pass --bucket")
        from enable_bucket_events import disable

        disable(session.client("s3"), bucket)
        print(f"==> s3://{bucket}: EventBridge notifications turned off")
    print("==> done. OLake's tables were not touched.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
