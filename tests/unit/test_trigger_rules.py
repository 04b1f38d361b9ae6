"""Pure rules of the trigger: settings, S3 key mapping, the job request, summary metrics."""
import os

import pytest

from olake_cow.core.config import parse_destination
from olake_cow.core.errors import ConfigError
from olake_cow.core.jvm import DRIVER_JAVA_OPTIONS, EXECUTOR_JAVA_OPTIONS
from olake_trigger import jobs
from olake_trigger.decide import Tables
from olake_trigger.events import Commit, Ignored, classify
from olake_trigger.metrics import summary_points
from olake_trigger.settings import from_env
from testkit.trigger_env import ENV

pytestmark = pytest.mark.unit



def s3_event(key, bucket="lake"):
    return {"source": "aws.s3", "detail-type": "Object Created", "id": "1",
            "detail": {"bucket": {"name": bucket}, "object": {"key": key}}}


@pytest.mark.parametrize("env, why", [
    ({"STATE_TABLE": ""}, "STATE_TABLE"),
    ({"JOB_ENTRY_POINT": "/tmp/main.py"}, "JOB_ENTRY_POINT must be an s3:// URI"),
    ({"SOURCE_NAMESPACES": " , "}, "SOURCE_NAMESPACES"),
    ({"QUIET_PERIOD_SECONDS": "soon"}, "QUIET_PERIOD_SECONDS must be an integer"),
    ({"QUIET_PERIOD_SECONDS": "-1"}, "QUIET_PERIOD_SECONDS must be >= 0"),
    ({"DELETE_MODE": "soft"}, "DELETE_MODE must be keep or hard"),
    ({"COW_NAMESPACE_SUFFIX": " "}, "COW_NAMESPACE_SUFFIX must not be empty"),
])
def test_settings_errors_name_the_variable(env, why):
    with pytest.raises(ConfigError, match=why):
        from_env({**ENV, **env})


@pytest.mark.parametrize("warehouse, key, expected", [
    ("s3://lake/wh", "wh/sales/orders/metadata/00001-x.metadata.json", ("sales", "orders")),
    ("s3://lake/wh/", "wh/sales.db/orders/metadata/00001-x.metadata.json", ("sales", "orders")),
    ("s3a://lake", "sales/orders-0123456789abcdef0123456789abcdef/metadata/v3.metadata.json", ("sales", "orders")),
    ("s3://lake/wh", "wh/sales/my-table/metadata/00001-x.metadata.json", ("sales", "my-table")),
])
def test_metadata_keys_map_to_namespace_and_table(warehouse, key, expected):
    ev = classify(s3_event(key), from_env(ENV), warehouse, "r")
    assert isinstance(ev, Commit) and (ev.namespace, ev.table) == expected


@pytest.mark.parametrize("key, env, why", [
    ("wh/sales/orders/data/x.parquet", {}, "not an Iceberg metadata file"),
    ("other/sales/orders/metadata/1.metadata.json", {}, "outside the warehouse"),
    ("wh/sales_cow/orders_cow/metadata/1.metadata.json", {}, "not a watched"),
    ("wh/crm/orders/metadata/1.metadata.json", {}, "not a watched"),
    ("mirrors/sales_m/orders_cow/metadata/1.metadata.json",
     {"COW_BASE_LOCATION": "s3://lake/mirrors", "WAREHOUSE_LOCATION": "s3://lake"}, "under the mirror location"),
    ("wh/sales/deep/orders/metadata/1.metadata.json", {}, "not <namespace>/<table>"),
])
def test_other_keys_are_ignored_with_a_reason(key, env, why):
    ev = classify(s3_event(key), from_env({**ENV, **env}), "s3://lake/wh", "r")
    assert isinstance(ev, Ignored) and why in ev.reason


def test_a_jdbc_catalog_needs_its_driver_jar():
    cfg = parse_destination({"catalog_type": "jdbc", "jdbc_url": "jdbc:postgresql://h/db", "iceberg_s3_path": "s3://bkt"})
    with pytest.raises(ConfigError, match="JOB_EXTRA_JARS"):
        jobs.spark_parameters(from_env(ENV), cfg)
    params = jobs.spark_parameters(from_env({**ENV, "JOB_EXTRA_JARS": "s3://bkt/jars/postgresql.jar"}), cfg)
    assert "spark.jars=/usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar,s3://bkt/jars/postgresql.jar" in params


def test_the_request_carries_the_secret_id_not_its_content():
    cfg = parse_destination({"catalog_type": "glue", "iceberg_s3_path": "s3://bkt", "aws_access_key": "AKIAX",
                             "aws_secret_key": "TopSecret1"})
    settings = from_env({**ENV, "COW_BASE_LOCATION": "s3://m/base/"})
    req = jobs.start_job_run_request(settings, cfg, "sales", Tables(("b", "a")), "w", jobs.RunOptions("direct"))
    args = req["jobDriver"]["sparkSubmit"]["entryPointArguments"]
    assert args[args.index("--tables") + 1] == "a,b"
    assert args[args.index("--cow-base-location") + 1] == "s3://m/base/sales_cow"
    assert "TopSecret1" not in str(req) and args[:2] == ["--secret-id", "s"]


def test_summary_points_without_summary_is_a_failure_only():
    assert [(p.name, p.value) for p in summary_points(None, "SUCCESS", 10)] == [("JobFailed", 1.0)]


def test_per_table_points_stop_at_the_limit():
    summary = {"status": "succeeded", "tables": [{"table": f"t{i}", "status": "up_to_date"} for i in range(5)]}
    assert any(p.table for p in summary_points(summary, "SUCCESS", 5))
    assert not any(p.table for p in summary_points(summary, "SUCCESS", 4))
    assert [p.value for p in summary_points(summary, "SUCCESS", 4) if p.name == "JobFailed"] == [0.0]


