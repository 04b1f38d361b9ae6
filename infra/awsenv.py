"""What every script in infra/ shares: the AWS region, found the same way for each of them and for
`sam deploy`, and AWS errors reported as one line that says what to fix.

Region, first found: --region, AWS_REGION, AWS_DEFAULT_REGION, the region of the AWS profile
(AWS_PROFILE or default, in ~/.aws/config).

    python -m infra.awsenv region [--region R]     prints the region (infra/deploy.sh uses it)

Exit codes: 0 printed, 2 no region found (one line says where to set one).
"""
import argparse
import os
import re
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

# The job's pure core (standard library only) is infra's one reader of names and URIs too.
from olake_cow.core import uris

if TYPE_CHECKING:
    import boto3.session


class SetupError(Exception):
    """Something to fix before talking to AWS; the message says what."""


NO_REGION = ("no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION, or a region in your AWS profile), "
             "or pass --region")


def region(explicit: Optional[str] = None) -> str:
    value = explicit or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if not value:
        import boto3

        value = boto3.session.Session().region_name  # the profile's region
    if not value:
        raise SetupError(NO_REGION)
    return value


_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def bucket_name(value: str, what: str = "BUCKET") -> str:
    """`value` as an S3 bucket name; SetupError that says what to write instead (a URI, a path)."""
    if "://" in value or "/" in value.strip("/"):
        bucket = value.split("://", 1)[-1].split("/", 1)[0]
        raise SetupError(f"{what} must be a bucket name, not a URI or path: use {bucket!r}, not {value!r} "
                         "(a key prefix goes in WAREHOUSE_PREFIX)")
    if not _BUCKET.match(value):
        raise SetupError(f"{what} {value!r} is not an S3 bucket name (3-63 lowercase letters, digits, dots, hyphens)")
    return value


def split_s3(uri: str, what: str = "location") -> Tuple[str, str]:
    """("bucket", "prefix") of s3://bucket/prefix (no slashes at the prefix's ends); SetupError that
    says what to write instead."""
    if not uri.startswith("s3://"):
        raise SetupError(f"{what} must be s3://bucket/prefix, not {uri!r}")
    bucket, prefix = uris.split_s3(uri)
    bucket_name(bucket, what)
    return bucket, prefix.strip("/")


def within(prefix: str, other: str) -> bool:
    """True if key prefix `prefix` is `other` or lies under it, by whole path segments ("" is the bucket)."""
    return not other or prefix == other or prefix.startswith(other.rstrip("/") + "/")


def overlaps(a: Tuple[str, str], b: Tuple[str, str]) -> bool:
    """Two (bucket, prefix) locations share objects: one holds the other."""
    return a[0] == b[0] and (within(a[1], b[1]) or within(b[1], a[1]))


_STACK = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,127}$")


def stack_name(value: str) -> str:
    """`value` as a CloudFormation stack name; SetupError naming the rule."""
    if not _STACK.match(value or ""):
        raise SetupError(f"STACK {value!r} is not a CloudFormation stack name: a letter, then letters, digits and "
                         "hyphens, at most 128 characters (e.g. olake-cow-sales)")
    if len(value) > STACK_NAME_MAX:
        raise SetupError(f"STACK {value!r} is {len(value)} characters; at most {STACK_NAME_MAX}: the stack names its "
                         f"schedule group {value}-debounce, which AWS allows 64 characters")
    return value


# The longest name the stack derives from its own: "<stack>-debounce" (a Scheduler group, 64 at most).
STACK_NAME_MAX = 64 - len("-debounce")


# Parameters only this project's template has: how a stack is known as an olake-cow stack.
SIGNATURE = ("WarehouseBucket", "DestinationSecretArn", "ArtifactsBucket", "SourceNamespaces")


def olake_cow_stacks(cfn: Any, exclude: str = "") -> Dict[str, Dict[str, str]]:
    """The olake-cow stacks of the region (but `exclude`), name -> parameters."""
    found: Dict[str, Dict[str, str]] = {}
    for page in cfn.get_paginator("describe_stacks").paginate():
        for st in page.get("Stacks", []):
            if st["StackName"] == exclude or st.get("StackStatus") == "DELETE_COMPLETE":
                continue
            params = {p["ParameterKey"]: p.get("ResolvedValue") or p.get("ParameterValue", "")
                      for p in st.get("Parameters", [])}
            if all(k in params for k in SIGNATURE):
                found[st["StackName"]] = params
    return found


