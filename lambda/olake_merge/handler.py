"""The express lane's merge function: one namespace's small merges on the python engine (Arrow and
pyiceberg, no JVM), asked for by the trigger with the command line an EMR run of the same tables
gets (core/lane.py). It reads the destination config from Secrets Manager and writes the run's
summary as the job does. What it leaves to Spark comes back as `unfinished`: its asynchronous
invocation's destination (the trigger) starts one EMR run for those tables."""
import os
import time
from typing import Any, Dict

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers

from olake_cow.cli import build_parser, run
from olake_cow.core.lane import parse_lane_request, unfinished

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "olake-cow-merge"))
# The job's modules log through the standard "olake_cow" logger: the same JSON records.
copy_config_to_registered_loggers(source_logger=logger, include={"olake_cow"})


@logger.inject_lambda_context(log_event=False)
def lambda_handler(event: Dict[str, Any], context: Any) -> Dict[str, Any]:
    """A refused request raises (ConfigError): the invocation fails and its on-failure destination
    hands every table of it to EMR."""
    started = time.monotonic()
    req = parse_lane_request(event)
    logger.info("express lane run %s: %s", req.run_id, ", ".join(req.tables) if req.tables else "all tables",
                extra={"namespace": req.namespace})
    code, summary = run(build_parser().parse_args(req.engine_argv()))
    left = unfinished(summary, req.tables)
    result = {"namespace": req.namespace, "run_id": req.run_id, "exit_code": int(code),
              "status": (summary or {}).get("status", "refused"), "unfinished": None if left is None else list(left),
              "duration_s": round(time.monotonic() - started, 3), "summary": req.summary_uri}
    logger.info("express lane run %s done", req.run_id, extra={"result": result})
    return result
