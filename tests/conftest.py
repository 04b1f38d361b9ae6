import shutil
import tempfile

import pytest

# The heaviest files first, by worker-seconds (CI 83 of 2026-12-04, `--durations=0`: test_mirror
# 531 s down to test_writer 39 s). xdist hands whole files to its two workers one at a time, so a big
# file handed out last runs alone while the other worker idles: longest first evens them out. Every
# other file keeps its place after these, and each file its own order. xdist 3.8 would reorder the
# files by their number of tests (test_class_archive, one 96 s test, went last: 130 s of one idle
# worker); the Makefile passes --no-loadscope-reorder to keep this order.
HEAVIEST_FIRST = (
    "tests/spark/test_mirror.py", "tests/spark/test_own.py", "tests/spark/test_engines.py",
    "tests/spark/test_rest.py", "tests/spark/test_readonly.py", "tests/spark/test_recovery.py",
    "tests/spark/test_maintenance.py", "tests/spark/test_partitioned.py", "tests/deploy/test_bad_input_infra.py",
    "tests/spark/test_delete_modes.py", "tests/spark/test_glue.py", "tests/spark/test_class_archive.py",
    "tests/trigger/test_trigger.py", "tests/spark/test_foreign_state.py", "tests/spark/test_hive.py",
    "tests/deploy/test_from_zero.py", "tests/deploy/test_two_stacks.py", "tests/spark/test_catalogs.py",
    "tests/spark/test_express_lane.py", "tests/spark/test_dv.py", "tests/spark/test_writer.py",
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
