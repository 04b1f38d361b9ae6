"""The planner: a pure function from (source state, mirror state, source mode) to the next step.

The job runs a loop per table: read both tables' metadata, ask `plan_next`, carry the step out,
repeat. Each step (steps.py) leaves the tables in a state from which `plan_next` again chooses
correctly, which is what makes a rerun after a crash at any point finish the work. A run fixes its
target (the source's current snapshot when it starts) and stops there: later commits are the next
run's.

How a change set is found depends on the source mode; each mode's rules live in their own module
behind `ChangeSource` (changesource.py): `readonly.py` and `truncate.py`.
"""
from dataclasses import dataclass
from typing import List, Optional

from .changesource import for_mode
from .identity import delete_mode_change, foreign_change, incompatible_column
from .modes import DeleteMode, SourceMode
from .snapshots import TableState
from .steps import Advance, Done, Step


@dataclass(frozen=True)
class TableAsk:
    """What a run asks of one table beyond its source mode: the job's command line, or the stack's
    settings in the trigger's idle check (the same inputs, so both decide alike)."""

    delete_mode: DeleteMode = DeleteMode.KEEP
    resume: bool = False  # --resume-from-source (truncate mode)
    keep: bool = False  # --keep-mirror-changes (truncate mode)


def rebuild_reason(source: TableState, mirror: TableState, ask: TableAsk) -> Optional[str]:
    """Why the mirror's rows must be rebuilt whatever its checkpoint says (a readonly mirror is
    rebuilt; a truncate mirror, the only complete copy, is refused): another --delete-mode than it
    was built with, or a source column type it cannot take. Someone else's change to the mirror
    (identity.foreign_change) is found by the mode's planner itself."""
    return _delete_mode_reason(mirror, ask) or incompatible_column(source, mirror)


def repair_reason(source: TableState, mirror: TableState, ask: TableAsk) -> Optional[str]:
    """Why a run rebuilds the mirror because someone changed it or asked another delete mode (the
    summary's `repaired`), or None."""
    return foreign_change(mirror, source) or _delete_mode_reason(mirror, ask)


def _delete_mode_reason(mirror: TableState, ask: TableAsk) -> Optional[str]:
    built = delete_mode_change(mirror, ask.delete_mode)
    if built is None:
        return None
    return (f"the mirror was built with --delete-mode {built} and --delete-mode {ask.delete_mode} was asked: "
            f"its rows are rebuilt with {ask.delete_mode}")


def plan_table(source: TableState, mirror: TableState, mode: SourceMode, ask: TableAsk,
               target_id: Optional[int] = None, may_close: bool = True) -> Step:
    """What a run does next for one table: the one decision the job's loop and the trigger's idle
    check both take, from the same inputs."""
    return for_mode(mode).plan(source, mirror, target_id, may_close, rebuild_reason(source, mirror, ask), ask.resume,
                               ask.keep)


def describe_table(source: TableState, mirror: TableState, mode: SourceMode, ask: TableAsk) -> List[str]:
    """The plan of a dry run, in words."""
    return for_mode(mode).describe(source, mirror, rebuild_reason(source, mirror, ask), ask.resume, ask.keep)


def plan_next(source: TableState, mirror: TableState, mode: SourceMode, target_id: Optional[int] = None,
              may_close: bool = True) -> Step:
    """`target_id`: the source snapshot this run stops at (default: the current one). `may_close`:
    truncate mode may still close a change set in this run (at most one per run)."""
    return plan_table(source, mirror, mode, TableAsk(), target_id, may_close)


def has_work(step: Step) -> bool:
    """Whether a run would change anything for this table (the trigger's idle check). Moving the
    checkpoint past the source's own file rewrites is not worth a run by itself; past another job's
    truncate it is: the mirror records it before the source's expiry can take it from the history."""
    if isinstance(step, Advance):
        return bool(step.properties)
    return not isinstance(step, Done)
