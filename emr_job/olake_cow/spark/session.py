"""Builds the one SparkSession of a job run: on EMR Serverless (under spark-submit) or locally.

Secret catalog properties are set on each session at run time (never in the launch
configuration), so they appear in no environment dump, event log or `spark.logConf` output.
"""
import glob
import os
import sys
from typing import Any, Dict, List, Mapping, Optional

from ..core.config import CatalogType, DestinationConfig, catalog_properties, jdbc_driver_jar
from ..core.errors import ConfigError
from ..core.jvm import (
    DRIVER_JAVA_OPTIONS_KEY,
    EXECUTOR_JAVA_OPTIONS_KEY,
    class_archive_option,
    driver_java_options,
    executor_java_options,
)

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
# A driver class archive for local runs (core/jvm.py): e.g. what `make bench` trains.
CLASS_ARCHIVE_ENV = "OLAKE_COW_CLASS_ARCHIVE"
# A local cluster's executor options, as the trigger's JOB_EXECUTOR_JAVA_OPTIONS ("none": none).
EXECUTOR_JAVA_OPTIONS_ENV = "OLAKE_COW_EXECUTOR_JAVA_OPTIONS"
REDACTION = r"(?i)secret|password|token|credential|access.key|session.token"


def local_jar_folder() -> str:
    """Where a local run finds Iceberg's jars (on EMR the release ships them): OLAKE_COW_JARS, else
    <python environment>/jars, which make setup fills by Maven coordinates (tools/jars.py)."""
    return os.environ.get("OLAKE_COW_JARS") or os.path.join(sys.prefix, "jars")


def local_iceberg_jar() -> str:
    """The Iceberg Spark runtime of a local run."""
    folder = local_jar_folder()
    jars = sorted(glob.glob(os.path.join(folder, "iceberg-spark-runtime-*.jar")))
    if not jars:
        raise ConfigError(f"Iceberg's Spark runtime not found in {folder}: run make setup (tools/jars.py fetches "
                          "it by its Maven coordinates), set OLAKE_COW_JARS to a folder holding it, or pass "
                          "--spark-conf spark.jars=/path/to/iceberg-spark-runtime.jar")
    return jars[-1]


def local_aws_jars() -> List[str]:
    """The AWS SDK v2 that Iceberg's GlueCatalog and S3FileIO need in local runs (Iceberg's
    iceberg-aws-bundle, beside the runtime; on EMR it comes with the release). Empty when not there."""
    return sorted(glob.glob(os.path.join(local_jar_folder(), "iceberg-aws-bundle-*.jar")))


def _needs_aws(cfg: DestinationConfig, public: Mapping[str, str]) -> bool:
    return cfg.catalog_type == CatalogType.GLUE or public.get("io-impl", "").endswith("S3FileIO")


def under_spark_submit() -> bool:
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _local_conf(master: Optional[str]) -> Dict[str, str]:
    """What a local run sets where EMR has its own settings."""
    conf = {
        "spark.master": master or "local[*]",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.driver.memory": os.environ.get("OLAKE_COW_DRIVER_MEMORY", "2g"),
        "spark.sql.session.timeZone": "UTC",
    }
    # Short-run JIT and GC (core/jvm.py); OLAKE_COW_DRIVER_JAVA_OPTIONS as the trigger's setting.
    java = driver_java_options(os.environ.get("OLAKE_COW_DRIVER_JAVA_OPTIONS", ""))
    archive = os.environ.get(CLASS_ARCHIVE_ENV, "")
    if archive:  # used when it exists, else written when this JVM exits (core/jvm.py)
        try:
            java = f"{java} {class_archive_option(archive, os.path.exists(archive))}".strip()
        except ValueError as exc:
            raise ConfigError(f"{CLASS_ARCHIVE_ENV}: {exc}") from exc
    if java:
        conf[DRIVER_JAVA_OPTIONS_KEY] = java
    return conf


def _local_class_path(cfg: DestinationConfig, public: Mapping[str, str], iceberg: str,
                      driver: Optional[str]) -> List[str]:
    """The local driver's system class path: what a class loader of Spark's own cannot serve."""
    classpath = [driver] if driver else []  # DriverManager only sees drivers on the system class path
    if os.environ.get(CLASS_ARCHIVE_ENV):
        # Only the JVM's own class loaders' classes are archived: Iceberg's too when it is on the system class path.
        classpath.insert(0, iceberg)
    if _needs_aws(cfg, public):
        aws = local_aws_jars()
        if not aws:
            raise ConfigError(f"a {cfg.catalog_type} catalog with S3FileIO needs Iceberg's AWS bundle in local runs: "
                              "run make setup (tools/jars.py) or set OLAKE_COW_JARS to a folder holding "
                              "iceberg-aws-bundle")
        classpath += aws  # on the system class path too: the SDK finds its HTTP clients by ServiceLoader
    return classpath


