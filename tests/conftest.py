import shutil
import tempfile

import pytest


@pytest.fixture(scope="session")
def tmp_root():
    path = tempfile.mkdtemp(prefix="olake-cow-tests-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def aws(monkeypatch):
    """A fresh moto account with the trigger's resources (testkit.aws.Account)."""
    from moto import mock_aws

    from testkit.aws import REGION, Account

    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION,
                 "POWERTOOLS_SERVICE_NAME": "olake-cow-trigger", "POWERTOOLS_METRICS_NAMESPACE": "OlakeCow",
                 "POWERTOOLS_TRACE_DISABLED": "true"}.items():
        monkeypatch.setenv(k, v)
    with mock_aws(config={"lambda": {"use_docker": False}}):  # the merge function is invoked, never run here
        account = Account(monkeypatch)
        yield account
    from olake_trigger import handler

    handler.reset()
    handler.metrics.clear_metrics()
