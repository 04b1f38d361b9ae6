"""Checks what `make deploy` is given before anything is uploaded or deployed: the buckets are bucket
names, the destination secret exists in the stack's region and holds a config the job accepts, its
warehouse (writer.iceberg_s3_path) is the one WAREHOUSE_BUCKET and WAREHOUSE_PREFIX name, and the
namespaces are names the catalog accepts. infra/deploy.sh runs it; each problem is one line.

    python infra/preflight.py --warehouse-bucket B [--warehouse-prefix P] [--artifacts-bucket B]
                              --secret-arn ARN --namespaces a,b [--region R]

Exit codes: 0 all good, 2 a problem (one line says what to fix).
"""
import argparse
import os
import sys
from typing import List

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "emr_job"))
import awsenv

from olake_cow.core.config import DestinationConfig, parse_destination
from olake_cow.core.errors import OlakeCowError
from olake_cow.core.identifiers import MIRROR_SUFFIX, check_for_catalog, validate_name


def secret_region(arn: str) -> str:
    parts = arn.split(":")
    if len(parts) < 7 or parts[0] != "arn" or parts[2] != "secretsmanager":
        raise awsenv.SetupError(f"SECRET_ARN {arn!r} is not a Secrets Manager secret ARN "
                                "(arn:aws:secretsmanager:<region>:<account>:secret:<name>; make secret prints it)")
    return parts[3]


def read_config(sm, arn: str) -> DestinationConfig:
    from botocore.exceptions import ClientError

    try:
        text = sm.get_secret_value(SecretId=arn)["SecretString"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            raise awsenv.SetupError(f"secret {arn} does not exist in {sm.meta.region_name}: store it there "
                                    "with make secret FILE=destination.json") from None
        raise
    try:
        return parse_destination(text)
    except OlakeCowError as exc:
        raise awsenv.SetupError(f"the secret {arn} holds a config the job refuses: {exc}") from None


def check(args: argparse.Namespace, sm) -> List[str]:
    """The checks; returns what was checked (for the log). SetupError on the first problem."""
    warehouse_bucket = awsenv.bucket_name(args.warehouse_bucket, "WAREHOUSE_BUCKET")
    awsenv.bucket_name(args.artifacts_bucket or warehouse_bucket, "ARTIFACTS_BUCKET")
    prefix = args.warehouse_prefix or ""
    if prefix != prefix.strip("/"):
        raise awsenv.SetupError(f"WAREHOUSE_PREFIX {prefix!r} must not start or end with '/'")
    region = sm.meta.region_name
    if secret_region(args.secret_arn) != region:
        raise awsenv.SetupError(
            f"SECRET_ARN is in {secret_region(args.secret_arn)} but the stack deploys to {region}: the trigger "
            f"and the job read the secret in the stack's region; store it there (AWS_REGION={region} make secret "
            "FILE=destination.json) or deploy to the secret's region")
    cfg = read_config(sm, args.secret_arn)
    expected = f"s3://{warehouse_bucket}" + (f"/{prefix}" if prefix else "")
    if cfg.warehouse.startswith("s3://") and cfg.warehouse.rstrip("/") != expected:
        raise awsenv.SetupError(
            f"the secret's writer.iceberg_s3_path is {cfg.warehouse} but WAREHOUSE_BUCKET/WAREHOUSE_PREFIX name "
            f"{expected}: they must be the same warehouse (the trigger maps S3 events and grants access by them)")
    namespaces = [n.strip() for n in args.namespaces.split(",") if n.strip()]
    if not namespaces:
        raise awsenv.SetupError("NAMESPACES is empty: list the source namespaces, e.g. sales,crm")
    try:
        for ns in namespaces:
            check_for_catalog(cfg.catalog_type, "namespace", validate_name("namespace", ns))
            check_for_catalog(cfg.catalog_type, "namespace", ns + MIRROR_SUFFIX)
    except OlakeCowError as exc:
        raise awsenv.SetupError(f"NAMESPACES: {exc}") from None
    return [f"secret {args.secret_arn} ({cfg.catalog_type} catalog) in {region}", f"warehouse {cfg.warehouse}",
            f"namespaces {', '.join(namespaces)}"]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="preflight", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--warehouse-bucket", required=True, help="WAREHOUSE_BUCKET: the warehouse's bucket name")
    p.add_argument("--warehouse-prefix", default="", help="WAREHOUSE_PREFIX: the key prefix of the warehouse")
    p.add_argument("--artifacts-bucket", default="", help="ARTIFACTS_BUCKET (default: the warehouse bucket)")
    p.add_argument("--secret-arn", required=True, help="SECRET_ARN: the destination secret (make secret prints it)")
    p.add_argument("--namespaces", required=True, help="NAMESPACES: the source namespaces, comma separated")
    p.add_argument("--region", help="AWS region (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's)")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)

    def run() -> int:
        for line in check(args, awsenv.session(args.region).client("secretsmanager")):
            print(f"    ok: {line}")
        return 0

    return awsenv.run("deploy", run)


if __name__ == "__main__":
    sys.exit(main())
