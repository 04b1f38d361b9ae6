"""The trigger's express-lane adapter: start the merge function for a namespace's small merges
(an asynchronous invocation: its retry and its destinations are the function's own, template.yaml),
and the rules of when the lane is closed to a run."""
import json
from typing import TYPE_CHECKING, Optional

from olake_cow.core.config import DestinationConfig
from olake_cow.core.engines import engine_refusal
from olake_cow.core.formats import FORMATS
from olake_cow.core.lane import LaneRequest
from olake_cow.core.modes import SourceMode

from .jobs import RunOptions
from .settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient


class LaneRuns:
    def __init__(self, client: "LambdaClient", function_arn: str) -> None:
        self.client, self.function_arn = client, function_arn

    def start(self, req: LaneRequest) -> str:
        """Invoke the merge function asynchronously (Lambda queues it: 202); the lane run's id."""
        self.client.invoke(FunctionName=self.function_arn, InvocationType="Event",
                           Payload=json.dumps(req.payload()).encode("utf-8"))
        return req.run_id


def lane_closed(s: Settings, cfg: DestinationConfig, opts: RunOptions) -> Optional[str]:
    """Why no table of this run goes to the express lane (None: the lane is open to it)."""
    mode, fmt = opts.source_mode or s.source_mode, opts.mirror_format or s.mirror_format
    reasons = (
        (not s.merge_function_arn, "the express lane is off (ExpressLane=false)"),
        (s.lane_max_mb == 0, "the express lane's budget is 0 MB"),
        (not opts.lane, "the express lane handed these tables to EMR"),
        (opts.verify, "--verify runs on EMR"),
        (opts.force, "a forced run goes to EMR"),
        (opts.maintenance.requested or opts.maintenance.only, "maintenance runs on EMR"),
        (mode == SourceMode.TRUNCATE, "truncate mode runs on EMR"),
        (fmt is not None and not FORMATS[fmt].python_engine, f"{fmt and fmt.value} mirrors run on EMR"),
    )
    for on, why in reasons:
        if on:
            return why
    refusal = engine_refusal(cfg)
    return f"EMR runs it: {refusal}" if refusal else None
