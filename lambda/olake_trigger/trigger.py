"""What the trigger does for each kind of event: carries out the decisions of decide.py with the
state store, the debounce timer, the catalog check and EMR Serverless. AWS clients are injected;
the Powertools wiring lives in handler.py."""
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Union

from botocore.exceptions import ClientError

from olake_cow.core.config import DestinationConfig
from olake_cow.core.errors import ConfigError, aws_error_code
from olake_cow.core.maintenance import MaintenanceOptions

from . import jobs
from .debounce import Debouncer
from .decide import (
    AllTables,
    PendingTables,
    Skip,
    TableCheck,
    Tables,
    TableSelection,
    TriggerStatus,
    covered,
    decide,
    lease_until,
    pending_entry,
)
from .events import Commit, Ignored, JobStateChange, Refused, RunRequest, check_request, classify
from .freshness import freshness_for, is_truncate_boundary, read_json_s3
from .jobs import RunOptions
from .metrics import Point, Prices, billed_points, summary_points
from .settings import Settings
from .state import StateStore

if TYPE_CHECKING:  # typed clients for mypy (the mypy-boto3 stubs are a development dependency)
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_emr_serverless import EMRServerlessClient
    from mypy_boto3_glue import GlueClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_scheduler import EventBridgeSchedulerClient

log = logging.getLogger("olake_trigger")
QUEUED_REASON = "a mirror run holds this namespace; one follow-up run will start after it"


@dataclass
class Clients:
    s3: "S3Client"
    emr: "EMRServerlessClient"
    ddb: "DynamoDBClient"
    scheduler: "EventBridgeSchedulerClient"
    glue: "GlueClient"


def _result(status: TriggerStatus, **fields: Any) -> Dict[str, Any]:
    return {"status": status.value, **fields}


