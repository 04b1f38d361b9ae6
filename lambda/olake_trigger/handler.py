"""Lambda entry point: Powertools wiring around `Trigger`.

Logger (correlation id from EventBridge events), Tracer, Metrics (EMF) and Parameters (the
OLake destination config from Secrets Manager, cached for CONFIG_MAX_AGE_SECONDS)."""
import os
import time
from typing import Any, Dict, Optional

import boto3
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities import parameters

from olake_cow.core.config import DestinationConfig, parse_destination, redact
from olake_cow.core.errors import ConfigError

from .events import EventError
from .metrics import Point
from .settings import Settings, from_env
from .trigger import Clients, Trigger

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "olake-cow-trigger"))
tracer = Tracer()
metrics = Metrics()
# The trigger's modules log through the standard "olake_trigger" logger: same JSON format and
# correlation id as the handler's.
copy_config_to_registered_loggers(source_logger=logger, include={"olake_trigger"})

_settings: Optional[Settings] = None
_clients: Optional[Clients] = None
_known_secrets: list = []
clock = time.time  # replaced in tests


def _setup() -> Settings:
    global _settings, _clients
    if _settings is None:
        _settings = from_env()
    if _clients is None:
        kw = {"region_name": _settings.region} if _settings.region else {}
        _clients = Clients(s3=boto3.client("s3", **kw), emr=boto3.client("emr-serverless", **kw),
                           ddb=boto3.client("dynamodb", **kw), scheduler=boto3.client("scheduler", **kw),
                           glue=boto3.client("glue", **kw), lambda_=boto3.client("lambda", **kw))
    return _settings


def reset() -> None:
    """Forget cached settings, clients and config (tests; a new deployment)."""
    global _settings, _clients
    _settings = _clients = None
    _known_secrets.clear()
    parameters.clear_caches()


def load_config() -> DestinationConfig:
    s = _setup()
    try:
        raw = parameters.get_secret(s.secret_id, max_age=s.config_max_age_s)
    except parameters.exceptions.GetParameterError as exc:
        # The message is boto's error text (code and reason), never the secret's value.
        raise ConfigError(f"cannot read secret {s.secret_id!r} from Secrets Manager: {exc}") from None
    cfg = parse_destination(raw)
    _known_secrets[:] = cfg.secret_values()
    return cfg


# Also published with the service dimension only: the stack's alarms watch all namespaces at once.
ALARMED = ("JobFailed", "LagSeconds", "TablesBlocked")


def _publish(point: Point, dimensions: Dict[str, str]) -> None:
    with single_metric(name=point.name, unit=MetricUnit(point.unit), value=point.value,
                       namespace=metrics.namespace) as m:
        for key, value in dimensions.items():
            m.add_dimension(key, value)
        for key, value in point.metadata:
            m.add_metadata(key, value)


def emit(namespace: str, point: Point) -> None:
    if point.engine is not None:  # runs per engine: one dimension, across namespaces
        _publish(point, {"engine": point.engine})
        return
    dimensions = {"namespace": namespace}
    if point.table is not None:
        dimensions["table"] = point.table
    _publish(point, dimensions)
    if point.table is None and point.name in ALARMED:
        _publish(point, {})


@logger.inject_lambda_context(correlation_id_path=correlation_paths.EVENT_BRIDGE, log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: Dict[str, Any], context: Any) -> Dict[str, Any]:
    metrics.add_metric(name="Invocations", unit=MetricUnit.Count, value=1)
    try:
        s = _setup()
    except ConfigError as exc:
        logger.error("trigger misconfigured: %s", exc)
        metrics.add_metric(name="InvalidSettings", unit=MetricUnit.Count, value=1)
        return {"status": "invalid_settings", "reason": str(exc)}
    trigger = Trigger(s, _clients, load_config, emit, clock=lambda: clock())  # type: ignore[arg-type]
    try:
        result = trigger.handle(event, context.aws_request_id,
                                getattr(context, "invoked_function_arn", None)).to_dict()
    except ConfigError as exc:
        reason = redact(str(exc), _known_secrets)
        logger.error("invalid OLake destination config in %s: %s; no job started", s.secret_id, reason)
        metrics.add_metric(name="InvalidConfig", unit=MetricUnit.Count, value=1)
        return {"status": "invalid_config", "reason": reason}
    except EventError as exc:
        logger.error("rejected event: %s", exc)
        metrics.add_metric(name="RejectedEvents", unit=MetricUnit.Count, value=1)
        raise
    logger.info("done", extra={"result": {k: v for k, v in result.items() if k != "request"}})
    return result
