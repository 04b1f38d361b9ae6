"""The job's --secret-id refused in one line that names what to fix, against moto: an ARN of another
region than the run's, and a secret scheduled for deletion (neither prints the secret's value)."""
import boto3
import pytest
from moto import mock_aws

from olake_cow.cli import read_secret
from olake_cow.core.errors import ConfigError

pytestmark = pytest.mark.aws


@pytest.fixture
def secret(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        sm = boto3.client("secretsmanager", region_name="eu-west-1")
        yield sm, sm.create_secret(Name="olake/destination", SecretString='{"token": "s3cr3t-value"}')["ARN"]


def test_a_secret_of_another_region_is_named_with_the_region_to_pass(secret):
    _, arn = secret
    with pytest.raises(ConfigError, match="no such secret in us-east-1: the ARN names eu-west-1; pass --region "
                                          "eu-west-1") as refused:
        read_secret(arn, "us-east-1")
    assert "s3cr3t" not in str(refused.value)


def test_a_secret_scheduled_for_deletion_is_named_so(secret):
    sm, arn = secret
    assert read_secret(arn, "eu-west-1")  # readable until its deletion is scheduled
    sm.delete_secret(SecretId=arn, RecoveryWindowInDays=7)
    with pytest.raises(ConfigError, match="it is scheduled for deletion; restore it"):
        read_secret(arn, "eu-west-1")
