"""Builds the EMR Serverless StartJobRun request for one namespace's mirror run. Pure: no AWS calls.

The request carries the secret's id, never its content: the job reads the config itself.
"""
import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import Any, Dict, Optional, Union

from olake_cow.core.config import CatalogType, DestinationConfig
from olake_cow.core.errors import ConfigError
from olake_cow.core.job_request import JobRequest, job_argv
from olake_cow.core.jvm import (
    DRIVER_JAVA_OPTIONS_KEY,
    EXECUTOR_JAVA_OPTIONS_KEY,
    class_archive_option,
    driver_java_options,
    executor_java_options,
)
from olake_cow.core.maintenance import MaintenanceOptions
from olake_cow.core.modes import Engine, MirrorFormat, SourceMode

from .decide import AllTables, Tables
from .settings import Settings


@dataclass(frozen=True)
class RunOptions:
    """How a run is asked for: beyond the tables, what the job gets and how the trigger decides."""

    trigger: str
    force: bool = False
    dry_run: bool = False
    maintenance: MaintenanceOptions = field(default_factory=MaintenanceOptions)
    source_mode: Optional[SourceMode] = None  # None: the deployment's setting
    mirror_format: Optional[MirrorFormat] = None  # None: the deployment's setting
    verify: bool = False
    lane: bool = True  # False: the express lane handed these tables over; EMR runs them (once)


NAMESPACE_TAG = "olake-cow:namespace"
TRIGGER_TAG = "olake-cow:trigger"
_TOKEN_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def client_token(namespace: str, window: str) -> str:
    """Idempotency token: the same namespace and trigger window always give the same token
    (1-64 chars of [A-Za-z0-9._-]), so a retried invocation cannot start a second job."""
    digest = hashlib.sha256(f"{namespace}\n{window}".encode()).hexdigest()[:24]
    return f"{_TOKEN_SAFE.sub('-', namespace)[:36]}-{digest}"


def summary_location(settings: Settings, namespace: str, token: str) -> str:
    return f"{settings.summary_uri.rstrip('/')}/{namespace}/{token}.json"


def job_request(settings: Settings, namespace: str, tables: Union[AllTables, Tables], summary_uri: str,
                opts: RunOptions, maintenance: bool) -> JobRequest:
    """The run a request asks for, with the deployment's settings where it says nothing."""
    return JobRequest(
        settings.secret_id, namespace, settings.cow_namespace(namespace), summary_uri,
        delete_mode=settings.delete_mode, parallelism=settings.parallelism,
        cow_base_location=settings.cow_location(namespace) or None,
        tables=tables.names if isinstance(tables, Tables) else None, region=settings.region or None,
        source_mode=opts.source_mode or settings.source_mode,
        mirror_format=opts.mirror_format or settings.mirror_format,
        verify=opts.verify, maintenance=opts.maintenance if maintenance else MaintenanceOptions())


def spark_parameters(settings: Settings, cfg: DestinationConfig) -> str:
    """spark-submit parameters: the Iceberg runtime, the job's code, and catalog-specific jars."""
    jars = [settings.iceberg_jar] + [j.strip() for j in settings.extra_jars.split(",") if j.strip()]
    params = [f"--conf spark.jars={','.join(jars)}", f"--py-files {settings.py_files}",
              "--conf spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"]
    if cfg.catalog_type == CatalogType.JDBC and len(jars) == 1:
        # EMR ships the Glue, Hive and REST clients but no JDBC driver.
        raise ConfigError("the destination uses a JDBC catalog: set JOB_EXTRA_JARS to the S3 location "
                          "of its JDBC driver jar (e.g. postgresql.jar)")
    if settings.spark_parameters.strip():
        params.append(settings.spark_parameters.strip())
    return " ".join(params)


def start_job_run_request(settings: Settings, cfg: DestinationConfig, namespace: str,
                          tables: Union[AllTables, Tables], window: str, opts: RunOptions,
                          maintenance: bool = False) -> Dict[str, Any]:
    token = client_token(namespace, window)
    summary_uri = summary_location(settings, namespace, token)
    monitoring: Dict[str, Any] = {}
    if settings.log_uri:
        monitoring["s3MonitoringConfiguration"] = {"logUri": settings.log_uri}
    if settings.log_group:
        monitoring["cloudWatchLoggingConfiguration"] = {
            "enabled": True, "logGroupName": settings.log_group,
            "logStreamNamePrefix": f"olake-cow/{_TOKEN_SAFE.sub('-', namespace)}"}
    request: Dict[str, Any] = {
        "applicationId": settings.application_id,
        "clientToken": token,
        "executionRoleArn": settings.execution_role_arn,
        "name": f"olake-cow {namespace}"[:256],
        "executionTimeoutMinutes": settings.job_timeout_min,
        "jobDriver": {"sparkSubmit": {
            "entryPoint": settings.entry_point,
            # Spark's: the express lane took what the python engine serves, and the job's package
            # (infra/package_job.py) carries no pyiceberg.
            "entryPointArguments": job_argv(replace(job_request(settings, namespace, tables, summary_uri, opts,
                                                                maintenance), engine=Engine.SPARK)),
            "sparkSubmitParameters": spark_parameters(settings, cfg),
        }},
        "tags": {NAMESPACE_TAG: namespace, TRIGGER_TAG: opts.trigger},
    }
    overrides: Dict[str, Any] = {}
    if monitoring:
        overrides["monitoringConfiguration"] = monitoring
    java = driver_java_options(settings.driver_java_options)
    if settings.class_archive:  # the job image's archive (infra/image): used if the JVM matches it, else ignored
        java = f"{java} {class_archive_option(settings.class_archive, exists=True)}".strip()
    executors = executor_java_options(settings.executor_java_options, settings.class_archive)
    jvm = {key: value for key, value in ((DRIVER_JAVA_OPTIONS_KEY, java), (EXECUTOR_JAVA_OPTIONS_KEY, executors))
           if value}
    if jvm:  # spark-defaults, not sparkSubmitParameters: a value with spaces needs no quoting there
        overrides["applicationConfiguration"] = [{"classification": "spark-defaults", "properties": jvm}]
    if overrides:
        request["configurationOverrides"] = overrides
    return request
