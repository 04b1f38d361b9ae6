"""The Lambda's settings, read once from environment variables (see README, "Trigger")."""
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

from olake_cow.core.budget import DEFAULT_PYTHON_MAX_MB
from olake_cow.core.errors import ConfigError
from olake_cow.core.identifiers import MIRROR_NAMESPACE_SUFFIX
from olake_cow.core.maintenance import MAX_HOURS
from olake_cow.core.modes import DeleteMode, MirrorFormat, SourceMode, parse_delete_mode, parse_format, parse_mode

_S3 = re.compile(r"^s3://[a-z0-9.\-]{3,63}(/.*)?$")


@dataclass(frozen=True)
class Settings:
    secret_id: str
    source_namespaces: Tuple[str, ...]  # namespaces whose commits trigger runs ("*" = any)
    state_table: str
    application_id: str
    execution_role_arn: str
    entry_point: str  # s3://.../main.py
    py_files: str  # s3://.../olake_cow.zip
    summary_uri: str  # s3://bucket/prefix: summaries land at <prefix>/<namespace>/<token>.json
    cow_suffix: str = MIRROR_NAMESPACE_SUFFIX
    cow_base_location: Optional[str] = None  # mirrors at <base>/<cow namespace>/<table>_cow
    warehouse_location: Optional[str] = None  # overrides the config's iceberg_s3_path for key mapping
    quiet_period_s: int = 120
    job_timeout_min: int = 180
    lease_margin_min: int = 30
    delete_mode: DeleteMode = DeleteMode.KEEP
    source_mode: Optional[SourceMode] = None  # None: each mirror keeps its own; new mirrors readonly
    # Periodic runs expire source snapshots older than this; None: never (it writes OLake's tables)
    source_expiry_hours: Optional[float] = None
    mirror_format: Optional[MirrorFormat] = None  # None: each mirror keeps its own; new mirrors cow
    parallelism: int = 4
    iceberg_jar: str = "/usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar"
    extra_jars: str = ""  # e.g. the JDBC driver for a JDBC catalog, comma separated
    spark_parameters: str = ""  # appended verbatim to sparkSubmitParameters
    driver_java_options: str = ""  # the driver JVM's options: "" the job's short-run defaults, "none" none
    executor_java_options: str = ""  # the executors' options: "" the job's defaults (C2 later), "none" EMR's
    class_archive: str = ""  # the driver's class archive in the job image (core/jvm.py); "" none
    log_uri: Optional[str] = None  # S3 job logs
    log_group: Optional[str] = None  # CloudWatch job logs
    scheduler_group: str = "default"
    scheduler_role_arn: Optional[str] = None
    function_arn: Optional[str] = None  # debounce target; default: the invoked function
    config_max_age_s: int = 300
    dedupe_ttl_s: int = 7 * 24 * 3600
    table_metrics_limit: int = 25  # per-table metrics only for runs with at most this many tables (0: none)
    # EMR Serverless list prices (USD, us-east-1, 2026) for the estimated cost of a run
    price_vcpu_hour: float = 0.052624
    price_gb_hour: float = 0.0057785
    price_storage_gb_hour: float = 0.000111
    # The express lane (README, "Express lane"): small merges on the merge function, no EMR run
    merge_function_arn: Optional[str] = None  # None: the lane is off
    lane_max_mb: int = DEFAULT_PYTHON_MAX_MB  # the python engine's budget; 0: the lane is off
    lane_timeout_s: int = 600  # the merge function's timeout (its lease outlives its retry)
    lane_memory_mb: int = 3008
    price_lambda_gb_second: float = 0.0000166667  # Lambda x86 list price (USD, us-east-1, 2026)
    region: Optional[str] = None

    def cow_namespace(self, namespace: str) -> str:
        return namespace + self.cow_suffix

    def cow_location(self, namespace: str) -> Optional[str]:
        base = (self.cow_base_location or "").rstrip("/")
        return f"{base}/{self.cow_namespace(namespace)}" if base else None

    def watches(self, namespace: str) -> bool:
        if namespace.endswith(self.cow_suffix):
            return False  # a mirror namespace: its commits are the mirror job's own
        return "*" in self.source_namespaces or namespace in self.source_namespaces


_REQUIRED = {
    "secret_id": "OLAKE_SECRET_ID",
    "state_table": "STATE_TABLE",
    "application_id": "EMR_APPLICATION_ID",
    "execution_role_arn": "EMR_EXECUTION_ROLE_ARN",
    "entry_point": "JOB_ENTRY_POINT",
    "py_files": "JOB_PY_FILES",
    "summary_uri": "SUMMARY_S3_URI",
}


def _required(env: Mapping[str, str]) -> Dict[str, Any]:
    missing = [name for name in _REQUIRED.values() if not env.get(name, "").strip()]
    if missing:
        raise ConfigError(f"missing environment variable(s): {', '.join(missing)}")
    values: Dict[str, Any] = {field: env[name].strip() for field, name in _REQUIRED.items()}
    for field in ("entry_point", "py_files", "summary_uri"):
        if not _S3.match(values[field]):
            raise ConfigError(f"{_REQUIRED[field]} must be an s3:// URI, got {values[field]!r}")
    return values


