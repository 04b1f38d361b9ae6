"""Starting a mirror run for a namespace (a schedule, a direct request, a debounce timer or a
follow-up): check the catalog, take the namespace's lease, ask the metadata what has work, start
one EMR Serverless run."""
import logging
from typing import Any, Dict, List, Optional, Tuple, Union

from botocore.exceptions import ClientError

from olake_cow.core.budget import MB, Budget
from olake_cow.core.config import DestinationConfig
from olake_cow.core.job_request import job_argv
from olake_cow.core.lane import LANE_RUN_PREFIX, LaneRequest
from olake_cow.core.planner import TableAsk

from . import jobs
from .context import Context
from .decide import (
    EMR,
    LAMBDA,
    AllTables,
    Outcome,
    PendingTables,
    Route,
    Skip,
    Start,
    TableCheck,
    Tables,
    TableSelection,
    TriggerStatus,
    blocked,
    covered,
    decide,
    lane_lease_until,
    lease_until,
    pending_entry,
    route,
)
from .events import RunRequest
from .freshness import Freshness
from .glue import GlueTables
from .jobs import RunOptions
from .lane import lane_closed
from .lifecycle import still_running
from .metrics import Point
from .settings import Settings

log = logging.getLogger("olake_trigger")
QUEUED_REASON = "a mirror run holds this namespace; one follow-up run will start after it"


