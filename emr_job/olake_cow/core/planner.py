"""The planner: a pure function from (source state, mirror state, source mode) to the next step.

The job runs a loop per table: read both tables' metadata, ask `plan_next`, carry the step out,
repeat. Each step (steps.py) leaves the tables in a state from which `plan_next` again chooses
correctly, which is what makes a rerun after a crash at any point finish the work. A run fixes its
target (the source's current snapshot when it starts) and stops there: later commits are the next
run's.

How a change set is found depends on the source mode; each mode's rules live in their own module
behind `ChangeSource` (changesource.py): `readonly.py` and `truncate.py`.
"""
from typing import Optional

from .changesource import for_mode
from .modes import SourceMode
from .snapshots import TableState
from .steps import Advance, Done, Step


def plan_next(source: TableState, mirror: TableState, mode: SourceMode, target_id: Optional[int] = None,
              may_close: bool = True) -> Step:
    """`target_id`: the source snapshot this run stops at (default: the current one). `may_close`:
    truncate mode may still close a change set in this run (at most one per run)."""
    return for_mode(mode).plan(source, mirror, target_id, may_close)


def has_work(step: Step) -> bool:
    """Whether a run would change anything for this table (the trigger's idle check). Moving the
    checkpoint past the source's own file rewrites is not worth a run by itself."""
    return not isinstance(step, (Done, Advance))
