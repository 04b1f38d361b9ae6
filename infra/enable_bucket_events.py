"""Turns on Amazon EventBridge notifications for OLake's warehouse bucket, keeping every
notification already set. A stack cannot change a bucket it does not own, so this is a one-time
step per bucket; without it no sync starts a mirror run (the periodic schedule still does).
`infra/destroy.py --disable-bucket-events` turns it off again.

    python -m infra.enable_bucket_events BUCKET [--region R] [--disable]
    make bucket-events BUCKET=my-olake-bucket        (the same, from the deploy environment)

Exit codes: 0 done (or already so), 2 an AWS error (one line says what to fix).
"""
import argparse
import sys
from typing import TYPE_CHECKING, Any, Dict, Optional, Sequence

from infra import awsenv

if TYPE_CHECKING:  # typed clients (development stubs only)
    from mypy_boto3_s3 import S3Client



def enable(s3: "S3Client", bucket: str) -> bool:
    """Returns True if it changed anything."""
    config: Dict[str, Any] = dict(s3.get_bucket_notification_configuration(Bucket=bucket))
    config.pop("ResponseMetadata", None)
    if "EventBridgeConfiguration" in config:
        return False
    config["EventBridgeConfiguration"] = {}
    s3.put_bucket_notification_configuration(Bucket=bucket, NotificationConfiguration=config)  # type: ignore[arg-type]
    return True


def disable(s3: "S3Client", bucket: str) -> bool:
    config: Dict[str, Any] = dict(s3.get_bucket_notification_configuration(Bucket=bucket))
    config.pop("ResponseMetadata", None)
    was_on = config.pop("EventBridgeConfiguration", None) is not None
    # Written even when it looks off already: the rest of the configuration is kept as it is.
    s3.put_bucket_notification_configuration(Bucket=bucket, NotificationConfiguration=config)  # type: ignore[arg-type]
    return was_on


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="enable_bucket_events", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bucket", help="the warehouse bucket (writer.iceberg_s3_path's bucket)")
    p.add_argument("--region", help="AWS region (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's)")
    p.add_argument("--disable", action="store_true", help="turn EventBridge notifications off instead")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)

    def apply() -> int:
        awsenv.bucket_name(args.bucket)
        s3 = awsenv.session(args.region).client("s3")
        changed = (disable if args.disable else enable)(s3, args.bucket)
        state = "off" if args.disable else "on"
        done = f"turned {state}" if changed else f"were already {state}"
        print(f"s3://{args.bucket}: EventBridge notifications {done}")
        return 0

    return awsenv.run("enable_bucket_events", apply)


if __name__ == "__main__":
    sys.exit(main())
