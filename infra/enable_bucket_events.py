"""One-time step a stack cannot do for a bucket it does not own: turn on Amazon EventBridge
notifications for OLake's existing warehouse bucket, keeping every notification already set.

    python infra/enable_bucket_events.py BUCKET [--region REGION]
"""
import argparse
import sys


def enable(s3, bucket: str) -> bool:
    """Returns True if it changed anything."""
    config = s3.get_bucket_notification_configuration(Bucket=bucket)
    config.pop("ResponseMetadata", None)
    if "EventBridgeConfiguration" in config:
        return False
    config["EventBridgeConfiguration"] = {}
    s3.put_bucket_notification_configuration(Bucket=bucket, NotificationConfiguration=config)
    return True


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("bucket")
    p.add_argument("--region")
    args = p.parse_args(argv)
    import boto3

    changed = enable(boto3.client("s3", region_name=args.region), args.bucket)
    print(f"s3://{args.bucket}: EventBridge notifications " + ("turned on" if changed else "were already on"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
