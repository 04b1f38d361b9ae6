"""testkit/iam.py, the resource-level IAM check make try-local and the two-stack test run: each
call's resources, and IAM's evaluation of a policy, on literal inputs."""
import pytest

from testkit import iam

pytestmark = pytest.mark.unit

REGION, ACCOUNT = "eu-west-1", "123456789012"
TABLE = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/state"
POLICY = {"Statement": [
    {"Effect": "Allow", "Action": ["dynamodb:GetItem", "DynamoDB:PutItem"], "Resource": TABLE},
    {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::lake/warehouse/*"},
    {"Effect": "Deny", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::lake/warehouse/secret/*"},
    {"Effect": "Allow", "Action": "glue:GetTable", "Resource": [f"arn:aws:glue:{REGION}:{ACCOUNT}:catalog",
                                                                "arn:*:glue:*:*:database/sales",
                                                                "arn:*:glue:*:*:table/sales/*"],
     "Condition": {"StringEquals": {"aws:ResourceAccount": ACCOUNT}}},
    {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "arn:aws:iam::123456789012:role/job",
     "Condition": {"StringEquals": {"iam:PassedToService": "emr-serverless.amazonaws.com"}}},
]}


def call(action, **params):
    service, op = action.split(":")
    return iam.iam_calls([(iam.action_of(service, op), params, {"jobRunId": "r1"})], REGION, ACCOUNT)


@pytest.mark.parametrize("calls, ok", [
    (call("dynamodb:GetItem", TableName="state"), True),
    (call("dynamodb:PutItem", TableName="state"), True),  # actions match case-insensitively
    (call("dynamodb:UpdateItem", TableName="state"), False),  # the action is not granted
    (call("dynamodb:GetItem", TableName="other"), False),  # granted, on another table
    (call("s3:GetObject", Bucket="lake", Key="warehouse/sales/t/metadata/v1.json"), True),
    (call("s3:HeadObject", Bucket="lake", Key="warehouse/x"), True),  # HeadObject is s3:GetObject
    (call("s3:GetObject", Bucket="lake", Key="warehouse/secret/x"), False),  # an explicit Deny wins
    (call("s3:GetObject", Bucket="lake", Key="olake-cow/x"), False),
    (call("glue:GetTable", DatabaseName="sales", Name="orders"), True),  # catalog, database and table
    (call("glue:GetTable", DatabaseName="crm", Name="orders"), False),
    (call("emr-serverless:StartJobRun", applicationId="a", executionRoleArn="arn:aws:iam::123456789012:role/job"),
     False),  # StartJobRun itself is not granted here; its PassRole is (below)
])
def test_a_call_is_granted_only_on_the_resources_the_policy_names(calls, ok):
    assert (iam.ungranted(calls[:1], [POLICY]) == []) is ok


def test_a_role_a_request_hands_over_is_checked_with_the_service_it_goes_to():
    start = call("emr-serverless:StartJobRun", applicationId="a", executionRoleArn="arn:aws:iam::123456789012:role/job",
                 tags={"k": "v"})
    assert [c.action for c in start] == ["emr-serverless:StartJobRun", "iam:PassRole", "emr-serverless:TagResource"]
    assert iam.granted(start[1], [POLICY])
    to_scheduler = iam.Call("iam:PassRole", ("arn:aws:iam::123456789012:role/job",),
                            (("iam:PassedToService", "scheduler.amazonaws.com"),))
    assert not iam.granted(to_scheduler, [POLICY])


def test_a_policy_reads_as_iam_boto3_and_motos_cloudformation_give_it():
    import json
    from urllib.parse import quote

    for doc in (POLICY, json.dumps(POLICY), quote(json.dumps(POLICY)), repr(POLICY)):
        assert iam.ungranted(call("dynamodb:GetItem", TableName="state"), [doc]) == []


def test_an_action_without_a_resource_mapping_is_an_error_not_a_pass():
    with pytest.raises(KeyError, match="no resource mapping for kms:Decrypt"):
        call("kms:Decrypt", KeyId="k")
