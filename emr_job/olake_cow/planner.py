"""The planner: a pure function from (source state, mirror state, source mode) to the next step.

The job runs a loop per table: read both tables' metadata, ask `plan_next`, carry the step out,
repeat. Each step leaves the tables in a state from which `plan_next` again chooses correctly,
which is what makes a rerun after a crash at any point finish the work. A run fixes its target
(the source's current snapshot when it starts) and stops there: later commits are the next run's.

How a change set is found depends on the source mode; each mode's rules live in their own module
behind `ChangeSource` (changesource.py): `boundaries.py` (truncate) and `history.py` (readonly).
"""
from dataclasses import dataclass
from typing import List, Optional, Union

from .checkpoint import Marker
from .modes import SourceMode
from .snapshots import TableState


@dataclass(frozen=True)
class Merge:
    """Bring the mirror to `target` (the marker its checkpoint will hold).

    `read_id`: the source snapshot whose rows are read (truncate: the boundary's parent, which
    holds exactly one change set; readonly: the target). `since`: readonly incremental merges read
    what changed after this checkpoint. `rebuild`: replace the mirror's whole content instead
    (first build, a recreated source, or a readonly source whose history cannot give the change)."""

    target: Marker
    read_id: Optional[int]
    rebuild: bool
    since: Optional[Marker] = None
    reason: str = ""


@dataclass(frozen=True)
class Publish:
    """Audit and publish a staged merge left by an earlier run (`merge` says what it holds)."""

    staged_id: int
    merge: Merge


@dataclass(frozen=True)
class Truncate:
    """Truncate mode: close the open change set by truncating the source (a new boundary)."""


@dataclass(frozen=True)
class Advance:
    """Readonly mode: the source only rewrote files since the checkpoint (content unchanged):
    move the checkpoint to `target` without touching the mirror's data."""

    target: Marker


@dataclass(frozen=True)
class Done:
    reason: str


@dataclass(frozen=True)
class Blocked:
    """The mirror cannot be brought up to date safely; nothing is committed."""

    reason: str


Step = Union[Merge, Publish, Truncate, Advance, Done, Blocked]

UP_TO_DATE = "up to date"
NO_SNAPSHOTS = "the source table has no snapshots yet"
LEFT_FOR_NEXT_RUN = "changes committed after this run started are left for the next run"


def plan_next(source: TableState, mirror: TableState, mode: SourceMode, target_id: Optional[int] = None,
              may_close: bool = True) -> Step:
    """`target_id`: the source snapshot this run stops at (default: the current one). `may_close`:
    truncate mode may still close a change set in this run (at most one per run)."""
    from .changesource import for_mode

    return for_mode(mode).plan(source, mirror, target_id, may_close)


def plan_run(source: TableState, mirror: TableState, mode: SourceMode) -> List[str]:
    """Human-readable list of what a run would do, for --dry-run."""
    from .changesource import for_mode

    return for_mode(mode).describe(source, mirror)


def has_work(step: Step) -> bool:
    """Whether a run would change anything for this table (the trigger's idle check). Moving the
    checkpoint past the source's own file rewrites is not worth a run by itself."""
    return not isinstance(step, (Done, Advance))
