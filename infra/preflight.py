"""Checks what `make deploy` is given before anything is uploaded or deployed, then claims the
stack's artifacts location. Checked: the stack name; the buckets are bucket names and exist; the
destination secret exists in the stack's region and holds a config the job accepts, for a catalog
the stack can reach, with its Glue region the stack's; its warehouse (writer.iceberg_s3_path) is in
S3 and is the one WAREHOUSE_BUCKET and WAREHOUSE_PREFIX name; the namespaces are names the catalog
accepts and not mirror namespaces; the artifacts location is apart from the warehouse and every
table of the namespaces and their mirrors; EXTRA_PARAMS meet template.yaml's constraints. Then the
artifacts location is claimed for the stack (infra/ownership.py): never one another stack claimed.
infra/deploy.sh runs it; each problem is one line.

    python -m infra.preflight --stack S --warehouse-bucket B [--warehouse-prefix P] [--artifacts-bucket B]
                              [--artifacts-prefix P] --secret-arn ARN --namespaces a,b [--region R]
                              [--extra-params "K=V ..."] [--params-out FILE]

Exit codes: 0 all good, 2 a problem (one line says what to fix).
"""
import argparse
import re
import sys
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from infra import awsenv, lakeformation, ownership, stack_params
from olake_cow.core.config import CatalogType, DestinationConfig, parse_destination
from olake_cow.core.errors import OlakeCowError
from olake_cow.core.identifiers import MIRROR_NAMESPACE_SUFFIX, check_for_catalog, check_source_namespace, validate_name

if TYPE_CHECKING:  # typed clients (development stubs only)
    from mypy_boto3_glue import GlueClient
    from mypy_boto3_s3 import S3Client



def secret_region(arn: str) -> str:
    parts = arn.split(":")
    if len(parts) < 7 or parts[0] != "arn" or parts[2] != "secretsmanager":
        raise awsenv.SetupError(f"SECRET_ARN {arn!r} is not a Secrets Manager secret ARN "
                                "(arn:aws:secretsmanager:<region>:<account>:secret:<name>; make secret prints it)")
    return parts[3]


