"""What the trigger does for each kind of event, one handler per kind: a metadata commit
(commits.py, debounced), a schedule, direct or debounce request (starts.py: checked, then one run
per namespace under a lease, on EMR or the express lane), a run's end (job_ends.py: metrics, a
follow-up run; after the lane, the EMR run for what it left). They share a
Context (context.py: settings, AWS adapters, state store, clock); the Powertools wiring lives in
handler.py."""
import logging
import time
from typing import Any, Callable, Optional

from olake_cow.core.config import DestinationConfig

from .commits import Commits
from .context import Clients, Context
from .decide import Outcome, TriggerStatus
from .events import Commit, Ignored, JobStateChange, LaneEnd, Refused, check_request, classify
from .job_ends import JobEnds
from .metrics import Point
from .settings import Settings
from .starts import Starts

__all__ = ["Clients", "Trigger"]
log = logging.getLogger("olake_trigger")


class Trigger:
    def __init__(self, settings: Settings, clients: Clients, load_config: Callable[[], DestinationConfig],
                 emit: Callable[[str, Point], None], clock: Callable[[], float] = time.time) -> None:
        self.ctx = Context(settings, clients, load_config, emit, clock)
        self.starts = Starts(self.ctx)
        self.commits, self.job_ends = Commits(self.ctx, self.starts), JobEnds(self.ctx, self.starts)

    def handle(self, event: Any, request_id: str, function_arn: Optional[str]) -> Outcome:
        s = self.ctx.s
        self.ctx.function_arn = s.function_arn or function_arn
        is_job_event = isinstance(event, dict) and event.get("source") == "aws.emr-serverless"
        cfg = None if is_job_event else self.ctx.load_config()  # ConfigError is handled by the caller
        ev = classify(event, s, cfg.warehouse if cfg else None, request_id, cfg.catalog_type if cfg else None)
        if isinstance(ev, Ignored):
            log.info("ignored: %s", ev.reason)
            return Outcome(TriggerStatus.IGNORED, ev.reason)
        if isinstance(ev, Refused):
            return self.ctx.refuse(ev.namespace, ev.reason)
        if isinstance(ev, JobStateChange):
            return self.job_ends.on_job_state(ev)
        assert cfg is not None
        if isinstance(ev, LaneEnd):
            return self.job_ends.on_lane_end(ev, cfg)
        if isinstance(ev, Commit):
            return self.commits.on_commit(ev, cfg)
        check_request(ev, s, cfg.catalog_type)
        results = [self.starts.on_request(ev, ns, tables, cfg) for ns, tables in ev.targets]
        return results[0] if len(results) == 1 else Outcome(TriggerStatus.MULTIPLE, results=tuple(results))
