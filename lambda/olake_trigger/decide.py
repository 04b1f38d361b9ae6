"""The trigger's decisions, pure: which tables a mirror run covers, whether to start it, the lease.
trigger.py carries them out with the DynamoDB, catalog and EMR adapters."""
from dataclasses import dataclass, field
from enum import Enum
from typing import Mapping, Optional, Tuple, Union

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
        return Skip("no source commit the mirror has not absorbed" + (" and no maintenance due" if maintenance else ""))
    return Start(Tables(tuple(sorted(why))), bool(due), why)


def lease_until(now: int, job_timeout_min: int, margin_min: int) -> int:
    """A lease outlives the longest run, so a lost end event frees the namespace by itself."""
    return now + 60 * (job_timeout_min + margin_min)