def read_config(sm: Any, arn: str) -> DestinationConfig:
    from botocore.exceptions import ClientError

    try:
        text = sm.get_secret_value(SecretId=arn)["SecretString"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            raise awsenv.SetupError(f"secret {arn} does not exist in {sm.meta.region_name}: store it there "
                                    "with make secret FILE=destination.json") from None
        if awsenv.scheduled_for_deletion(exc):
            raise awsenv.SetupError(awsenv.deletion_hint(arn)) from None
        raise
    try:
        return parse_destination(text)
    except OlakeCowError as exc:
        raise awsenv.SetupError(f"the secret {arn} holds a config the job refuses: {exc}") from None


def _locations(args: argparse.Namespace, stack: str) -> Tuple[str, str, str, str]:
    """(warehouse bucket, warehouse prefix, artifacts bucket, artifacts prefix), checked."""
    warehouse_bucket = awsenv.bucket_name(args.warehouse_bucket, "WAREHOUSE_BUCKET")
    artifacts_bucket = awsenv.bucket_name(args.artifacts_bucket or warehouse_bucket, "ARTIFACTS_BUCKET")
    prefix = args.warehouse_prefix or ""
    if prefix != prefix.strip("/"):
        raise awsenv.SetupError(f"WAREHOUSE_PREFIX {prefix!r} must not start or end with '/'")
    artifacts_prefix = args.artifacts_prefix if args.artifacts_prefix is not None else f"olake-cow/{stack}"
    if not re.fullmatch(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*", artifacts_prefix) or {".", ".."} & set(
            artifacts_prefix.split("/")):
        raise awsenv.SetupError(f"ARTIFACTS_PREFIX {artifacts_prefix!r} must be a key prefix of letters, digits, "
                                "'.', '_', '-' and inner '/', no '.' or '..' segment (default olake-cow/<stack>)")
    return warehouse_bucket, prefix, artifacts_bucket, artifacts_prefix


def _namespaces(text: str, cfg: DestinationConfig) -> List[str]:
    namespaces = awsenv.name_list(text)
    if not namespaces:
        raise awsenv.SetupError("NAMESPACES is empty: list the source namespaces, e.g. sales,crm")
    try:
        for ns in namespaces:
            check_for_catalog(cfg.catalog_type, "namespace", check_source_namespace(
                validate_name("namespace", ns), own="a stack cannot mirror it (its mirrors go to <namespace>_cow): "
                "run the job for it with --cow-namespace"))
            check_for_catalog(cfg.catalog_type, "namespace", ns + MIRROR_NAMESPACE_SUFFIX)
    except OlakeCowError as exc:
        raise awsenv.SetupError(f"NAMESPACES: {exc}") from None
    return namespaces


def _buckets_exist(s3: "S3Client", buckets: List[Tuple[str, str]]) -> None:
    for what, bucket in buckets:
        try:
            s3.head_bucket(Bucket=bucket)
        except Exception as exc:
            if awsenv.error_code(exc) in ("404", "NoSuchBucket"):
                raise awsenv.SetupError(f"{what} {bucket} does not exist in this account (create it, or name "
                                        "an existing bucket)") from None
            raise


def _secret_config(args: argparse.Namespace, sm: Any, extra: Dict[str, str]) -> DestinationConfig:
    """The secret's config, read in the stack's region and checked against the stack."""
    region = sm.meta.region_name
    if secret_region(args.secret_arn) != region:
        raise awsenv.SetupError(
            f"SECRET_ARN is in {secret_region(args.secret_arn)} but the stack deploys to {region}: the trigger "
            f"and the job read the secret in the stack's region; store it there (AWS_REGION={region} make secret "
            "FILE=destination.json) or deploy to the secret's region")
    cfg = read_config(sm, args.secret_arn)
    check_catalog(cfg, region, extra)
    return cfg


def check(args: argparse.Namespace, sm: Any, s3: Optional["S3Client"] = None,
          glue: Optional["GlueClient"] = None) -> List[str]:
    """The checks; returns what was checked (for the log). SetupError on the first problem.
    Without `s3`/`glue` (tests of the pure part) the bucket and table checks are left out."""
    return checked(args, sm, s3, glue)[0]


# Stack parameters two stacks mirroring one namespace must agree on: both write its mirrors (<ns>_cow).
# Another delete mode rebuilds a mirror at each run of the other; another format is refused at each.
SHARED_SETTINGS = ("DeleteMode", "MirrorFormat")


def mode_conflict(stack: str, namespaces: Sequence[str], mode: str, others: Dict[str, Dict[str, str]],
                  params: Optional[Dict[str, str]] = None) -> Optional[str]:
    """Why this stack (its parameters `params`) may not mirror `namespaces` in `mode`: another stack
    mirrors one of them in the other source mode, or truncates it too (one source, one truncating
    job: a truncate empties OLake's table under every other mirror of it), or writes its mirrors
    with another delete mode or mirror format."""
    for name, theirs in sorted(others.items()):
        listed = awsenv.name_list(theirs.get("SourceNamespaces", ""))
        their_mode = theirs.get("SourceMode") or "readonly"
        shared = [ns for ns in namespaces if ns in listed or "*" in listed or "*" in namespaces]
        if not shared:
            continue
        if "truncate" in (mode, their_mode):
            return (f"namespace {shared[0]} is mirrored by stack {name!r} in {their_mode} mode, and stack {stack!r} "
                    f"would mirror it in {mode} mode: a truncate-mode stack empties OLake's table under every other "
                    "mirror of it, so one source has one truncating stack and no other. Deploy this stack for other "
                    "namespaces, or in the same mode beside a readonly one")
        defaults = stack_params.with_defaults({}, stack_params.load_template())  # a value not given: the template's
        for key in SHARED_SETTINGS:
            mine, other = (params or {}).get(key) or defaults[key], theirs.get(key) or defaults[key]
            if mine != other:
                return (f"namespace {shared[0]} is mirrored by stack {name!r} with {key}={other!r}, and stack "
                        f"{stack!r} would write the same mirrors ({shared[0]}{MIRROR_NAMESPACE_SUFFIX}) with "
                        f"{key}={mine!r}: each stack's runs would rebuild or refuse what the other's wrote. Give "
                        f"this stack {key}={other!r}, or deploy it for other namespaces")
    return None


def checked(args: argparse.Namespace, sm: Any, s3: Optional["S3Client"] = None,
            glue: Optional["GlueClient"] = None, cfn: Any = None) -> Tuple[List[str], DestinationConfig]:
    """check(), with the secret's config it read (the secret is read once per deploy)."""
    stack = awsenv.stack_name(args.stack)
    warehouse_bucket, prefix, artifacts_bucket, artifacts_prefix = _locations(args, stack)
    extra = stack_params.parse(args.extra_params or "")
    cfg = _secret_config(args, sm, extra)
    expected = f"s3://{warehouse_bucket}" + (f"/{prefix}" if prefix else "")
    named = cfg.catalog_type == CatalogType.REST and not cfg.warehouse.startswith("s3://")
    if not named and cfg.warehouse.rstrip("/") != expected:
        raise awsenv.SetupError(
            f"the secret's writer.iceberg_s3_path is {cfg.warehouse} but WAREHOUSE_BUCKET/WAREHOUSE_PREFIX name "
            f"{expected}: they must be the same warehouse (the trigger maps S3 events and grants access by them)")
    namespaces = _namespaces(args.namespaces, cfg)
    if cfn is not None:
        conflict = mode_conflict(stack, namespaces, extra.get("SourceMode", "readonly"),
                                 awsenv.olake_cow_stacks(cfn, exclude=stack), extra)
        if conflict:
            raise awsenv.SetupError(conflict)
    protected = [("the warehouse", (warehouse_bucket, prefix))]
    if glue is not None and cfg.catalog_type == CatalogType.GLUE:
        protected += ownership.table_locations(glue, namespaces + [n + MIRROR_NAMESPACE_SUFFIX for n in namespaces],
                                               cfg.get("glue_catalog_id"))
    ownership.check_apart((artifacts_bucket, artifacts_prefix), protected)
    if s3 is not None:
        _buckets_exist(s3, [("WAREHOUSE_BUCKET", warehouse_bucket), ("ARTIFACTS_BUCKET", artifacts_bucket)])
    if args.params_out:
        with open(args.params_out, "w", encoding="utf-8") as f:
            f.write("".join(f"{k}={v}\n" for k, v in extra.items()))
    return [f"stack {stack} in {sm.meta.region_name}", f"secret {args.secret_arn} ({cfg.catalog_type} catalog)",
            f"warehouse {cfg.warehouse}" + (f" (a REST warehouse name; its files in {expected})" if named else ""),
            f"namespaces {', '.join(namespaces)}",
            f"artifacts s3://{artifacts_bucket}/{artifacts_prefix}/ (apart from the warehouse and its tables)"], cfg


_NETWORK = {"jdbc": "its database", "hive": "its metastore", "rest": "its REST endpoint"}


def in_region_aws_endpoint(url: str, region: str) -> bool:
    """A REST catalog an EMR Serverless job reaches without a VPC: Glue's Iceberg REST endpoint in
    the stack's region (a job without subnets reaches S3, Glue, STS, ... in its region only)."""
    host = re.sub(r"^https://", "", url.strip()).split("/")[0].lower()
    return host == f"glue.{region}.amazonaws.com"


def check_catalog(cfg: DestinationConfig, region: str, extra: Dict[str, str]) -> None:
    """SetupError for a config the stack's job or trigger cannot work with. A REST warehouse may be a
    name (Polaris, Lakekeeper, Unity) or an ARN (S3 Tables): WAREHOUSE_BUCKET/PREFIX then say where
    its files are, for the trigger's S3 events and the job role's grants."""
    if cfg.catalog_type == CatalogType.REST and not cfg.warehouse.startswith("s3://"):
        if "://" in cfg.warehouse:
            raise awsenv.SetupError(f"the secret's warehouse {cfg.warehouse!r} is not in S3: a REST catalog's "
                                    "warehouse is its name, an ARN, or an s3:// location")
    elif not cfg.warehouse.startswith("s3://"):
        raise awsenv.SetupError(f"the secret's warehouse {cfg.warehouse!r} is not in S3: the stack's job runs on EMR "
                                "Serverless and reads OLake's tables from S3 (a local or file: warehouse is for "
                                "local runs)")
    if cfg.catalog_type == CatalogType.HADOOP:
        raise awsenv.SetupError("the secret's catalog_type is hadoop (a file-system catalog, for local runs): "
                                "the stack needs the catalog OLake writes to (glue, jdbc, hive or rest)")
    if cfg.catalog_type == CatalogType.GLUE:
        glue_region = cfg.get("glue_region") or cfg.get("aws_region")
        if glue_region and glue_region != region:
            raise awsenv.SetupError(f"the secret's Glue catalog is in {glue_region} but the stack deploys to {region}: "
                                    "the trigger reads Glue and the job role is granted Glue in the stack's region; "
                                    f"deploy to {glue_region}")
        return
    if cfg.catalog_type == CatalogType.REST and in_region_aws_endpoint(str(cfg.get("rest_catalog_url")), region):
        return
    if not extra.get("SubnetIds", "").strip():
        raise awsenv.SetupError(f"the secret's catalog is {cfg.catalog_type}: the job must reach "
                                f"{_NETWORK[cfg.catalog_type]} from a VPC; pass EXTRA_PARAMS=\"SubnetIds=subnet-... "
                                "SecurityGroupIds=sg-...\" (README, Deploy)")
    if cfg.catalog_type == CatalogType.JDBC and not extra.get("JobExtraJars", "").strip():
        raise awsenv.SetupError("the secret's catalog is jdbc: EMR ships no JDBC driver; upload it and pass "
                                "EXTRA_PARAMS=\"JobExtraJars=s3://bucket/jars/postgresql.jar ...\"")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="preflight", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stack", default="olake-cow", help="STACK: the stack's name (default olake-cow)")
    p.add_argument("--warehouse-bucket", required=True, help="WAREHOUSE_BUCKET: the warehouse's bucket name")
    p.add_argument("--warehouse-prefix", default="", help="WAREHOUSE_PREFIX: the key prefix of the warehouse")
    p.add_argument("--artifacts-bucket", default="", help="ARTIFACTS_BUCKET (default: the warehouse bucket)")
    p.add_argument("--artifacts-prefix", default=None,
                   help="ARTIFACTS_PREFIX: the stack's own key prefix (default olake-cow/<stack>)")
    p.add_argument("--extra-params", default="", help="EXTRA_PARAMS: other stack parameters, Key=Value ...")
    p.add_argument("--params-out", help="write the checked EXTRA_PARAMS here, one Key=Value a line")
    p.add_argument("--secret-arn", required=True, help="SECRET_ARN: the destination secret (make secret prints it)")
    p.add_argument("--namespaces", required=True, help="NAMESPACES: the source namespaces, comma separated")
    p.add_argument("--region", help="AWS region (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's)")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)

    def run() -> int:
        session = awsenv.session(args.region)
        s3 = session.client("s3")
        sm, glue = session.client("secretsmanager"), session.client("glue")
        lines, cfg = checked(args, sm, s3, glue, session.client("cloudformation"))
        for line in lines:
            print(f"    ok: {line}")
        if cfg.catalog_type == CatalogType.GLUE:
            governed = lakeformation.check(session.client("lakeformation"), glue, args.stack,
                                           awsenv.name_list(args.namespaces), args.warehouse_bucket,
                                           args.warehouse_prefix, cfg.get("glue_catalog_id"))
            print(f"    note: {governed}" if governed else "    ok: Lake Formation does not govern the lake "
                  "(IAM grants are enough)")
        bucket = args.artifacts_bucket or args.warehouse_bucket
        prefix = args.artifacts_prefix if args.artifacts_prefix is not None else f"olake-cow/{args.stack}"
        done = ownership.claim(s3, (bucket, prefix), args.stack, session.region_name)
        print(f"    ok: s3://{bucket}/{prefix}/ {done} for stack {args.stack}")
        return 0

    return awsenv.run("deploy", run)


if __name__ == "__main__":
    sys.exit(main())