class Trigger:
    """The Lambda's decisions, one method per event: a metadata commit (debounced), a schedule or
    a direct request (checked, then a run per namespace under a lease), a run's end (metrics from
    its summary, a follow-up run for what arrived meanwhile). AWS clients and the clock come in."""

    def __init__(self, settings: Settings, clients: Clients, load_config: Callable[[], DestinationConfig],
                 emit: Callable[[str, Point], None], clock: Callable[[], float] = time.time) -> None:
        self.s, self.c, self.load_config, self.emit, self.clock = settings, clients, load_config, emit, clock
        self.store = StateStore(clients.ddb, settings.state_table)

    def now(self) -> int:
        return int(self.clock())

    # --- entry ------------------------------------------------------------------------------
    def handle(self, event: Any, request_id: str, function_arn: Optional[str]) -> Dict[str, Any]:
        self.function_arn = self.s.function_arn or function_arn
        is_job_event = isinstance(event, dict) and event.get("source") == "aws.emr-serverless"
        cfg = None if is_job_event else self.load_config()  # ConfigError is handled by the caller
        ev = classify(event, self.s, cfg.warehouse if cfg else None, request_id, cfg.catalog_type if cfg else None)
        if isinstance(ev, Ignored):
            log.info("ignored: %s", ev.reason)
            return _result(TriggerStatus.IGNORED, reason=ev.reason)
        if isinstance(ev, Refused):
            return self._refuse(ev.namespace, ev.reason)
        if isinstance(ev, JobStateChange):
            return self.on_job_state(ev)
        assert cfg is not None
        if isinstance(ev, Commit):
            return self.on_commit(ev, cfg)
        check_request(ev, self.s, cfg.catalog_type)
        results = [self.on_request(ev, ns, tables, cfg) for ns, tables in ev.targets]
        return results[0] if len(results) == 1 else _result(TriggerStatus.MULTIPLE, results=results)

    # --- S3 commit events -------------------------------------------------------------------
    def on_commit(self, ev: Commit, cfg: DestinationConfig) -> Dict[str, Any]:
        base = {"namespace": ev.namespace, "table": ev.table}
        if not self.store.first_sighting(f"s3:{ev.bucket}/{ev.key}", self.now(), self.s.dedupe_ttl_s):
            log.info("duplicate commit event for s3://%s/%s", ev.bucket, ev.key)
            return {**base, **_result(TriggerStatus.DUPLICATE, reason="this commit was already seen")}
        try:
            if is_truncate_boundary(read_json_s3(self.c.s3, f"s3://{ev.bucket}/{ev.key}")):
                return {**base, **_result(TriggerStatus.IGNORED,
                                          reason="the job's own truncate (a change-set boundary)")}
        except (ClientError, ValueError) as exc:
            log.warning("cannot read s3://%s/%s (%s); treating it as a source commit", ev.bucket, ev.key,
                        type(exc).__name__)
        now = self.now()
        st = self.store.add_pending(ev.namespace, [ev.table], now)
        if st.leased(now) and self._still_running(ev.namespace, st.job_run_id):
            return {**base, **_result(TriggerStatus.QUEUED, job_run_id=st.job_run_id, reason=QUEUED_REASON)}
        if self.s.quiet_period_s == 0:
            return {**base, **self.start(ev.namespace, PendingTables(), f"commit:{ev.bucket}/{ev.key}",
                                         RunOptions("commit"), cfg)}
        due = st.last_commit + self.s.quiet_period_s
        self._debouncer().schedule(ev.namespace, due)
        return {**base, **_result(TriggerStatus.DEBOUNCED, due=due,
                                  reason=f"the run starts when no commit arrived for {self.s.quiet_period_s} s")}

    # --- schedule, direct and debounce requests ---------------------------------------------
    def on_request(self, ev: RunRequest, namespace: str, tables: TableSelection,
                   cfg: DestinationConfig) -> Dict[str, Any]:
        if ev.trigger == "debounce":
            st = self.store.get(namespace)
            due = st.last_commit + self.s.quiet_period_s
            if due > self.now():
                self._debouncer().schedule(namespace, due)
                return {"namespace": namespace, **_result(TriggerStatus.DEBOUNCED, due=due,
                                                          reason="a commit arrived during the quiet period")}
            return {"namespace": namespace, **self.start(namespace, PendingTables(), ev.window,
                                                         RunOptions("debounce"), cfg)}
        # A verify is asked for its own sake: no check of what is new first.
        opts = RunOptions(ev.trigger, force=ev.force or ev.verify, dry_run=ev.dry_run, maintenance=ev.maintenance,
                          source_mode=ev.source_mode, mirror_format=ev.mirror_format, verify=ev.verify)
        return {"namespace": namespace, **self.start(namespace, tables, f"{ev.trigger}:{ev.window}", opts, cfg)}

    # --- starting a run -------------------------------------------------------------------------
    def start(self, namespace: str, requested: TableSelection, window: str, opts: RunOptions,
              cfg: DestinationConfig) -> Dict[str, Any]:
        refusal = self._not_in_catalog(cfg, namespace, requested)
        if refusal:  # before the lease: a refused request writes nothing
            return self._refuse(namespace, refusal)
        if opts.dry_run:
            return self._dry_run(namespace, requested, window, opts, cfg)
        token, now = jobs.client_token(namespace, window), self.now()
        until = lease_until(now, self.s.job_timeout_min, self.s.lease_margin_min)
        held = self.store.acquire(namespace, token, now, until)
        if held is None:
            st = self.store.get(namespace)
            if self._still_running(namespace, st.job_run_id):
                self.store.add_pending(namespace, pending_entry(requested))
                return _result(TriggerStatus.QUEUED, job_run_id=st.job_run_id, reason=QUEUED_REASON)
            held = self.store.acquire(namespace, token, now, until)
            if held is None:
                return _result(TriggerStatus.QUEUED, reason="another invocation is starting a run for this namespace")
        pending = held.pending
        try:
            tables = self._in_catalog(cfg, namespace, covered(requested, pending))
            decision = tables if isinstance(tables, Skip) else decide(
                tables, None if opts.force else self._checks(cfg, namespace, tables, opts.maintenance),
                opts.force, opts.maintenance.requested)
            if isinstance(decision, Skip):
                self.store.abandon(namespace, token, ())
                self.emit(namespace, Point("Skipped", "Count", 1.0))
                log.info("namespace %s: %s; no run started", namespace, decision.reason)
                return _result(TriggerStatus.SKIPPED, reason=decision.reason)
            request = jobs.start_job_run_request(self.s, cfg, namespace, decision.tables, window, opts,
                                                 decision.maintenance)
            run = self.c.emr.start_job_run(**request)
        except Exception:
            self.store.abandon(namespace, token, pending)
            raise
        summary_uri = jobs.summary_location(self.s, namespace, token)
        self.store.started(namespace, token, run["jobRunId"], summary_uri)
        self.emit(namespace, Point("JobsStarted", "Count", 1.0))
        log.info("namespace %s: started mirror run %s (%s) for %s", namespace, run["jobRunId"], opts.trigger,
                 ", ".join(f"{t}: {why}" for t, why in decision.why.items()) or _names(decision.tables))
        return _result(TriggerStatus.STARTED, job_run_id=run["jobRunId"], client_token=token,
                       tables=_names(decision.tables), summary=summary_uri)

    def _refuse(self, namespace: str, reason: str) -> Dict[str, Any]:
        """Nothing started: the request (or commit) names what no run could mirror. Counted."""
        log.warning("namespace %s: refused: %s", namespace, reason)
        self.emit(namespace, Point("Refused", "Count", 1.0))
        return {"namespace": namespace, **_result(TriggerStatus.REFUSED, reason=reason)}

    def _not_in_catalog(self, cfg: DestinationConfig, namespace: str, requested: TableSelection) -> Optional[str]:
        """Why a run for `requested` can only fail (the namespace or a named table is not in the Glue
        catalog), or None. Other catalogs cannot be read from the Lambda: the job checks them."""
        if cfg.catalog_type != "glue":
            return None
        ids = {"CatalogId": cfg.get("glue_catalog_id")} if cfg.get("glue_catalog_id") else {}
        try:
            self.c.glue.get_database(Name=namespace, **ids)
            missing = [t for t in (requested.names if isinstance(requested, Tables) else ())
                       if not self._glue_table(namespace, t, ids)]
        except ClientError as exc:
            if aws_error_code(exc) == "EntityNotFoundException":
                return f"namespace {namespace!r} is not in the Glue catalog: nothing to mirror"
            log.warning("cannot check %s in Glue (%s); the job checks it", namespace, aws_error_code(exc))
            return None
        if missing:
            return f"table(s) {', '.join(missing)} not in the Glue database {namespace!r}: nothing to mirror"
        return None

    def _in_catalog(self, cfg: DestinationConfig, namespace: str,
                    tables: Union[AllTables, Tables, Skip]) -> Union[AllTables, Tables, Skip]:
        """`tables` without those a commit named that the Glue catalog does not hold (a dropped table)."""
        if cfg.catalog_type != "glue" or not isinstance(tables, Tables):
            return tables
        ids = {"CatalogId": cfg.get("glue_catalog_id")} if cfg.get("glue_catalog_id") else {}
        try:
            kept = tuple(t for t in tables.names if self._glue_table(namespace, t, ids))
        except ClientError:
            return tables
        if kept != tables.names:
            log.warning("namespace %s: not in Glue, left out: %s", namespace,
                        ", ".join(sorted(set(tables.names) - set(kept))))
        return Tables(kept) if kept else Skip("no pending table is in the Glue catalog")

    def _glue_table(self, namespace: str, table: str, ids: Dict[str, Any]) -> bool:
        try:
            self.c.glue.get_table(DatabaseName=namespace, Name=table, **ids)
            return True
        except ClientError as exc:
            if aws_error_code(exc) == "EntityNotFoundException":
                return False
            raise

    def _dry_run(self, namespace: str, requested: TableSelection, window: str, opts: RunOptions,
                 cfg: DestinationConfig) -> Dict[str, Any]:
        """What a request would start, with nothing taken or started (pending commits stay pending)."""
        tables = covered(AllTables() if isinstance(requested, PendingTables) else requested, ())
        assert not isinstance(tables, Skip)
        checks = None if opts.force else self._checks(cfg, namespace, tables, opts.maintenance)
        decision = decide(tables, checks, opts.force, opts.maintenance.requested)
        chosen = tables if isinstance(decision, Skip) else decision.tables
        request = jobs.start_job_run_request(self.s, cfg, namespace, chosen, window, opts,
                                             not isinstance(decision, Skip) and decision.maintenance)
        return _result(TriggerStatus.DRY_RUN, would_start=not isinstance(decision, Skip),
                       tables_with_work=None if checks is None else sorted(
                           t for t, c in checks.items() if c.merge or c.due),
                       reason=decision.reason if isinstance(decision, Skip) else None, request=request)

    def _checks(self, cfg: DestinationConfig, namespace: str, tables: Union[AllTables, Tables],
                maintenance: MaintenanceOptions) -> Optional[Dict[str, TableCheck]]:
        """The metadata check of each covered table, or None when the catalog cannot be read from here."""
        fresh = freshness_for(cfg, self.c.glue, self.c.s3, self.s.cow_suffix, self.s.source_mode)
        if fresh is None:
            log.info("%s catalog %s is not read by the trigger (Glue only): the run decides, and commits nothing "
                     "when nothing is new", cfg.catalog_type, cfg.catalog_name)
            return None
        try:
            checks = fresh.check(namespace, tables.names if isinstance(tables, Tables) else None, maintenance,
                                 self.now() * 1000)
        except (ClientError, ValueError, KeyError) as exc:
            log.warning("metadata check for %s failed (%s: %s); starting the run anyway", namespace,
                        type(exc).__name__, exc)
            return None
        log.info("metadata check for %s: %s", namespace,
                 {t: c for t, c in checks.items() if c.merge or c.due} or "nothing new, nothing due")
        for t, c in checks.items():
            if c.refused:
                log.warning("%s.%s: no run is started for it: %s", namespace, t, c.refused)
        return checks

    def _still_running(self, namespace: str, job_run_id: Optional[str]) -> bool:
        """True if `job_run_id` still runs. A finished run whose end event was lost is finished here."""
        if not job_run_id:
            return True  # the lease holder is still starting its run
        try:
            run = self.c.emr.get_job_run(applicationId=self.s.application_id, jobRunId=job_run_id)["jobRun"]
        except ClientError:
            return True
        if run["state"] in ("SUCCESS", "FAILED", "CANCELLED"):
            log.warning("mirror run %s ended (%s) without an end event reaching us; finishing it now",
                        job_run_id, run["state"])
            self.finish(namespace, run, follow_up=False)
            return False
        return True

    # --- run end --------------------------------------------------------------------------------
    def on_job_state(self, ev: JobStateChange) -> Dict[str, Any]:
        base = {"job_run_id": ev.job_run_id, "state": ev.state}
        if ev.application_id != self.s.application_id:
            return {**base, **_result(TriggerStatus.IGNORED, reason="another EMR Serverless application")}
        if not ev.terminal:
            return {**base, **_result(TriggerStatus.IGNORED, reason=f"state {ev.state} is not final")}
        run = self.c.emr.get_job_run(applicationId=ev.application_id, jobRunId=ev.job_run_id)["jobRun"]
        namespace = (run.get("tags") or {}).get(jobs.NAMESPACE_TAG)
        if not namespace:
            return {**base, **_result(TriggerStatus.IGNORED, reason="not a run this trigger started")}
        return {**base, "namespace": namespace, **self.finish(namespace, {**run, "state": ev.state})}

    def finish(self, namespace: str, run: Mapping[str, Any], follow_up: bool = True) -> Dict[str, Any]:
        """Release the namespace, publish the run's metrics (summary and billed cost), start the follow-up."""
        st = self.store.finish(namespace, run["jobRunId"])
        if st is None:
            return _result(TriggerStatus.DUPLICATE, reason="this run's end was already handled")
        summary = None
        if st.summary_uri:
            try:
                summary = read_json_s3(self.c.s3, st.summary_uri)
            except (ClientError, ValueError) as exc:
                log.warning("no summary at %s (%s)", st.summary_uri, type(exc).__name__)
        prices = Prices(self.s.price_vcpu_hour, self.s.price_gb_hour, self.s.price_storage_gb_hour)
        for point in summary_points(summary, run["state"], self.s.table_metrics_limit) + billed_points(run, prices):
            self.emit(namespace, point)
        out = _result(TriggerStatus.FINISHED, summary_status=(summary or {}).get("status"))
        if follow_up and st.pending:
            cfg = self.load_config()
            due = st.last_commit + self.s.quiet_period_s
            if self.s.quiet_period_s and due > self.now():
                self._debouncer().schedule(namespace, due)
                out["follow_up"] = _result(TriggerStatus.DEBOUNCED, due=due)
            else:
                out["follow_up"] = self.start(namespace, PendingTables(), f"followup:{run['jobRunId']}",
                                              RunOptions("followup"), cfg)
        return out

    def _debouncer(self) -> Debouncer:
        if not self.s.scheduler_role_arn or not self.function_arn:
            raise ConfigError("QUIET_PERIOD_SECONDS > 0 needs SCHEDULER_ROLE_ARN (and the function ARN) "
                              "for the debounce schedule; set QUIET_PERIOD_SECONDS=0 to start at once")
        return Debouncer(self.c.scheduler, self.s.scheduler_group, self.s.scheduler_role_arn, self.function_arn)


def _names(tables: Union[AllTables, Tables]) -> Union[str, List[str]]:
    return list(tables.names) if isinstance(tables, Tables) else "all"
