"""Stores OLake's destination.json in Secrets Manager after checking it with the job's own
config rules. Prints the secret's ARN (never its content).

    python infra/put_destination_secret.py --file destination.json [--name olake/destination] [--region R]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "emr_job"))
from olake_cow.config import parse_destination
from olake_cow.errors import ConfigError


def put(sm, name: str, text: str) -> str:
    cfg = parse_destination(text)  # raises ConfigError naming the bad key
    body = json.dumps(json.loads(text))
    try:
        arn = sm.create_secret(Name=name, SecretString=body,
                               Description=f"OLake destination config ({cfg.catalog_type} catalog)")["ARN"]
    except sm.exceptions.ResourceExistsException:
        arn = sm.put_secret_value(SecretId=name, SecretString=body)["ARN"]
    return arn


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--file", required=True)
    p.add_argument("--name", default="olake/destination")
    p.add_argument("--region")
    args = p.parse_args(argv)
    with open(args.file, encoding="utf-8") as f:
        text = f.read()
    import boto3

    try:
        arn = put(boto3.client("secretsmanager", region_name=args.region), args.name, text)
    except ConfigError as exc:
        print(f"put_destination_secret: {args.file}: {exc}", file=sys.stderr)
        return 2
    print(arn)
    return 0


if __name__ == "__main__":
    sys.exit(main())
