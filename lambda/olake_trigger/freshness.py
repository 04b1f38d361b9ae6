"""Is there anything for a mirror run to do? Answered from catalog metadata without Spark, with the
job's own planner and maintenance rules, so the Lambda and the job cannot disagree about "up to
date" or "due".

Glue: GetTable gives each table's current metadata location; the metadata JSON in S3 gives the
source's snapshots and the mirror's checkpoint. Other catalogs: unknown (None), so the caller
starts the run, whose idle path commits nothing.
"""
from typing import Any, Dict, List, Optional, Sequence

from olake_cow.core import planner
from olake_cow.core.budget import Budget
from olake_cow.core.changesource import for_mode
from olake_cow.core.engines import lane_refusal
from olake_cow.core.errors import SourceModeError
from olake_cow.core.formats import FORMATS, built_format
from olake_cow.core.identifiers import MIRROR_SUFFIX
from olake_cow.core.identity import ownership, source_problem
from olake_cow.core.maintenance import MaintenanceOptions, maintenance_due
from olake_cow.core.modes import DEFAULT_MIRROR_FORMAT, MirrorFormat, SourceMode, resolve_mode
from olake_cow.core.planner import TableAsk
from olake_cow.core.snapshots import TableState, state_from_metadata
from olake_cow.core.steps import Blocked

from .decide import TableCheck
from .glue import GlueTables


def is_truncate_boundary(meta: Dict[str, Any]) -> bool:
    """The metadata's current snapshot is a change-set boundary the job truncated (truncate mode)."""
    state = state_from_metadata(meta)
    snap = state.snapshot(state.current_id)
    return bool(snap and snap.is_boundary)


class Freshness:
    """Per table of a namespace: what a run would do, from the catalog's metadata (glue.py)."""

    def __init__(self, tables: GlueTables, cow_suffix: str, source_mode: Optional[SourceMode] = None,
                 ask: TableAsk = TableAsk(), mirror_format: Optional[MirrorFormat] = None,
                 budget: Budget = Budget(first_builds=False)) -> None:
        self.tables, self.suffix, self.source_mode, self.ask = tables, cow_suffix, source_mode, ask
        self.mirror_format, self.budget = mirror_format, budget

    def check(self, namespace: str, tables: Optional[Sequence[str]], maintenance: MaintenanceOptions,
              now_ms: int) -> Dict[str, TableCheck]:
        """Per table: why it needs a merge, and which requested maintenance is due."""
        out: Dict[str, TableCheck] = {}
        for name in (list(tables) if tables else self.tables.iceberg_tables(namespace)):
            cow_namespace, mirror_table = namespace + self.suffix, name + MIRROR_SUFFIX
            source = self.tables.state(namespace, name)
            mirror = self.tables.state(cow_namespace, mirror_table)
            refused = _refusal(source, mirror, f"{namespace}.{name}", f"{cow_namespace}.{mirror_table}")
            if refused:
                out[name] = refused
                continue
            try:
                mode = resolve_mode(source, mirror, self.source_mode, f"{cow_namespace}.{mirror_table}")
            except SourceModeError as exc:  # every run would refuse it: another mode asked, another job's source
                out[name] = TableCheck(refused=str(exc), blocked=True)
                continue
            step = planner.plan_table(source, mirror, mode, self.ask)
            if isinstance(step, Blocked):  # the run would fail it (exit 1) until the user acts
                out[name] = TableCheck(refused=step.reason, blocked=True)
                continue
            due: List[str] = []
            if maintenance.requested and source.exists:
                changes = for_mode(mode)
                due = maintenance_due(maintenance, source, mirror, changes.expiry_floor(source, mirror), now_ms,
                                      FORMATS[built_format(mirror) or DEFAULT_MIRROR_FORMAT].folds_deletes,
                                      changes.writes_source)
            work = planner.has_work(step)
            lane = lane_refusal(source, mirror, mode, self.mirror_format, self.ask, self.budget) if work else None
            out[name] = TableCheck(type(step).__name__.lower() if work else None, tuple(due), spark_only=lane)
        return out


def _refusal(source: TableState, mirror: TableState, source_name: str, mirror_name: str) -> Optional[TableCheck]:
    """Why the job would skip the table (not OLake's) or refuse it (identity.py), so no run is
    started for it."""
    if not source.exists:
        return None
    problem = source_problem(source, f"table {source_name}")
    if problem is not None:
        return TableCheck(refused=problem.reason, blocked=not problem.skip)
    owner = ownership(mirror, source_name, mirror_name, source.uuid)
    return None if owner.writable else TableCheck(refused=owner.reason, blocked=True)
