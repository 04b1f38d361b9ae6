"""The per-table write path: one row per (source mode, mirror format), resolved once per table.

A row carries the mode's change source (core/changesource.py: what to read next), the Spark reader
that reads it, and the mirror format whose writes core/pruning.py's choose_write picks
(writes.py). mypy checks each row: a change source and a reader of another mode do not type-check
(ReadonlySource takes a ReadsHistory, which BoundaryReader is not). A new pair is one new row.
"""
from dataclasses import dataclass
from typing import Any, Dict, Generic, List, Optional, Protocol, Tuple, TypeVar

from ..core.changesource import ChangeSource, ReadonlySource, ReadsSnapshots, TruncateSource
from ..core.formats import FORMATS, FormatRules
from ..core.modes import DeleteMode, MirrorFormat, SourceMode
from ..core.pruning import MergeShape, WriteChoice, choose_write
from ..core.snapshots import TableState
from ..core.steps import Merge
from .boundary_reader import BoundaryReader
from .catalog import IcebergCatalog
from .change_set import ChangeSet, SourceTable
from .history_reader import HistoryReader

T = TypeVar("T", bound=ReadsSnapshots)
T_co = TypeVar("T_co", bound=ReadsSnapshots, covariant=True)


class ReaderClass(Protocol[T_co]):
    """A Spark reader's constructor: what a path opens to read its change sets."""

    def __call__(self, session: Any, catalog: IcebergCatalog, source: SourceTable, delete_mode: DeleteMode,
                 target_file_bytes: int) -> T_co: ...


@dataclass(frozen=True)
class TablePath(Generic[T]):
    changes: ChangeSource[T]
    reader: ReaderClass[T]
    fmt: MirrorFormat

    @property
    def mode(self) -> SourceMode:
        return self.changes.mode

    @property
    def format(self) -> FormatRules:
        """The write half of the row: what the mirror's format means for a merge (core/formats.py)."""
        return FORMATS[self.fmt]

    @property
    def cow(self) -> bool:
        """Copy-on-write: a change rewrites the files it touches (else deletion vectors mark rows)."""
        return self.format.rewrites_files

    def read(self, reader: T, step: Merge, source: TableState) -> ChangeSet:
        """The change set of a Merge step, through this path's reader."""
        cs: ChangeSet = self.changes.read(reader, step, source)
        return cs

    def choose(self, shape: Optional[MergeShape], mirror: TableState, keys: Optional[List[str]],
               rebuild: bool) -> WriteChoice:
        return choose_write(shape, self.format, mirror.partitioned, None if keys is None else len(keys), rebuild,
                            mirror.current_id is not None)


_ROWS = (
    TablePath(ReadonlySource(), HistoryReader, MirrorFormat.COW),
    TablePath(ReadonlySource(), HistoryReader, MirrorFormat.DV),
    TablePath(TruncateSource(), BoundaryReader, MirrorFormat.COW),
    TablePath(TruncateSource(), BoundaryReader, MirrorFormat.DV),
)
PATHS: Dict[Tuple[SourceMode, MirrorFormat], TablePath[Any]] = {(p.mode, p.fmt): p for p in _ROWS}


def path_for(mode: SourceMode, fmt: MirrorFormat) -> TablePath[Any]:
    return PATHS[(SourceMode(mode), MirrorFormat(fmt))]
