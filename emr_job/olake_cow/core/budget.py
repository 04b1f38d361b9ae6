"""The Python engine's budget, estimated from metadata alone before anything is read: the bytes of
the files the pending change set added to the source plus the bytes of the mirror's files (each
may be rewritten); for a first build or a rebuild, the bytes of every file of the source snapshot
it reads (a rebuild only drops the mirror's files). Pure, so the trigger can estimate the same way."""
from dataclasses import dataclass
from typing import Optional

from .checkpoint import find_checkpoint
from .snapshots import Summary, TableState, ancestors

MB = 1024 * 1024
# Parquet bytes a merge may read and rewrite: Arrow holds them decoded (3 to 5 times their size)
# and the rewrite holds kept and new rows at once; 256 MB stays well inside a 3 GB Lambda.
DEFAULT_PYTHON_MAX_MB = 256


FIRST_BUILD_ON_EMR = "a first build creates the mirror: the express lane leaves it to EMR"


@dataclass(frozen=True)
class Budget:
    max_bytes: int = DEFAULT_PYTHON_MAX_MB * MB
    # The express lane merges into mirrors that exist (its function's role creates no table).
    first_builds: bool = True


def pending_bytes(source: TableState, mirror: TableState) -> Optional[int]:
    """Bytes of the files the source's snapshots after the mirror's readonly checkpoint added (None:
    no readonly checkpoint, so the whole source would be read)."""
    checkpoint = find_checkpoint(mirror, source)
    if checkpoint is None or checkpoint.sequence_number is None or source.current_id is None:
        return None
    chain, _ = ancestors(source)
    return sum(s.summary_int(Summary.ADDED_FILES_SIZE) for s in chain
               if s.sequence_number is not None and s.sequence_number > checkpoint.sequence_number)


def first_build(mirror: TableState) -> bool:
    """Whether the mirror holds nothing yet (none, or created by a run killed before its write)."""
    return mirror.snapshot(mirror.current_id) is None


def estimate(source: TableState, mirror: TableState, rebuild: bool = False) -> Optional[int]:
    """Bytes a merge (`rebuild`: a rebuild of the mirror's rows) reads at most (None: unknown)."""
    if first_build(mirror) or rebuild:
        snap = source.snapshot(source.current_id)
        return snap.summary_int(Summary.TOTAL_FILES_SIZE) if snap is not None else 0
    pending = pending_bytes(source, mirror)
    current = mirror.snapshot(mirror.current_id)
    if pending is None or current is None:
        return None
    return pending + current.summary_int(Summary.TOTAL_FILES_SIZE)


def over_budget(source: TableState, mirror: TableState, budget: Budget, rebuild: bool = False) -> Optional[str]:
    """Why the merge (`rebuild`: a rebuild of a mirror that holds rows) is over the Python engine's
    budget (None: it fits)."""
    building = first_build(mirror)
    if building and not budget.first_builds:
        return FIRST_BUILD_ON_EMR
    work = estimate(source, mirror, rebuild)
    if work is None:
        return "the work is unknown from metadata (a rebuild): the Spark engine runs it"
    if work > budget.max_bytes:
        what = "the first build" if building else ("the rebuild" if rebuild else "the merge")
        whose = "the source's files" if building or rebuild else "change set and mirror files"
        return (f"{what} may read {work / MB:.0f} MB ({whose}), over the python engine's budget of "
                f"{budget.max_bytes / MB:.0f} MB (--python-max-mb): the Spark engine runs it")
    return None