def _what_to_mirror(env: Mapping[str, str]) -> Dict[str, Any]:
    """The namespaces, their mirrors' suffix, and how the job reads and writes them."""
    namespaces = tuple(n.strip() for n in env.get("SOURCE_NAMESPACES", "").split(",") if n.strip())
    if not namespaces:
        raise ConfigError("SOURCE_NAMESPACES must list the namespaces to mirror (comma separated) or '*'")
    delete_mode = parse_delete_mode(env.get("DELETE_MODE", "").strip() or Settings.delete_mode.value, "DELETE_MODE")
    suffix = env.get("COW_NAMESPACE_SUFFIX", Settings.cow_suffix).strip()
    if not suffix:
        raise ConfigError("COW_NAMESPACE_SUFFIX must not be empty (mirrors would overwrite sources)")
    return {"source_namespaces": namespaces, "cow_suffix": suffix, "delete_mode": delete_mode,
            "source_mode": parse_mode(env.get("SOURCE_MODE", "").strip() or None, "SOURCE_MODE"),
            "mirror_format": parse_format(env.get("MIRROR_FORMAT", "").strip() or None, "MIRROR_FORMAT")}


def _archive(env: Mapping[str, str]) -> str:
    path = env.get("JOB_CLASS_ARCHIVE", "").strip()
    if path and (not path.startswith("/") or any(c.isspace() for c in path)):
        raise ConfigError(f"JOB_CLASS_ARCHIVE {path!r}: give an absolute path in the job image, without spaces")
    return path


def from_env(env: Optional[Mapping[str, str]] = None) -> Settings:
    env = os.environ if env is None else env
    values = _required(env)
    values.update(_what_to_mirror(env))
    return Settings(
        cow_base_location=env.get("COW_BASE_LOCATION") or None,
        warehouse_location=env.get("WAREHOUSE_LOCATION") or None,
        quiet_period_s=_int(env, "QUIET_PERIOD_SECONDS", Settings.quiet_period_s, 0),
        job_timeout_min=_int(env, "JOB_TIMEOUT_MINUTES", Settings.job_timeout_min, 1),
        lease_margin_min=_int(env, "LEASE_MARGIN_MINUTES", Settings.lease_margin_min, 1),
        source_expiry_hours=_hours(env, "SOURCE_EXPIRY_HOURS"),
        parallelism=_int(env, "JOB_PARALLELISM", Settings.parallelism, 1),
        iceberg_jar=env.get("ICEBERG_JAR") or Settings.iceberg_jar,
        extra_jars=env.get("JOB_EXTRA_JARS", ""),
        spark_parameters=env.get("JOB_SPARK_PARAMETERS", ""),
        driver_java_options=env.get("JOB_DRIVER_JAVA_OPTIONS", ""),
        executor_java_options=env.get("JOB_EXECUTOR_JAVA_OPTIONS", ""),
        class_archive=_archive(env),
        log_uri=env.get("JOB_LOG_S3_URI") or None,
        log_group=env.get("JOB_LOG_GROUP") or None,
        scheduler_group=env.get("SCHEDULER_GROUP") or Settings.scheduler_group,
        scheduler_role_arn=env.get("SCHEDULER_ROLE_ARN") or None,
        function_arn=env.get("DEBOUNCE_TARGET_ARN") or None,
        config_max_age_s=_int(env, "CONFIG_MAX_AGE_SECONDS", Settings.config_max_age_s, 0),
        table_metrics_limit=_int(env, "TABLE_METRICS_LIMIT", Settings.table_metrics_limit, 0),
        price_vcpu_hour=_price(env, "PRICE_VCPU_HOUR", Settings.price_vcpu_hour),
        price_gb_hour=_price(env, "PRICE_GB_HOUR", Settings.price_gb_hour),
        price_storage_gb_hour=_price(env, "PRICE_STORAGE_GB_HOUR", Settings.price_storage_gb_hour),
        merge_function_arn=env.get("MERGE_FUNCTION_ARN", "").strip() or None,
        lane_max_mb=_int(env, "EXPRESS_LANE_MAX_MB", Settings.lane_max_mb, 0),
        lane_timeout_s=_int(env, "MERGE_TIMEOUT_SECONDS", Settings.lane_timeout_s, 1),
        lane_memory_mb=_int(env, "MERGE_MEMORY_MB", Settings.lane_memory_mb, 128),
        price_lambda_gb_second=_price(env, "PRICE_LAMBDA_GB_SECOND", Settings.price_lambda_gb_second),
        region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
        **values,
    )


def _number(env: Mapping[str, str], name: str, default: Any, minimum: Any, kind: type, what: str) -> Any:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(f"{name} must be {what}, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")
    return value


def _int(env: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    return int(_number(env, name, default, minimum, int, "an integer"))


def _hours(env: Mapping[str, str], name: str) -> Optional[float]:
    """A number of hours, None when unset or 0 (off)."""
    value = float(_number(env, name, 0.0, 0, float, "a number of hours"))
    if value > MAX_HOURS or value != value:
        raise ConfigError(f"{name} must be a number of hours from 0 to {MAX_HOURS}, got {value}")
    return value or None


def _price(env: Mapping[str, str], name: str, default: float) -> float:
    return float(_number(env, name, default, 0, float, "a price in USD"))
