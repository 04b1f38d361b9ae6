"""Stores OLake's destination.json (the config of OLake's Iceberg destination) in AWS Secrets Manager,
after checking it with the mirror job's own config rules, so a bad config is refused here and not
by every run. Prints the secret's ARN (never its content): pass it to `make deploy` as SECRET_ARN.
Run again to update the secret in place.

    python -m infra.put_destination_secret --file destination.json [--name olake/destination] [--region R]
    make secret FILE=destination.json                 (the same, from the deploy environment)

Exit codes: 0 stored, 2 bad config, unreadable file, or an AWS error (one line says what to fix).
"""
import argparse
import json
import re
import sys
from typing import Any, Optional, Sequence

from infra import awsenv
from olake_cow.core.config import decode_text, parse_destination
from olake_cow.core.errors import ConfigError

NAME = re.compile(r"[A-Za-z0-9/_+=.@-]{1,512}")


def check_name(name: str, region: str) -> None:
    """NAME is a secret's name (created or updated), or the ARN of an existing one in `region`."""
    if name.startswith("arn:"):
        parts = name.split(":")
        if len(parts) < 7 or parts[2] != "secretsmanager" or parts[5] != "secret":
            raise awsenv.SetupError(f"NAME {name!r} is not a Secrets Manager secret ARN nor a secret name")
        if parts[3] != region:
            raise awsenv.SetupError(f"NAME is a secret in {parts[3]} but this stores in {region}: set AWS_REGION="
                                    f"{parts[3]} to update it there, or give a name to store the config in {region}")
        return
    if not NAME.fullmatch(name):
        raise awsenv.SetupError(f"NAME {name!r} is not a secret name: letters, digits and /_+=.@- (at most 512)")


def put(sm: Any, name: str, text: str) -> str:
    cfg = parse_destination(text)  # raises ConfigError naming the bad key
    check_name(name, sm.meta.region_name)
    body = json.dumps(json.loads(text))
    try:
        if not name.startswith("arn:"):
            try:
                return sm.create_secret(Name=name, SecretString=body,
                                        Description=f"OLake destination config ({cfg.catalog_type} catalog)")["ARN"]
            except sm.exceptions.ResourceExistsException:
                pass
        if sm.describe_secret(SecretId=name).get("DeletedDate"):  # an existing secret, updated in place
            raise awsenv.SetupError(awsenv.deletion_hint(name))
        return sm.put_secret_value(SecretId=name, SecretString=body)["ARN"]
    except sm.exceptions.ResourceNotFoundException:
        raise awsenv.SetupError(f"secret {name} does not exist in {sm.meta.region_name}: give a name "
                                "(NAME=olake/destination) to create it") from None
    except Exception as exc:
        if awsenv.scheduled_for_deletion(exc):
            raise awsenv.SetupError(awsenv.deletion_hint(name)) from None
        raise


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="put_destination_secret", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--file", required=True, help="OLake's destination.json ({'type': 'ICEBERG', 'writer': {...}})")
    p.add_argument("--name", default="olake/destination", help="the secret's name (default olake/destination)")
    p.add_argument("--region", help="AWS region (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's)")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        with open(args.file, "rb") as f:
            text = decode_text(f.read())  # UTF-8, or UTF-16/32 with a byte-order mark
        parse_destination(text)
    except OSError as exc:
        print(f"put_destination_secret: error: cannot read --file {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    except ConfigError as exc:
        print(f"put_destination_secret: error: {args.file}: {exc}", file=sys.stderr)
        return 2

    def store() -> int:
        print(put(awsenv.session(args.region).client("secretsmanager"), args.name, text))
        return 0

    return awsenv.run("put_destination_secret", store)


if __name__ == "__main__":
    sys.exit(main())