@pytest.mark.parametrize("setting, expected", [
    ("", DRIVER_JAVA_OPTIONS), ("none", None), ("-XX:+UseG1GC -Xss4m", "-XX:+UseG1GC -Xss4m")])
def test_the_driver_gets_short_run_jvm_options_unless_told_otherwise(setting, expected):
    cfg = parse_destination({"catalog_type": "glue", "iceberg_s3_path": "s3://bkt"})
    settings = from_env({**ENV, "JOB_DRIVER_JAVA_OPTIONS": setting})
    req = jobs.start_job_run_request(settings, cfg, "sales", Tables(("a",)), "w", jobs.RunOptions("direct"))
    apps = req.get("configurationOverrides", {}).get("applicationConfiguration", [])
    found = [a["properties"].get("spark.driver.extraJavaOptions") for a in apps
             if a["classification"] == "spark-defaults"]
    assert found == [expected]  # the executors' options are there either way
    assert "extraJavaOptions" not in req["jobDriver"]["sparkSubmit"]["sparkSubmitParameters"]


def test_the_template_default_is_the_jobs_own():
    """The template passes DriverJavaOptions and ExecutorJavaOptions through, empty by default: the
    trigger then uses the job's own defaults (core/jvm.py), so the options have one home."""
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "template.yaml"), encoding="utf-8") as f:
        text = f.read()
    for role in ("Driver", "Executor"):
        assert f"JOB_{role.upper()}_JAVA_OPTIONS: !Ref {role}JavaOptions" in text
        param = text.split(f"\n  {role}JavaOptions:\n", 1)[1].splitlines()[:2]
        assert param == ["    Type: String", '    Default: ""'], param


def _driver_options(env: dict) -> list:
    cfg = parse_destination({"catalog_type": "glue", "iceberg_s3_path": "s3://bkt"})
    req = jobs.start_job_run_request(from_env({**ENV, **env}), cfg, "sales", Tables(("a",)), "w",
                                     jobs.RunOptions("direct"))
    apps = req.get("configurationOverrides", {}).get("applicationConfiguration", [])
    return [a["properties"].get("spark.driver.extraJavaOptions") for a in apps
            if a["classification"] == "spark-defaults"]


@pytest.mark.parametrize("options, expected", [
    ("", DRIVER_JAVA_OPTIONS + " -XX:SharedArchiveFile=/usr/lib/olake-cow/driver.jsa"),
    ("none", "-XX:SharedArchiveFile=/usr/lib/olake-cow/driver.jsa")])
def test_a_job_image_with_a_class_archive_gives_the_driver_its_archive(options, expected):
    env = {"JOB_DRIVER_JAVA_OPTIONS": options, "JOB_CLASS_ARCHIVE": "/usr/lib/olake-cow/driver.jsa"}
    assert _driver_options(env) == [expected]


ARCHIVE = "/usr/lib/olake-cow/driver.jsa"


@pytest.mark.parametrize("options, archive, expected", [
    ("", ARCHIVE, f"{EXECUTOR_JAVA_OPTIONS} -XX:SharedArchiveFile={ARCHIVE}"),
    ("", "", EXECUTOR_JAVA_OPTIONS),
    ("none", ARCHIVE, f"-XX:SharedArchiveFile={ARCHIVE}"),
    ("none", "", None),  # EMR's own executor options stay
    ("-Xss4m", "", "-Xss4m")])
def test_the_executors_get_their_options_and_the_job_images_archive(options, archive, expected):
    cfg = parse_destination({"catalog_type": "glue", "iceberg_s3_path": "s3://bkt"})
    env = {**ENV, "JOB_EXECUTOR_JAVA_OPTIONS": options, "JOB_CLASS_ARCHIVE": archive}
    req = jobs.start_job_run_request(from_env(env), cfg, "sales", Tables(("a",)), "w", jobs.RunOptions("direct"))
    apps = req.get("configurationOverrides", {}).get("applicationConfiguration", [])
    found = [a["properties"].get("spark.executor.extraJavaOptions") for a in apps
             if a["classification"] == "spark-defaults"]
    assert found == [expected]
    assert "extraJavaOptions" not in req["jobDriver"]["sparkSubmit"]["sparkSubmitParameters"]


@pytest.mark.parametrize("path", ["driver.jsa", "/usr/lib/olake cow/driver.jsa"])
def test_a_class_archive_path_must_be_absolute_and_without_spaces(path):
    with pytest.raises(ConfigError, match="JOB_CLASS_ARCHIVE"):
        from_env({**ENV, "JOB_CLASS_ARCHIVE": path})


def test_the_template_gives_the_archive_only_with_the_job_image():
    """ImageUri (infra/image) sets the application's image and the archive's path; without it EMR's
    own image is used and the driver gets no archive option."""
    from testkit.template import load_template

    t = load_template()
    env = t["Resources"]["TriggerFunction"]["Properties"]["Environment"]["Variables"]
    assert env["JOB_CLASS_ARCHIVE"] == {"Fn::If": ["HasImage", "/usr/lib/olake-cow/driver.jsa", ""]}
    image = t["Resources"]["Application"]["Properties"]["ImageConfiguration"]
    assert image == {"Fn::If": ["HasImage", {"ImageUri": {"Ref": "ImageUri"}}, {"Ref": "AWS::NoValue"}]}
    assert t["Parameters"]["ImageUri"]["Default"] == ""
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "infra", "image", "Dockerfile"),
              encoding="utf-8") as f:
        assert "ArchiveClassesAtExit=/usr/lib/olake-cow/driver.jsa" in f.read()
