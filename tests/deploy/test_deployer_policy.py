"""The deployer's minimal policy (infra/deployer-policy.json: what `make secret`, `make
bucket-events`, `make deploy`, `make run-now` and `make destroy` need) checked the way the roles are:

  - every AWS call the deploy scripts make, recorded from botocore while they run against moto, is
    in the policy;
  - every resource type of the template has the create, read and delete actions CloudFormation
    calls with the deployer's credentials in the policy;
  - every action of the policy is one of those, or of `sam deploy`'s own (its change set and
    managed bucket), listed below."""
import json
import os

import boto3
import pytest
from moto import mock_aws

from infra import (
    destroy,
    enable_bucket_events,
    lakeformation,
    ownership,
    package_job,
    preflight,
    put_destination_secret,
)
from testkit import iam

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.aws
POLICY = os.path.join(ROOT, "infra", "deployer-policy.json")
# What CloudFormation calls with the deployer's credentials for each resource type of the template
# (create, read, update, delete; SAM's function is a Lambda function with EventBridge rules).
RESOURCE_ACTIONS = {
    "AWS::EMRServerless::Application": ["emr-serverless:CreateApplication", "emr-serverless:GetApplication",
                                        "emr-serverless:UpdateApplication", "emr-serverless:DeleteApplication",
                                        "emr-serverless:StopApplication", "emr-serverless:TagResource"],
    "AWS::IAM::Role": ["iam:CreateRole", "iam:GetRole", "iam:DeleteRole", "iam:PutRolePolicy", "iam:GetRolePolicy",
                       "iam:DeleteRolePolicy", "iam:TagRole", "iam:PassRole"],
    "AWS::Logs::LogGroup": ["logs:CreateLogGroup", "logs:DeleteLogGroup", "logs:PutRetentionPolicy",
                            "logs:DescribeLogGroups"],
    "AWS::DynamoDB::Table": ["dynamodb:CreateTable", "dynamodb:DescribeTable", "dynamodb:DeleteTable",
                             "dynamodb:UpdateTimeToLive", "dynamodb:DescribeTimeToLive",
                             "dynamodb:UpdateContinuousBackups", "dynamodb:DescribeContinuousBackups"],
    "AWS::Serverless::Function": ["lambda:CreateFunction", "lambda:GetFunction", "lambda:DeleteFunction",
                                  "lambda:UpdateFunctionCode", "lambda:UpdateFunctionConfiguration",
                                  "lambda:AddPermission", "lambda:RemovePermission", "lambda:TagResource",
                                  "events:PutRule", "events:DescribeRule", "events:DeleteRule", "events:PutTargets",
                                  "events:RemoveTargets"],
    "AWS::Scheduler::ScheduleGroup": ["scheduler:CreateScheduleGroup", "scheduler:GetScheduleGroup",
                                      "scheduler:DeleteScheduleGroup"],
    "AWS::Scheduler::Schedule": ["scheduler:CreateSchedule", "scheduler:GetSchedule", "scheduler:UpdateSchedule",
                                 "scheduler:DeleteSchedule"],
    "AWS::SNS::Topic": ["sns:CreateTopic", "sns:GetTopicAttributes", "sns:DeleteTopic"],
    "AWS::SNS::Subscription": ["sns:Subscribe", "sns:GetSubscriptionAttributes", "sns:Unsubscribe"],
    "AWS::CloudWatch::Alarm": ["cloudwatch:PutMetricAlarm", "cloudwatch:DescribeAlarms", "cloudwatch:DeleteAlarms"],
    "AWS::CloudWatch::Dashboard": ["cloudwatch:PutDashboard", "cloudwatch:GetDashboard",
                                   "cloudwatch:DeleteDashboards"],
}
# sam deploy's and sam delete's own calls (its change set, its managed bucket for --resolve-s3), and
# run-now's Lambda invocation (moto cannot run a Lambda here), with the reason each is kept.
SAM_AND_KEPT = {
    "cloudformation:CreateChangeSet": "sam deploy", "cloudformation:ExecuteChangeSet": "sam deploy",
    "cloudformation:DescribeChangeSet": "sam deploy", "cloudformation:DescribeStackEvents": "sam deploy's progress",
    "cloudformation:GetTemplateSummary": "sam deploy", "cloudformation:DeleteStack": "sam delete",
    "cloudformation:ListStacks": "sam delete", "cloudformation:ListStackResources": "sam delete",
    "cloudformation:DescribeStackResource": "sam delete",
    "s3:CreateBucket": "--resolve-s3 (SAM's managed bucket)", "s3:PutBucketPolicy": "--resolve-s3",
    "s3:PutBucketVersioning": "--resolve-s3", "s3:PutEncryptionConfiguration": "--resolve-s3",
    "s3:PutBucketPublicAccessBlock": "--resolve-s3", "s3:PutBucketTagging": "--resolve-s3",
    "s3:GetBucketLocation": "sam's uploads", "sts:GetCallerIdentity": "sam deploy",
    "lambda:InvokeFunction": "make run-now invokes the trigger",
    "emr-serverless:GetJobRun": "make run-now waits for the run",
}


