"""The trigger's IAM, call by call: every AWS action the Lambda performs while it handles each kind
of event (recorded from botocore as it calls moto) is granted by the template's TriggerRole, and
every action TriggerRole grants is either performed here or kept for a reason listed below."""
import pytest

from testkit import iam
from testkit.aws import fixture

pytestmark = pytest.mark.aws

# Granted without a call of the same name in these tests, and why.
KEPT = {
    "iam:PassRole": "StartJobRun passes the job role and CreateSchedule the scheduler role: AWS checks it, "
                    "no call of that name is made",
    "emr-serverless:TagResource": "StartJobRun with tags (the run's namespace and trigger) needs it",
    "logs:CreateLogStream": "the Lambda runtime writes the function's log, not the function's code",
    "logs:PutLogEvents": "the same",
    "xray:PutTraceSegments": "the Lambda runtime sends the traces of active tracing",
    "xray:PutTelemetryRecords": "the same",
}


@pytest.fixture
def recorded(aws, monkeypatch):
    """The IAM actions of the calls made inside aws.invoke (the Lambda), not by the test's setup."""
    calls = set()
    invoke = aws.invoke

    def invoking(event):
        with iam.api_calls() as seen:
            try:
                return invoke(event)
            finally:
                calls.update(action for action, _, _ in seen)

    monkeypatch.setattr(aws, "invoke", invoking)
    return calls


def test_every_call_the_trigger_makes_is_granted_and_every_grant_is_used(aws, recorded):
    aws.add_merge_function(QUIET_PERIOD_SECONDS=60)
    aws.glue_table("sales_cow", "orders_cow", "mirror_after_job")
    assert aws.invoke(aws.commit_event("sales", "orders"))["status"] == "debounced"  # a schedule created
    aws.invoke(aws.commit_event("sales", "orders"))  # ... and moved
    [schedule] = aws.schedules()
    aws.now += 120
    started = aws.fire(schedule["Name"])
    assert started["status"] == "started", started
    aws.set_job_state(started["job_run_id"], "RUNNING")
    assert aws.invoke({"namespace": "sales"})["status"] == "queued"
    aws.set_job_state(started["job_run_id"], "SUCCESS")
    assert aws.invoke(aws.end_event(started["job_run_id"]))["status"] in ("finished", "started")
    aws.invoke({"trigger": "schedule", "namespaces": ["sales", "crm"],
                "maintenance": {"compact_files": True, "rewrite_manifests": True}})
    aws.invoke({"namespace": "sales", "dry_run": True})
    aws.invoke({"namespace": "crm", "tables": ["ghost"]})  # refused: Glue lacks it
    # the express lane: a readonly mirror's small merge goes to the merge function, its end comes back
    aws.glue_table("crm", "contacts", "ro_source_new_commit")
    mirror = fixture("ro_mirror_after_job.metadata.json")
    mirror["properties"]["olake-cow.source-table"] = "crm.contacts"
    aws.glue_table("crm_cow", "contacts_cow", mirror)
    assert aws.invoke({"namespace": "crm"})["engine"] == "lambda"
    assert aws.invoke(aws.lane_end_event(aws.lane_requests[-1], {"unfinished": []}))["status"] == "finished"
    role = iam.role_actions("TriggerRole")
    assert recorded - role == set(), f"called but not granted: {sorted(recorded - role)}"
    unused = role - recorded - set(KEPT)
    assert unused == set(), f"granted but never called (remove, or list in KEPT with why): {sorted(unused)}"
    assert set(KEPT) <= role, f"KEPT names actions the role no longer grants: {sorted(set(KEPT) - role)}"


def test_every_call_of_the_jobs_python_side_is_granted_by_the_job_role_on_its_resources(aws, monkeypatch):
    """The job's own AWS calls (Iceberg's Java side is Glue and S3FileIO: tests/spark/test_glue.py):
    its config from the secret (by the ARN the trigger passes), the S3 summary's bucket check and the
    summary itself, against JobRole as CloudFormation makes it. The bucket check (HeadBucket, IAM's
    s3:ListBucket with no prefix) is the one call the role refuses, and the job leaves a refused
    check to the run."""
    import boto3
    from botocore.exceptions import ClientError

    from olake_cow.cli import read_secret, write_summary
    from olake_cow.preflight import check_summary_bucket
    from testkit.aws import ACCOUNT, REGION, SECRET_ID
    from testkit.moto_stack import template_role_policies

    arn = boto3.client("secretsmanager", region_name=REGION).describe_secret(SecretId=SECRET_ID)["ARN"]
    target = "s3://lake/olake-cow/summaries/sales/run.json"
    with iam.api_calls() as seen:
        assert read_secret(arn, None)
        check_summary_bucket(target, None)
        write_summary({"status": "succeeded", "tables": []}, target)
    assert {action for action, _, _ in seen} == {"secretsmanager:GetSecretValue", "s3:ListBucket", "s3:PutObject"}
    policies = template_role_policies("JobRole", {
        "WarehouseBucket": "lake", "WarehousePrefix": "warehouse", "ArtifactsBucket": "lake",
        "ArtifactsPrefix": "olake-cow", "DestinationSecretArn": arn, "SourceNamespaces": "sales"})
    assert iam.ungranted(iam.iam_calls(seen, REGION, ACCOUNT), policies) == ["s3:ListBucket on arn:aws:s3:::lake"]

    def refused(client, operation, params):
        raise ClientError({"Error": {"Code": "403", "Message": "Forbidden"}}, "HeadBucket")

    monkeypatch.setattr("botocore.client.BaseClient._make_api_call", refused)
    check_summary_bucket(target, None)  # refused: left to the run, which writes the summary (granted above)
