import shutil
import tempfile

import pytest

# The heaviest files first, by worker-seconds (`pytest -n 2 --dist loadfile --durations=0
# --junitxml=...`, 2026-12-02: test_mirror 553 s down to test_foreign_state 70 s). xdist hands whole
# files to its workers in collection order, so a big file collected late ran alone at the end while
# the other worker idled (2.5 minutes at 60% CPU). Longest first evens the two workers out; every
# other file keeps its place after these, and each file its own order.
HEAVIEST_FIRST = (
    "tests/spark/test_mirror.py", "tests/spark/test_rest.py", "tests/spark/test_engines.py",
    "tests/spark/test_readonly.py", "tests/spark/test_recovery.py", "tests/spark/test_maintenance.py",
    "tests/spark/test_delete_modes.py", "tests/spark/test_own.py", "tests/spark/test_partitioned.py",
    "tests/deploy/test_bad_input_infra.py", "tests/spark/test_glue.py", "tests/spark/test_class_archive.py",
    "tests/spark/test_hive.py", "tests/trigger/test_trigger.py", "tests/spark/test_dv.py",
    "tests/spark/test_foreign_state.py",
)


def pytest_collection_modifyitems(items):
    rank = {path: i for i, path in enumerate(HEAVIEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable


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
