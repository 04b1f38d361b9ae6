"""What the trigger does for each kind of event: the orchestration between the state store,
the debounce timer, the idle check and EMR Serverless. AWS clients are injected; the Powertools
wiring lives in handler.py."""
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from botocore.exceptions import ClientError

from olake_cow.config import DestinationConfig
from olake_cow.errors import ConfigError

from . import jobs
from .debounce import Debouncer
from .events import Commit, Ignored, JobStateChange, RunRequest, classify
from .freshness import freshness_for, is_compactor_commit, read_json_s3
from .metrics import Point, summary_points
from .settings import Settings
from .state import ALL_TABLES, StateStore, tables_of

log = logging.getLogger("olake_trigger")


@dataclass
class Clients:
    s3: Any
    emr: Any
    ddb: Any
    scheduler: Any
    glue: Any


class Trigger:
    def __init__(self, settings: Settings, clients: Clients, load_config: Callable[[], DestinationConfig],
                 emit: Callable[[str, Point], None], clock: Callable[[], float] = time.time):
        self.s, self.c, self.load_config, self.emit, self.clock = settings, clients, load_config, emit, clock
        self.store = StateStore(clients.ddb, settings.state_table)

    def now(self) -> int:
        return int(self.clock())

    # --- entry ------------------------------------------------------------------------------
    def handle(self, event: Any, request_id: str, function_arn: Optional[str]) -> Dict[str, Any]:
        self.function_arn = self.s.function_arn or function_arn
        is_job_event = isinstance(event, dict) and event.get("source") == "aws.emr-serverless"
        cfg = None if is_job_event else self.load_config()  # ConfigError is handled by the caller
        ev = classify(event, self.s, cfg.warehouse if cfg else None, request_id)
        if isinstance(ev, Ignored):
            log.info("ignored: %s", ev.reason)
            return {"status": "ignored", "reason": ev.reason}
        if isinstance(ev, JobStateChange):
            return self.on_job_state(ev)
        assert cfg is not None
        if isinstance(ev, Commit):
            return self.on_commit(ev, cfg)
        results = [self.on_request(ev, ns, tables, cfg) for ns, tables in ev.targets]
        return results[0] if len(results) == 1 else {"status": "multiple", "results": results}

    # --- S3 commit events -------------------------------------------------------------------
    def on_commit(self, ev: Commit, cfg: DestinationConfig) -> Dict[str, Any]:
        base = {"namespace": ev.namespace, "table": ev.table}
        if not self.store.first_sighting(f"s3:{ev.bucket}/{ev.key}", self.now(), self.s.dedupe_ttl_s):
            log.info("duplicate commit event for s3://%s/%s", ev.bucket, ev.key)
            return {**base, "status": "duplicate", "reason": "this commit was already seen"}
        try:
            if is_compactor_commit(read_json_s3(self.c.s3, f"s3://{ev.bucket}/{ev.key}")):
                return {**base, "status": "ignored", "reason": "the compactor's own commit (a change-set boundary)"}
        except (ClientError, ValueError) as exc:
            log.warning("cannot read s3://%s/%s (%s); treating it as a source commit", ev.bucket, ev.key,
                        type(exc).__name__)
        now = self.now()
        st = self.store.add_pending(ev.namespace, [ev.table], now)
        if st.leased(now):
            running = self._reconcile(ev.namespace, st.job_run_id)
            if running:
                return {**base, "status": "queued", "job_run_id": st.job_run_id,
                        "reason": "a job is running for this namespace; one follow-up run will start after it"}
        if self.s.quiet_period_s == 0:
            return {**base, **self.start(ev.namespace, (), f"commit:{ev.bucket}/{ev.key}", "commit", cfg)}
        due = st.last_commit + self.s.quiet_period_s
        self._debouncer().schedule(ev.namespace, due)
        return {**base, "status": "debounced", "due": due,
                "reason": f"the job starts when no commit arrived for {self.s.quiet_period_s} s"}

    # --- schedule, direct and debounce requests ---------------------------------------------
    def on_request(self, ev: RunRequest, namespace: str, tables: Optional[Tuple[str, ...]],
                   cfg: DestinationConfig) -> Dict[str, Any]:
        if ev.trigger == "debounce":
            st = self.store.get(namespace)
            due = st.last_commit + self.s.quiet_period_s
            if due > self.now():
                self._debouncer().schedule(namespace, due)
                return {"namespace": namespace, "status": "debounced", "due": due,
                        "reason": "a commit arrived during the quiet period"}
            return {"namespace": namespace, **self.start(namespace, (), ev.window, "debounce", cfg)}
        requested = tables if tables else None
        # Maintenance may be due when no source commit is: the idle check does not apply then.
        flags = list(ev.maintenance) + (["--source-mode", ev.source_mode] if ev.source_mode else []) + (
            ["--verify"] if ev.verify else [])
        force = ev.force or bool(ev.maintenance) or ev.verify  # a verify is asked for its own sake
        return {"namespace": namespace, **self.start(namespace, requested, f"{ev.trigger}:{ev.window}",
                                                     ev.trigger, cfg, force=force, dry_run=ev.dry_run,
                                                     maintenance=flags)}

    # --- starting a job ---------------------------------------------------------------------
    def start(self, namespace: str, requested: Optional[Sequence[str]], window: str, trigger: str,
              cfg: DestinationConfig, force: bool = False, dry_run: bool = False,
              maintenance: Sequence[str] = ()) -> Dict[str, Any]:
        """`requested`: None = every table; () = only the tables with pending commits."""
        if dry_run:
            asked = None if requested is None else list(requested)
            work = self._work(cfg, namespace, asked) if not force else None
            request = jobs.start_job_run_request(self.s, cfg, namespace, work or asked, window, trigger,
                                                 maintenance)
            return {"status": "dry_run", "would_start": work is None or bool(work),
                    "tables_with_work": work, "request": request}
        token = jobs.client_token(namespace, window)
        now = self.now()
        lease_until = now + 60 * (self.s.job_timeout_min + self.s.lease_margin_min)
        held = self.store.acquire(namespace, token, now, lease_until)
        if held is None:
            st = self.store.get(namespace)
            if self._reconcile(namespace, st.job_run_id):
                if requested is None or requested:
                    self.store.add_pending(namespace, requested)  # None: all tables
                return {"status": "queued", "job_run_id": st.job_run_id,
                        "reason": "a job is running for this namespace; one follow-up run will start after it"}
            held = self.store.acquire(namespace, token, now, lease_until)
            if held is None:
                return {"status": "queued", "reason": "another invocation is starting a job for this namespace"}
        pending = held.pending
        tables: Optional[Tuple[str, ...]]
        if requested is None or ALL_TABLES in pending:
            tables = None
        else:
            tables = tables_of(set(pending) | set(requested))
            if not pending and not requested:
                self.store.abandon(namespace, token, ())
                return {"status": "skipped", "reason": "no pending commits for this namespace"}
        try:
            if not force:
                work = self._work(cfg, namespace, tables)
                if work is not None and not work:
                    self.store.abandon(namespace, token, ())
                    self.emit(namespace, Point("Skipped", "Count", 1.0))
                    log.info("namespace %s: no source commit the mirror has not absorbed; no job started", namespace)
                    return {"status": "skipped", "reason": "no source commit that the mirror has not absorbed"}
                if work:
                    tables = tuple(work)
            request = jobs.start_job_run_request(self.s, cfg, namespace, tables, window, trigger, maintenance)
            run = self.c.emr.start_job_run(**request)
        except Exception:
            self.store.abandon(namespace, token, pending)
            raise
        summary_uri = jobs.summary_location(self.s, namespace, token)
        self.store.started(namespace, token, run["jobRunId"], summary_uri)
        self.emit(namespace, Point("JobsStarted", "Count", 1.0))
        log.info("namespace %s: started job run %s (%s) for %s", namespace, run["jobRunId"], trigger,
                 ",".join(tables) if tables else "all tables")
        return {"status": "started", "job_run_id": run["jobRunId"], "client_token": token,
                "tables": list(tables) if tables else "all", "summary": summary_uri}

    def _work(self, cfg: DestinationConfig, namespace: str, tables: Optional[Sequence[str]]):
        """Tables with work (list), or None when the catalog cannot be read from here."""
        fresh = freshness_for(cfg, self.c.glue, self.c.s3, self.s.cow_suffix, self.s.source_mode)
        if fresh is None:
            return None
        try:
            work, why = fresh.pending(namespace, tables)
        except (ClientError, ValueError, KeyError) as exc:
            log.warning("idle check for %s failed (%s: %s); starting the job anyway", namespace,
                        type(exc).__name__, exc)
            return None
        log.info("idle check for %s: %s", namespace, why or "nothing new")
        return work

    def _reconcile(self, namespace: str, job_run_id: Optional[str]) -> bool:
        """True if `job_run_id` still runs. A finished job whose end event was lost is finished here."""
        if not job_run_id:
            return True  # the lease holder is still starting its job
        try:
            run = self.c.emr.get_job_run(applicationId=self.s.application_id, jobRunId=job_run_id)["jobRun"]
        except ClientError:
            return True
        if run["state"] in ("SUCCESS", "FAILED", "CANCELLED"):
            log.warning("job run %s ended (%s) without an end event reaching us; finishing it now",
                        job_run_id, run["state"])
            self.finish(namespace, job_run_id, run["state"], follow_up=False)
            return False
        return True

    # --- job end ------------------------------------------------------------------------------
    def on_job_state(self, ev: JobStateChange) -> Dict[str, Any]:
        base = {"job_run_id": ev.job_run_id, "state": ev.state}
        if ev.application_id != self.s.application_id:
            return {**base, "status": "ignored", "reason": "another EMR Serverless application"}
        if not ev.terminal:
            return {**base, "status": "ignored", "reason": f"state {ev.state} is not final"}
        run = self.c.emr.get_job_run(applicationId=ev.application_id, jobRunId=ev.job_run_id)["jobRun"]
        namespace = (run.get("tags") or {}).get(jobs.NAMESPACE_TAG)
        if not namespace:
            return {**base, "status": "ignored", "reason": "not a job this trigger started"}
        return {**base, "namespace": namespace, **self.finish(namespace, ev.job_run_id, ev.state)}

    def finish(self, namespace: str, job_run_id: str, state: str, follow_up: bool = True) -> Dict[str, Any]:
        st = self.store.finish(namespace, job_run_id)
        if st is None:
            return {"status": "duplicate", "reason": "this job's end was already handled"}
        summary = None
        if st.summary_uri:
            try:
                summary = read_json_s3(self.c.s3, st.summary_uri)
            except (ClientError, ValueError) as exc:
                log.warning("no summary at %s (%s)", st.summary_uri, type(exc).__name__)
        for point in summary_points(summary, state, self.s.table_metrics_limit):
            self.emit(namespace, point)
        out: Dict[str, Any] = {"status": "finished", "summary_status": (summary or {}).get("status")}
        if follow_up and st.pending:
            cfg = self.load_config()
            due = st.last_commit + self.s.quiet_period_s
            if self.s.quiet_period_s and due > self.now():
                self._debouncer().schedule(namespace, due)
                out["follow_up"] = {"status": "debounced", "due": due}
            else:
                out["follow_up"] = self.start(namespace, (), f"followup:{job_run_id}", "followup", cfg)
        return out

    def _debouncer(self) -> Debouncer:
        if not self.s.scheduler_role_arn or not self.function_arn:
            raise ConfigError("QUIET_PERIOD_SECONDS > 0 needs SCHEDULER_ROLE_ARN (and the function ARN) "
                              "for the debounce schedule; set QUIET_PERIOD_SECONDS=0 to start at once")
        return Debouncer(self.c.scheduler, self.s.scheduler_group, self.s.scheduler_role_arn, self.function_arn)