class Starts:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def on_request(self, ev: RunRequest, namespace: str, tables: TableSelection, cfg: DestinationConfig) -> Outcome:
        ctx = self.ctx
        if ev.trigger == "debounce":
            due = ctx.store.get(namespace).last_commit + ctx.s.quiet_period_s
            if due > ctx.now():
                ctx.debouncer().schedule(namespace, due)
                return Outcome(TriggerStatus.DEBOUNCED, "a commit arrived during the quiet period",
                               namespace=namespace, due=due)
            return self.start(namespace, PendingTables(), ev.window, ev.options, cfg).about(namespace)
        return self.start(namespace, tables, f"{ev.trigger}:{ev.window}", ev.options, cfg).about(namespace)

    def start(self, namespace: str, requested: TableSelection, window: str, opts: RunOptions,
              cfg: DestinationConfig) -> Outcome:
        ctx, glue = self.ctx, GlueTables.of(cfg, self.ctx.c.glue, self.ctx.c.s3)
        refusal = glue.missing(namespace, requested.names if isinstance(requested, Tables) else ()) if glue else None
        if refusal:  # before the lease: a refused request writes nothing
            return ctx.refuse(namespace, refusal)
        if opts.dry_run:
            return self._dry_run(namespace, requested, window, opts, cfg, glue)
        token, now = jobs.client_token(namespace, window), ctx.now()
        until = lease_until(now, ctx.s.job_timeout_min, ctx.s.lease_margin_min)
        held = ctx.store.acquire(namespace, token, now, until)
        if held is None:
            st = ctx.store.get(namespace)
            if self.still_running(namespace, st.job_run_id):
                ctx.store.add_pending(namespace, pending_entry(requested))
                return Outcome(TriggerStatus.QUEUED, QUEUED_REASON, job_run_id=st.job_run_id)
            held = ctx.store.acquire(namespace, token, now, until)
            if held is None:
                return Outcome(TriggerStatus.QUEUED, "another invocation is starting a run for this namespace")
        pending = held.pending
        try:
            decision, checks = self._decide(namespace, covered(requested, pending), opts, cfg, glue)
            needs_you = blocked(checks) or None
            if needs_you:  # alarmed (template.yaml): no failing run tells the user any more
                ctx.emit(namespace, Point("TablesBlocked", "Count", float(len(needs_you))))
            if isinstance(decision, Skip):
                ctx.store.abandon(namespace, token, ())
                ctx.emit(namespace, Point("Skipped", "Count", 1.0))
                log.info("namespace %s: %s; no run started", namespace, decision.reason)
                return Outcome(TriggerStatus.SKIPPED, decision.reason, needs_you=needs_you)
            way = route(decision, checks, lane_closed(ctx.s, cfg, opts))
            if way.lane is not None:
                return self._on_lane(namespace, token, now, way, window, opts, cfg).about(needs_you=needs_you)
            run_id = ctx.runs.start(jobs.start_job_run_request(ctx.s, cfg, namespace, decision.tables, window, opts,
                                                               decision.maintenance))
        except Exception:
            ctx.store.abandon(namespace, token, pending)
            raise
        summary_uri = jobs.summary_location(ctx.s, namespace, token)
        ctx.store.started(namespace, token, run_id, summary_uri)
        ctx.emit(namespace, Point("JobsStarted", "Count", 1.0))
        log.info("namespace %s: started mirror run %s (%s) for %s%s", namespace, run_id, opts.trigger,
                 ", ".join(f"{t}: {why}" for t, why in decision.why.items()) or _names(decision.tables),
                 "; on EMR: " + "; ".join(f"{t}: {why}" for t, why in way.why.items()) if ctx.s.merge_function_arn
                 else "")
        return Outcome(TriggerStatus.STARTED, job_run_id=run_id, client_token=token, tables=_names(decision.tables),
                       summary=summary_uri, needs_you=needs_you, **_routed(ctx.s, EMR, way))

    def _decide(self, namespace: str, tables: Union[AllTables, Tables, Skip], opts: RunOptions,
                cfg: DestinationConfig, glue: Optional[GlueTables]
                ) -> Tuple[Union[Start, Skip], Optional[Dict[str, TableCheck]]]:
        """Whether to start a run for `tables` (the covered ones), and each table's metadata check
        (None: not read)."""
        tables = glue.held(namespace, tables) if glue else tables
        if isinstance(tables, Skip):
            return tables, None
        checks = None if opts.force else self._checks(cfg, glue, namespace, tables, opts)
        return decide(tables, checks, opts.force, opts.maintenance.requested), checks

    def _on_lane(self, namespace: str, token: str, now: int, way: Route, window: str, opts: RunOptions,
                 cfg: DestinationConfig) -> Outcome:
        """Start the merge function under the namespace's lease (taken by start); the tables over
        its budget wait in the pending set for the EMR run its end starts."""
        ctx, lane = self.ctx, way.lane
        assert lane is not None and ctx.lanes is not None
        summary_uri = jobs.summary_location(ctx.s, namespace, token)
        argv = job_argv(jobs.job_request(ctx.s, namespace, lane, summary_uri, opts, False))
        req = LaneRequest(namespace, LANE_RUN_PREFIX + token, tuple(argv), ctx.s.lane_max_mb,
                          lane.names if isinstance(lane, Tables) else None, way.emr_after, summary_uri)
        # The lease outlives the function's timeout and its one retry: a lost end frees the namespace.
        ctx.store.extend(namespace, token, lane_lease_until(now, ctx.s.lane_timeout_s, ctx.s.lease_margin_min))
        if way.emr_after:
            ctx.store.add_pending(namespace, way.emr_after)
        run_id = ctx.lanes.start(req)
        ctx.store.started(namespace, token, run_id, summary_uri)
        ctx.emit(namespace, Point("LaneRunsStarted", "Count", 1.0))
        log.info("namespace %s: started express-lane run %s (%s): %s", namespace, run_id, opts.trigger,
                 "; ".join(f"{t}: {why}" for t, why in way.why.items()))
        return Outcome(TriggerStatus.STARTED, job_run_id=run_id, client_token=token, tables=_names(lane),
                       summary=summary_uri, **_routed(ctx.s, LAMBDA, way))

    def _dry_run(self, namespace: str, requested: TableSelection, window: str, opts: RunOptions,
                 cfg: DestinationConfig, glue: Optional[GlueTables]) -> Outcome:
        """What a request would start, with nothing taken or started (pending commits stay pending)."""
        tables = covered(AllTables() if isinstance(requested, PendingTables) else requested, ())
        assert not isinstance(tables, Skip)
        checks = None if opts.force else self._checks(cfg, glue, namespace, tables, opts)
        decision = decide(tables, checks, opts.force, opts.maintenance.requested)
        way = None if isinstance(decision, Skip) else route(decision, checks, lane_closed(self.ctx.s, cfg, opts))
        chosen = tables if isinstance(decision, Skip) else decision.tables
        request = jobs.start_job_run_request(self.ctx.s, cfg, namespace, chosen, window, opts,
                                             not isinstance(decision, Skip) and decision.maintenance)
        return Outcome(TriggerStatus.DRY_RUN, decision.reason if isinstance(decision, Skip) else None,
                       would_start=not isinstance(decision, Skip), request=request,
                       tables_with_work=None if checks is None else sorted(
                           t for t, c in checks.items() if c.merge or c.due), needs_you=blocked(checks) or None,
                       **(_routed(self.ctx.s, EMR if way.lane is None else LAMBDA, way) if way else {}))

    def _checks(self, cfg: DestinationConfig, glue: Optional[GlueTables], namespace: str,
                tables: Union[AllTables, Tables], opts: RunOptions) -> Optional[Dict[str, TableCheck]]:
        """The metadata check of each covered table, or None when the catalog cannot be read from here."""
        if glue is None:
            log.info("%s catalog %s is not read by the trigger (Glue only): the run decides, and commits nothing "
                     "when nothing is new", cfg.catalog_type, cfg.catalog_name)
            return None
        try:
            s = self.ctx.s
            lane = Budget(s.lane_max_mb * MB, first_builds=False)
            checks = Freshness(glue, s.cow_suffix, opts.source_mode or s.source_mode, TableAsk(s.delete_mode),
                               opts.mirror_format or s.mirror_format, lane).check(
                namespace, tables.names if isinstance(tables, Tables) else None, opts.maintenance,
                self.ctx.now() * 1000)
        except (ClientError, ValueError, KeyError) as exc:
            log.warning("metadata check for %s failed (%s: %s); starting the run anyway", namespace,
                        type(exc).__name__, exc)
            return None
        log.info("metadata check for %s: %s", namespace,
                 {t: c for t, c in checks.items() if c.merge or c.due} or "nothing new, nothing due")
        for t, c in checks.items():
            if c.blocked:
                log.error("%s.%s needs you: no run is started for it until this changes (a run could only fail): "
                          "%s", namespace, t, c.refused)
            elif c.refused:
                log.warning("%s.%s: no run is started for it: %s", namespace, t, c.refused)
        return checks

    def still_running(self, namespace: str, job_run_id: Optional[str]) -> bool:
        """True if `job_run_id` still runs (lifecycle.still_running)."""
        return still_running(self.ctx, namespace, job_run_id)


def _routed(s: Settings, engine: str, way: Route) -> Dict[str, Any]:
    """The routing fields of an outcome; none on a deployment without the express lane."""
    if not s.merge_function_arn:
        return {}
    return {"engine": engine, "emr_after": list(way.emr_after) or None, "routing": dict(way.why)}


def _names(tables: Union[AllTables, Tables]) -> Union[str, List[str]]:
    return list(tables.names) if isinstance(tables, Tables) else "all"