def _local_executor_conf(classpath: List[str]) -> Dict[str, str]:
    """Executors of their own (a local cluster, as EMR runs them): the trigger's executor options,
    and the driver's archive on the driver's class path, which the archive requires."""
    archive = os.environ.get(CLASS_ARCHIVE_ENV, "")
    archive = archive if archive and os.path.exists(archive) else ""
    java = executor_java_options(os.environ.get(EXECUTOR_JAVA_OPTIONS_ENV, ""), archive)
    conf = {EXECUTOR_JAVA_OPTIONS_KEY: java} if java else {}
    if archive:
        conf["spark.executor.extraClassPath"] = os.pathsep.join(classpath)
    return conf


def launch_conf(cfg: DestinationConfig, local: bool, master: Optional[str] = None,
                extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """Public Spark configuration for the run (no secret values)."""
    public, _ = catalog_properties(cfg)
    conf: Dict[str, str] = {
        "spark.sql.extensions": ICEBERG_EXTENSIONS,
        f"spark.sql.catalog.{cfg.catalog_name}": "org.apache.iceberg.spark.SparkCatalog",
        "spark.redaction.regex": REDACTION,
        "spark.sql.adaptive.enabled": "true",
        # Size shuffle partitions by the advisory size (writes: Iceberg's, about the target file
        # size), not by how many cores there are: fewer, larger files and tasks.
        "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
    }
    for key, value in public.items():
        conf[f"spark.sql.catalog.{cfg.catalog_name}.{key}"] = value
    jars = []
    # Under spark-submit (EMR) jars must be given at submit time (the trigger's sparkSubmitParameters).
    driver = jdbc_driver_jar(cfg) if local else None
    if driver:
        if driver.startswith("/") and not os.path.exists(driver):
            raise ConfigError(f"JDBC driver jar {driver} does not exist; install the OS package "
                              "(libpostgresql-jdbc-java / libxerial-sqlite-jdbc-java) or set "
                              "writer.jdbc_driver_jar")
        jars.append(driver)
    if local:
        jars.insert(0, local_iceberg_jar())
        conf.update(_local_conf(master))
    classpath = _local_class_path(cfg, public, jars[0], driver) if local else []
    if jars:
        conf["spark.jars"] = ",".join(jars)
    if classpath:
        conf["spark.driver.extraClassPath"] = os.pathsep.join(classpath)
    if local and (master or "").startswith("local-cluster"):
        conf.update(_local_executor_conf(classpath))
    for key, value in (extra or {}).items():
        conf[key] = value
    return conf


def build_session(cfg: DestinationConfig, app_name: str, master: Optional[str] = None,
                  extra: Optional[Mapping[str, str]] = None) -> Any:  # a SparkSession
    from pyspark.sql import SparkSession

    from . import py4j_names

    py4j_names.install()  # before PySpark resolves its own Java names
    local = not under_spark_submit()
    builder = SparkSession.builder.appName(app_name)
    for key, value in launch_conf(cfg, local, master, extra).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(os.environ.get("OLAKE_COW_SPARK_LOG_LEVEL", "ERROR"))
    apply_secrets(session, cfg)
    py4j_no_delay(session)
    return session


def py4j_no_delay(session: Any) -> bool:
    """Turn off Nagle's algorithm on the JVM's end of this Python thread's py4j connection (one
    connection per thread). Py4J writes a reply through an 8 KB buffer, so a longer reply leaves
    in pieces and Nagle holds the last one until the Python side's delayed ACK: every call that
    returned more than 8 KB (a table's metadata JSON) took 44 ms instead of under 1 ms. Best
    effort: False when the JVM does not let us reach the socket."""
    try:
        jvm = session._jvm
        thread = jvm.java.lang.Thread.currentThread()
        target = jvm.java.lang.Class.forName("java.lang.Thread").getDeclaredField("target")
        target.setAccessible(True)
        target.get(thread).getSocket().setTcpNoDelay(True)
        return True
    except Exception:  # noqa: BLE001 - a speed-up only
        return False


def apply_secrets(session: Any, cfg: DestinationConfig) -> None:
    _, secret = catalog_properties(cfg)
    for key, value in secret.items():
        session.conf.set(f"spark.sql.catalog.{cfg.catalog_name}.{key}", value)


def table_session(root: Any, cfg: DestinationConfig) -> Any:
    """An isolated session (own SQL conf, temp views, WAP id) sharing the root's SparkContext.
    The catalog is configured on it explicitly: a new session does not inherit settings made
    on an existing session at run time."""
    session = root.newSession()
    public, _ = catalog_properties(cfg)
    prefix = f"spark.sql.catalog.{cfg.catalog_name}"
    session.conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")
    for key, value in public.items():
        session.conf.set(f"{prefix}.{key}", value)
    apply_secrets(session, cfg)
    py4j_no_delay(session)  # table sessions are made in the thread that runs the table
    return session