def error_code(exc: BaseException) -> str:
    """The AWS error code of a botocore ClientError ("" for anything else)."""
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def session(explicit_region: Optional[str] = None) -> "boto3.session.Session":
    import boto3

    return boto3.session.Session(region_name=region(explicit_region))


def describe_stack(cfn: Any, stack: str, hint: str) -> dict:
    """The stack's description; SetupError naming the stack and region (and `hint`) when it is not there."""
    from botocore.exceptions import ClientError

    stack_name(stack)
    try:
        return cfn.describe_stacks(StackName=stack)["Stacks"][0]
    except ClientError as exc:
        if "does not exist" in exc.response.get("Error", {}).get("Message", ""):
            raise SetupError(f"stack {stack!r} does not exist in {cfn.meta.region_name}: name the stack make deploy "
                             f"created with STACK=<name> (--stack) and its region with AWS_REGION (--region){hint}"
                             ) from None
        raise


def scheduled_for_deletion(exc: BaseException) -> bool:
    """Secrets Manager's answer for a secret that is scheduled for deletion (any call but restore)."""
    from botocore.exceptions import ClientError

    if not isinstance(exc, ClientError):
        return False
    error = exc.response.get("Error", {})
    message = error.get("Message", "").lower()
    return error.get("Code") == "InvalidRequestException" and ("deletion" in message or "deleted" in message)


def deletion_hint(secret: str) -> str:
    return (f"secret {secret} is scheduled for deletion: restore it first (aws secretsmanager restore-secret "
            f"--secret-id {secret}) or store the config under another name (make secret NAME=...)")


def explain(exc: BaseException) -> str:
    """One line for an error from AWS or its client."""
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
    )

    if isinstance(exc, SetupError):
        return str(exc)
    if isinstance(exc, NoRegionError):
        return NO_REGION
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return ("no AWS credentials: run `aws configure` or `aws sso login`, or set AWS_PROFILE, or "
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
    if isinstance(exc, EndpointConnectionError):
        return f"cannot reach AWS ({exc}); check the region and the network"
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code, message = error.get("Code", "Error"), error.get("Message", "")
        operation = getattr(exc, "operation_name", "the call")
        if code in ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "403"):
            return (f"access denied for {operation}: the credentials in use need that permission "
                    f"({message or code})")
        if code == "NoSuchBucket":
            name = error.get("BucketName")
            return f"{f'bucket {name}' if name else 'the bucket'} does not exist (or belongs to another account)"
        if code == "ResourceNotFoundException":
            return f"{operation}: not found ({message or code})"
        if code in ("ExpiredToken", "ExpiredTokenException", "InvalidClientTokenId", "UnrecognizedClientException"):
            return f"the AWS credentials are expired or invalid ({code}); refresh them"
        return f"{operation} failed: {code}: {message}".rstrip(": ")
    return f"{type(exc).__name__}: {exc}"


def run(prog: str, main: Callable[[], int]) -> int:
    """Run a script's main, turning AWS and setup errors into one line on stderr and exit code 2."""
    from boto3.exceptions import Boto3Error
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return main()
    except (SetupError, BotoCoreError, ClientError) as exc:
        print(f"{prog}: error: {explain(exc)}", file=sys.stderr)
        return 2
    except Boto3Error as exc:  # S3UploadFailedError and the like wrap the ClientError's text
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2


def _main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="awsenv", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["region", "namespaces"], help="what to print")
    p.add_argument("value", nargs="?", default="", help="namespaces: the NAMESPACES list to normalize")
    p.add_argument("--region", help="use this region (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's)")
    args = p.parse_args(argv)
    print(",".join(name_list(args.value)) if args.what == "namespaces" else region(args.region))
    return 0


def name_list(text: str) -> List[str]:
    """A comma-separated list as the stack stores it: no spaces around names, no empty entries
    ("sales, crm," is sales,crm); a name given twice is refused."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SetupError(f"NAMESPACES names {twice[0]!r} more than once")
    return names


if __name__ == "__main__":
    sys.exit(run("awsenv", _main))