# What the scripts call in the test below (kept equal to what it records, so this list cannot go stale).
SCRIPT_CALLS = {"secretsmanager:CreateSecret", "secretsmanager:PutSecretValue", "secretsmanager:DescribeSecret",
                "secretsmanager:GetSecretValue", "secretsmanager:DeleteSecret", "glue:GetDatabase", "glue:GetTables",
                "glue:DeleteTable", "lakeformation:GetDataLakeSettings",
                "lakeformation:ListResources", "s3:ListBucket", "s3:GetObject", "s3:PutObject", "s3:DeleteObject",
                "s3:GetBucketNotification", "s3:PutBucketNotification", "glue:DeleteDatabase",
                "cloudformation:DescribeStacks", "scheduler:ListSchedules"}


def policy_actions():
    with open(POLICY, encoding="utf-8") as f:
        doc = json.load(f)
    return {a for st in doc["Statement"] for a in (st["Action"] if isinstance(st["Action"], list) else [st["Action"]])}


def _mirror(s3, glue):
    from testkit.aws import fixture
    from testkit.moto_stack import glue_table

    meta = fixture("ro_mirror_after_job.metadata.json")
    meta["properties"].update({"olake-cow.made-by": "olake-cow", "olake-cow.source-table": "sales.orders"})
    key = "warehouse/sales_cow/orders_cow/metadata/00001-a.metadata.json"
    s3.put_object(Bucket="lake", Key=key, Body=json.dumps(meta).encode())
    glue.create_database(DatabaseInput={"Name": "sales_cow"})
    glue_table(glue, "sales_cow", "orders_cow", "s3://lake/warehouse/sales_cow/orders_cow", f"s3://lake/{key}")


@pytest.fixture
def deploy_calls(monkeypatch):
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    with mock_aws():
        s3 = boto3.client("s3")
        for bucket in ("lake", "art"):
            s3.create_bucket(Bucket=bucket)
        glue = boto3.client("glue")
        glue.create_database(DatabaseInput={"Name": "sales"})
        _mirror(s3, glue)  # one mirror the job made, for destroy --remove-mirrors
        with iam.api_calls() as seen:
            yield seen


def test_the_deploy_scripts_calls_are_in_the_deployers_policy(deploy_calls, tmp_path, capsys):
    sm, s3, glue = boto3.client("secretsmanager"), boto3.client("s3"), boto3.client("glue")
    body = json.dumps({"type": "ICEBERG", "writer": {"catalog_type": "glue", "iceberg_s3_path": "s3://lake/warehouse"}})
    arn = put_destination_secret.put(sm, "olake/destination", body)  # make secret
    put_destination_secret.put(sm, "olake/destination", body)  # ... again: updated
    enable_bucket_events.enable(s3, "lake")  # make bucket-events
    args = preflight.parser().parse_args(["--stack", "s", "--warehouse-bucket", "lake", "--warehouse-prefix",
                                          "warehouse", "--artifacts-bucket", "art", "--secret-arn", arn,
                                          "--namespaces", "sales"])
    preflight.check(args, sm, s3, glue)  # make deploy: the checks, the claim, Lake Formation, the code
    ownership.claim(s3, ("art", "olake-cow/s"), "s", "us-east-1")
    lakeformation.check(boto3.client("lakeformation"), glue, "s", ["sales"], "lake", "warehouse")
    version = package_job.build(str(tmp_path / "pkg"))
    package_job.upload(str(tmp_path / "pkg"), "s3://art/olake-cow/s/code", version, s3)
    assert destroy.main(["--stack", "s", "--skip-stack", "--remove-artifacts", "--remove-mirrors", "--remove-secret",
                         "--disable-bucket-events", "--yes", "--artifacts", "s3://art/olake-cow/s",
                         "--warehouse", "s3://lake/warehouse", "--namespaces", "sales", "--secret", arn,
                         "--bucket", "lake"]) == 0, capsys.readouterr()
    recorded = {action for action, _, _ in deploy_calls}
    missing = recorded - policy_actions()
    assert missing == set(), f"the deploy scripts call what the deployer's policy lacks: {sorted(missing)}"
    assert recorded == SCRIPT_CALLS, sorted(recorded ^ SCRIPT_CALLS)


def test_the_deployers_policy_covers_the_templates_resources_and_nothing_else():
    from testkit.template import load_template

    actions = policy_actions()
    types = {r["Type"] for r in load_template()["Resources"].values()}
    unknown = types - set(RESOURCE_ACTIONS)
    assert unknown == set(), f"resource types with no listed deploy actions: {sorted(unknown)}"
    needed = {a for t in types for a in RESOURCE_ACTIONS[t]}
    assert needed - actions == set(), f"the policy lacks what CloudFormation calls: {sorted(needed - actions)}"
    unused = actions - needed - SCRIPT_CALLS - set(SAM_AND_KEPT)
    assert unused == set(), f"the policy grants what nothing here needs: {sorted(unused)}"
