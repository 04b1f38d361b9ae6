"""Builds the EMR Serverless StartJobRun request for one namespace's mirror run. Pure: no AWS calls.

The request carries the secret's id, never its content: the job reads the config itself.
"""
import hashlib
import re
from typing import Any, Dict, List, Sequence, Union

from olake_cow.core.config import DestinationConfig
from olake_cow.core.errors import ConfigError

from .decide import AllTables, Tables
from .settings import Settings

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


def job_arguments(settings: Settings, namespace: str, tables: Union[AllTables, Tables],
                  summary_uri: str, flags: Sequence[str] = ()) -> List[str]:
    args = ["--secret-id", settings.secret_id, "--source-namespace", namespace,
            "--cow-namespace", settings.cow_namespace(namespace),
            "--summary-out", summary_uri, "--delete-mode", settings.delete_mode,
            "--parallelism", str(settings.parallelism)]
    location = settings.cow_location(namespace)
    if location:
        args += ["--cow-base-location", location]
    if isinstance(tables, Tables):
        args += ["--tables", ",".join(sorted(tables.names))]
    if settings.region:
        args += ["--region", settings.region]
    if settings.source_mode and "--source-mode" not in flags:
        args += ["--source-mode", settings.source_mode.value]
    if settings.mirror_format and "--mirror-format" not in flags:
        args += ["--mirror-format", settings.mirror_format.value]
    return args + list(flags)


def spark_parameters(settings: Settings, cfg: DestinationConfig) -> str:
    """spark-submit parameters: the Iceberg runtime, the job's code, and catalog-specific jars."""
    jars = [settings.iceberg_jar] + [j.strip() for j in settings.extra_jars.split(",") if j.strip()]
    params = [f"--conf spark.jars={','.join(jars)}", f"--py-files {settings.py_files}",
              "--conf spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"]
    if cfg.catalog_type == "jdbc" and len(jars) == 1:
        # EMR ships the Glue, Hive and REST clients but no JDBC driver.
        raise ConfigError("the destination uses a JDBC catalog: set JOB_EXTRA_JARS to the S3 location "
                          "of its JDBC driver jar (e.g. postgresql.jar)")
    if settings.spark_parameters.strip():
        params.append(settings.spark_parameters.strip())
    return " ".join(params)


def start_job_run_request(settings: Settings, cfg: DestinationConfig, namespace: str,
                          tables: Union[AllTables, Tables], window: str, trigger: str,
                          flags: Sequence[str] = ()) -> Dict[str, Any]:
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
            "entryPointArguments": job_arguments(settings, namespace, tables, summary_uri, flags),
            "sparkSubmitParameters": spark_parameters(settings, cfg),
        }},
        "tags": {NAMESPACE_TAG: namespace, TRIGGER_TAG: trigger},
    }
    if monitoring:
        request["configurationOverrides"] = {"monitoringConfiguration": monitoring}
    return request
