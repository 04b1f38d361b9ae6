"""The steps the planner chooses from (pure records). A run carries out one step, re-reads the
tables' metadata and plans again; each step leaves the tables in a state from which planning again
chooses correctly."""
from dataclasses import dataclass
from typing import Optional, Tuple, Union

from .checkpoint import Marker
from .errors import MirrorMovedError

Properties = Tuple[Tuple[str, str], ...]  # (key, value) pairs: a step stays a frozen, comparable record


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
    properties: Properties = ()  # set on the mirror in the commit that moves its checkpoint


@dataclass(frozen=True)
class Publish:
    """Audit and publish a staged merge left by an earlier run (`merge` says what it holds)."""

    staged_id: int
    merge: Merge


@dataclass(frozen=True)
class Truncate:
    """Truncate mode: close the open change set by truncating the source (a new boundary).
    `first_after`: the source snapshot it is planned on, when no truncate came before it (the
    boundary records it: core/truncate.py); None otherwise."""

    first_after: Optional[int] = None


@dataclass(frozen=True)
class Advance:
    """Readonly mode: the source only rewrote files since the checkpoint (content unchanged):
    move the checkpoint to `target` without touching the mirror's data."""

    target: Marker
    properties: Properties = ()  # set on the mirror with the checkpoint


@dataclass(frozen=True)
class Keep:
    """Truncate mode, asked for once (--keep-mirror-changes): commits someone made on the mirror on
    top of the job's last publish (a GDPR delete, say) are kept as the mirror's content. A commit of
    no file carrying the checkpoint `target` makes the mirror's current state the job's; merging goes
    on from it. `reason`: what was found."""

    target: Marker
    reason: str


@dataclass(frozen=True)
class Done:
    reason: str


@dataclass(frozen=True)
class Blocked:
    """The mirror cannot be brought up to date safely; nothing is committed."""

    reason: str


Step = Union[Merge, Publish, Truncate, Advance, Keep, Done, Blocked]

UP_TO_DATE = "up to date"
NO_SNAPSHOTS = "the source table has no snapshots yet"
LEFT_FOR_NEXT_RUN = "changes committed after this run started are left for the next run"
# A mirror that moves under each commit of a run (other runs, or someone committing to it without
# pause) fails the table after this many steps planned again: the next run starts from where it is.
MOVED_TRIES = 3


def planned_again(moved: int, table: str, exc: Exception) -> int:
    """Count one more step of `table` whose mirror moved (`exc`: what showed it): the new count, or
    MirrorMovedError once MOVED_TRIES steps moved, with nothing of them published (either engine)."""
    moved += 1
    if moved >= MOVED_TRIES:
        raise MirrorMovedError(f"{table}: the mirror moved under each of {moved} steps: nothing of them was "
                               f"published ({exc})") from exc
    return moved
