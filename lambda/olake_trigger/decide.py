"""The trigger's decisions, pure: which tables a mirror run covers, whether to start it, the lease.
trigger.py carries them out with the DynamoDB, catalog and EMR adapters."""
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

ALL_TABLES = "*"  # in the state store's pending set: every table of the namespace


class TriggerStatus(str, Enum):
    """What one invocation did for one namespace (the `status` of its result)."""

    STARTED = "started"
    QUEUED = "queued"  # a run holds the namespace; one follow-up run starts after it
    SKIPPED = "skipped"  # nothing new and no maintenance due: no run started
    DEBOUNCED = "debounced"  # waiting for the quiet period after a sync's last commit
    DRY_RUN = "dry_run"
    DUPLICATE = "duplicate"
    IGNORED = "ignored"
    REFUSED = "refused"  # the request or commit names what no run could mirror: nothing started
    FINISHED = "finished"
    MULTIPLE = "multiple"


@dataclass(frozen=True)
class Outcome:
    """What one invocation did (for one namespace): its status and the fields that status reports.
    The Lambda returns it as JSON, without the fields it leaves unset."""

    status: TriggerStatus
    reason: Optional[str] = None
    namespace: Optional[str] = None
    table: Optional[str] = None
    job_run_id: Optional[str] = None
    state: Optional[str] = None  # a run's end: its EMR state
    due: Optional[int] = None  # debounced: when the run starts (epoch seconds)
    client_token: Optional[str] = None
    tables: Union[str, List[str], None] = None  # started: the tables of the run ("all": every table)
    summary: Optional[str] = None  # started: where the run's summary will be
    summary_status: Optional[str] = None  # finished: the run summary's status
    would_start: Optional[bool] = None  # dry run
    tables_with_work: Optional[List[str]] = None  # dry run
    request: Optional[Mapping[str, Any]] = None  # dry run: the StartJobRun request
    follow_up: Optional["Outcome"] = None  # finished: the run started (or debounced) for later commits
    engine: Optional[str] = None  # started: "lambda" (the express lane) or "emr"
    emr_after: Optional[List[str]] = None  # started on the lane: tables the EMR run after it takes
    routing: Optional[Mapping[str, str]] = None  # started: why each table went where it went
    needs_you: Optional[Mapping[str, str]] = None  # tables no run is started for until you act -> why
    results: Tuple["Outcome", ...] = ()  # multiple: one per namespace

    def about(self, namespace: Optional[str] = None, table: Optional[str] = None, **run: Any) -> "Outcome":
        """The same outcome, naming what it is about."""
        return replace(self, namespace=namespace or self.namespace, table=table or self.table, **run)

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"status": self.status.value}
        for f in fields(self)[1:]:
            value = getattr(self, f.name)
            if isinstance(value, Outcome):
                value = value.to_dict()
            elif f.name == "results":
                value = [r.to_dict() for r in value] or None
            if value is not None:
                out[f.name] = value
        return out


@dataclass(frozen=True)
class AllTables:
    """Every table of the namespace."""


@dataclass(frozen=True)
class PendingTables:
    """Only the tables that have commits not yet handed to a run."""


@dataclass(frozen=True)
class Tables:
    names: Tuple[str, ...]


TableSelection = Union[AllTables, PendingTables, Tables]


@dataclass(frozen=True)
class Skip:
    reason: str


@dataclass(frozen=True)
class TableCheck:
    """What the catalog's metadata says about one table: why it needs a merge (None: it is up to
    date), and which of the requested maintenance has work."""

    merge: Optional[str] = None
    due: Tuple[str, ...] = ()
    refused: Optional[str] = None  # the job would skip or refuse this table: never a reason to start a run
    # The refusal is a failure the run would report (exit 1): until the user acts, every run for it
    # could only fail, so the trigger reports it (log, TablesBlocked metric and alarm) and starts none.
    blocked: bool = False
    spark_only: Optional[str] = None  # why the express lane does not take its merge (None: it fits)


@dataclass(frozen=True)
class Start:
    tables: Union[AllTables, Tables]
    maintenance: bool  # pass the requested maintenance to the run
    why: Mapping[str, str] = field(default_factory=dict)  # table -> why it is in the run (for the log)


