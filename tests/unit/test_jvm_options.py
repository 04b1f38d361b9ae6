"""The driver's class archive option (core/jvm.py) and how a local launch uses it."""
import re
import shutil
import subprocess

import pytest

from olake_cow.core.config import parse_destination
from olake_cow.core.errors import ConfigError
from olake_cow.core.jvm import (
    DRIVER_JAVA_OPTIONS,
    EXECUTOR_JAVA_OPTIONS,
    class_archive_option,
    executor_java_options,
)
from olake_cow.spark.session import CLASS_ARCHIVE_ENV, EXECUTOR_JAVA_OPTIONS_ENV, launch_conf

pytestmark = pytest.mark.unit
CFG = parse_destination({"catalog_type": "hadoop", "iceberg_s3_path": "file:/tmp/wh"})


def test_an_archive_is_used_when_it_exists_and_written_at_exit_when_not():
    assert class_archive_option("/a/driver.jsa", exists=True) == "-XX:SharedArchiveFile=/a/driver.jsa"
    assert class_archive_option("/a/driver.jsa", exists=False) == "-XX:ArchiveClassesAtExit=/a/driver.jsa"


@pytest.mark.parametrize("path", ["", "/a b/driver.jsa", "/a/driver.jsa\t"])
def test_an_archive_path_with_spaces_is_refused(path):
    with pytest.raises(ValueError, match="archive path"):
        class_archive_option(path, exists=True)


def test_a_local_launch_with_an_archive_puts_iceberg_on_the_drivers_own_class_path(monkeypatch, tmp_path):
    archive = tmp_path / "driver.jsa"
    archive.write_bytes(b"x")
    monkeypatch.setenv(CLASS_ARCHIVE_ENV, str(archive))
    monkeypatch.delenv("OLAKE_COW_DRIVER_JAVA_OPTIONS", raising=False)
    conf = launch_conf(CFG, local=True)
    assert conf["spark.driver.extraJavaOptions"] == f"{DRIVER_JAVA_OPTIONS} -XX:SharedArchiveFile={archive}"
    iceberg = conf["spark.jars"].split(",")[0]
    assert conf["spark.driver.extraClassPath"].split(":")[0] == iceberg


def test_a_local_launch_without_an_archive_is_as_before(monkeypatch):
    monkeypatch.delenv(CLASS_ARCHIVE_ENV, raising=False)
    monkeypatch.delenv("OLAKE_COW_DRIVER_JAVA_OPTIONS", raising=False)
    conf = launch_conf(CFG, local=True)
    assert conf["spark.driver.extraJavaOptions"] == DRIVER_JAVA_OPTIONS
    assert "spark.driver.extraClassPath" not in conf


def test_a_bad_archive_setting_is_a_config_error(monkeypatch):
    monkeypatch.setenv(CLASS_ARCHIVE_ENV, "/a b/driver.jsa")
    with pytest.raises(ConfigError, match=CLASS_ARCHIVE_ENV):
        launch_conf(CFG, local=True)


def test_executors_get_their_options_and_the_archive_when_there_is_one():
    assert executor_java_options("") == EXECUTOR_JAVA_OPTIONS
    assert executor_java_options("", "/a/driver.jsa") == f"{EXECUTOR_JAVA_OPTIONS} -XX:SharedArchiveFile=/a/driver.jsa"
    assert executor_java_options(" none ") == ""
    assert executor_java_options("none", "/a/driver.jsa") == "-XX:SharedArchiveFile=/a/driver.jsa"
    assert executor_java_options("-Xss4m") == "-Xss4m"
    with pytest.raises(ValueError, match="archive path"):
        executor_java_options("", "/a b/driver.jsa")


def test_the_executors_default_options_start_a_java_17_jvm():
    """A JVM refuses an option it does not know: an executor given one would never start."""
    java = shutil.which("java")
    if java is None:
        pytest.skip("no java on PATH")
    done = subprocess.run([java, *EXECUTOR_JAVA_OPTIONS.split(), "-XX:+PrintFlagsFinal", "-version"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert re.search(r"\bTier4InvocationThreshold\s+=\s+500000\b", done.stdout)  # taken, not ignored


def test_a_local_cluster_gives_its_executors_their_options_and_the_archive_on_the_drivers_class_path(
        monkeypatch, tmp_path):
    archive = tmp_path / "driver.jsa"
    archive.write_bytes(b"x")
    monkeypatch.setenv(CLASS_ARCHIVE_ENV, str(archive))
    monkeypatch.delenv(EXECUTOR_JAVA_OPTIONS_ENV, raising=False)
    conf = launch_conf(CFG, local=True, master="local-cluster[1,2,1024]")
    assert conf["spark.executor.extraJavaOptions"] == f"{EXECUTOR_JAVA_OPTIONS} -XX:SharedArchiveFile={archive}"
    assert conf["spark.executor.extraClassPath"] == conf["spark.driver.extraClassPath"]  # the archive needs it
    for master in (None, "local[2]"):  # the driver runs the tasks: no executor JVM to give options
        assert "spark.executor.extraJavaOptions" not in launch_conf(CFG, local=True, master=master)
    monkeypatch.delenv(CLASS_ARCHIVE_ENV)
    conf = launch_conf(CFG, local=True, master="local-cluster[1,2,1024]")
    assert conf["spark.executor.extraJavaOptions"] == EXECUTOR_JAVA_OPTIONS
    assert "spark.executor.extraClassPath" not in conf
    monkeypatch.setenv(EXECUTOR_JAVA_OPTIONS_ENV, "none")  # as OLake's script runs in the bench: Java's defaults
    assert "spark.executor.extraJavaOptions" not in launch_conf(CFG, local=True, master="local-cluster[1,2,1024]")
