"""Post-sync debounce with EventBridge Scheduler: one one-time schedule per namespace, moved to
`last commit + quiet period` by every commit. When it fires, the Lambda starts the job if no
commit arrived since (else it moves the schedule again). The schedule deletes itself after it runs.
"""
import hashlib
import json
import re
import time
from typing import TYPE_CHECKING, Any, Dict

from botocore.exceptions import ClientError

from olake_cow.core.errors import aws_error_code

if TYPE_CHECKING:
    from mypy_boto3_scheduler import EventBridgeSchedulerClient

_SAFE = re.compile(r"[^0-9A-Za-z_.-]")


def schedule_name(namespace: str) -> str:
    digest = hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:10]
    return f"olake-cow-{_SAFE.sub('-', namespace)[:40]}-{digest}"


def at_expression(epoch_s: int) -> str:
    return "at(" + time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch_s)) + ")"


class Debouncer:
    def __init__(self, client: "EventBridgeSchedulerClient", group: str, role_arn: str, target_arn: str) -> None:
        self.scheduler, self.group, self.role_arn, self.target_arn = client, group, role_arn, target_arn

    def schedule(self, namespace: str, due_epoch_s: int) -> str:
        name = schedule_name(namespace)
        params: Dict[str, Any] = dict(
            Name=name, GroupName=self.group, ScheduleExpression=at_expression(due_epoch_s),
            ScheduleExpressionTimezone="UTC", FlexibleTimeWindow={"Mode": "OFF"},
            ActionAfterCompletion="DELETE", State="ENABLED",
            Description=f"olake-cow debounce for namespace {namespace}"[:512],
            Target={"Arn": self.target_arn, "RoleArn": self.role_arn,
                    "Input": json.dumps({"trigger": "debounce", "namespace": namespace,
                                         "window": f"debounce:{due_epoch_s}"}),
                    "RetryPolicy": {"MaximumRetryAttempts": 5, "MaximumEventAgeInSeconds": 3600}})
        # Moved first: during a sync every commit after the first finds the schedule there (one call,
        # not a refused create and an update: a large schema's sync is thousands of commits).
        try:
            self.scheduler.update_schedule(**params)
        except ClientError as exc:
            if aws_error_code(exc) != "ResourceNotFoundException":
                raise
            try:
                self.scheduler.create_schedule(**params)
            except ClientError as exc2:  # another invocation created it in between
                if aws_error_code(exc2) != "ConflictException":
                    raise
                self.scheduler.update_schedule(**params)
        return name