def covered(requested: TableSelection, pending: Tuple[str, ...]) -> Union[AllTables, Tables, Skip]:
    """The tables a run covers: what was asked plus what earlier commits left pending."""
    if isinstance(requested, AllTables) or ALL_TABLES in pending:
        return AllTables()
    names = set(pending) | (set(requested.names) if isinstance(requested, Tables) else set())
    if not names:
        return Skip("no pending commits for this namespace")
    return Tables(tuple(sorted(names)))


def pending_entry(requested: TableSelection) -> Tuple[str, ...]:
    """What a request queued behind a running job leaves in the pending set."""
    if isinstance(requested, AllTables):
        return (ALL_TABLES,)
    return requested.names if isinstance(requested, Tables) else ()


def decide(tables: Union[AllTables, Tables], checks: Optional[Mapping[str, TableCheck]], force: bool,
           maintenance: bool) -> Union[Start, Skip]:
    """Start a run or not. `checks`: the metadata check of each covered table, None when the catalog
    cannot be read from the Lambda (the job's own idle path then decides, committing nothing)."""
    if force or checks is None:
        return Start(tables, maintenance)
    why = {t: f"merge ({c.merge})" for t, c in checks.items() if c.merge}
    due = {t: c.due for t, c in checks.items() if c.due}
    for t, items in due.items():
        why[t] = ", ".join(filter(None, [why.get(t), "maintenance due: " + ", ".join(items)]))
    if not why:
        needs_you = sorted(blocked(checks))
        if needs_you:
            return Skip(f"{', '.join(needs_you)} need(s) you first (a run could only fail); every other table is "
                        "up to date")
        return Skip("no source commit the mirror has not absorbed" + (" and no maintenance due" if maintenance else ""))
    return Start(Tables(tuple(sorted(why))), bool(due), why)


def blocked(checks: Optional[Mapping[str, TableCheck]]) -> Dict[str, str]:
    """The tables no run is started for until the user acts: table -> why."""
    return {t: str(c.refused) for t, c in (checks or {}).items() if c.blocked}


def lease_until(now: int, job_timeout_min: int, margin_min: int) -> int:
    """A lease outlives the longest run, so a lost end event frees the namespace by itself."""
    return now + 60 * (job_timeout_min + margin_min)


def lane_lease_until(now: int, timeout_s: int, margin_min: int) -> int:
    """An express-lane run's lease: the merge function's timeout twice (Lambda retries a failed
    asynchronous invocation once, template.yaml) and the margin."""
    return now + 2 * timeout_s + 60 * margin_min


LAMBDA, EMR = "lambda", "emr"  # the engines a run starts on (Outcome.engine, the metrics' engine dimension)


@dataclass(frozen=True)
class Route:
    """Where a started run goes: the express lane (`lane` set: what the merge function runs, the
    rest after it on EMR) or one EMR run (`lane` None)."""

    lane: Union[AllTables, Tables, None]
    emr_after: Tuple[str, ...] = ()
    why: Mapping[str, str] = field(default_factory=dict)  # table ("*": all) -> the reason, logged and returned


def route(start: Start, checks: Optional[Mapping[str, TableCheck]], closed: Optional[str]) -> Route:
    """The lane takes the tables whose merge fits its budget; the rest wait for one EMR run after it
    (one lease: never both at once). `closed`: why the lane takes nothing of this run (None: open).
    Without metadata (`checks` None) the merge function asks the catalog itself and hands back what
    does not fit."""
    if closed is not None:
        return Route(None, why={ALL_TABLES: closed})
    if checks is None:
        return Route(start.tables, why={ALL_TABLES: "the merge function reads the catalog and hands back what "
                                                     "does not fit"})
    names = start.tables.names if isinstance(start.tables, Tables) else tuple(sorted(checks))
    why = {t: str(checks[t].spark_only if t in checks and checks[t].spark_only else "fits the lane's budget")
           for t in names}
    fits = tuple(t for t in names if t in checks and not checks[t].spark_only and not checks[t].due)
    for t in names:
        if t in checks and checks[t].due:
            why[t] = "maintenance due: EMR runs it"
    if not fits:
        return Route(None, why=why)
    return Route(Tables(fits), tuple(t for t in names if t not in fits), why)
