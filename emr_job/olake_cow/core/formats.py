"""What a mirror format means, one object per format: the write half of a (source mode, mirror
format) row (spark/paths.py holds the rows; the reader half is core/changesource.py). Each object
owns the table a mirror of its format is (format version, write modes, its marker), the delete
files it may hold, how a merge writes into it (rewrite the touched files, or mark rows in deletion
vectors), what the audit counts as replaced, whether deletes fold in maintenance, and whether the
python engine writes it. Nothing outside this module compares formats: ask FORMATS[fmt]."""
from dataclasses import dataclass
from enum import Enum
from typing import Dict, Mapping, Optional, Tuple

from .checkpoint import FORMAT_PROPERTY
from .snapshots import Snapshot, Summary, TableState


class MirrorFormat(str, Enum):
    """How the mirror holds updates and deletes (`--mirror-format`)."""

    COW = "cow"  # copy-on-write, format version 2: no delete files; every engine reads it
    DV = "dv"  # merge-on-read, format version 3: deletion vectors; a merge's cost follows its changes


WRITE_MODE_KEYS = ("write.delete.mode", "write.update.mode", "write.merge.mode")


@dataclass(frozen=True)
class FormatRules:
    fmt: MirrorFormat
    format_version: int
    # copy-on-write: a merge rewrites the data files holding changed keys; else it writes deletion vectors
    rewrites_files: bool
    forbidden_delete_keys: Tuple[str, ...]  # snapshot summary totals that must stay 0 on a mirror of this format
    python_engine: bool  # a maintained Python library writes it: the python engine and the express lane may
    upgrades_to: Optional[MirrorFormat] = None  # in place, on request (--upgrade-mirror); never the reverse

    @property
    def folds_deletes(self) -> bool:
        """Whether maintenance's --fold-deletes has anything to fold (deletion vectors)."""
        return not self.rewrites_files

    def write_modes(self) -> Dict[str, str]:
        mode = "copy-on-write" if self.rewrites_files else "merge-on-read"
        return {key: mode for key in WRITE_MODE_KEYS}

    def table_properties(self) -> Dict[str, str]:
        """What makes a table a mirror of this format (a new mirror, or an upgrade to it)."""
        return {"format-version": str(self.format_version), FORMAT_PROPERTY: self.fmt.value, **self.write_modes()}

    def replaced_rows(self, staged: Snapshot, upserts: int) -> int:
        """Mirror rows a staged merge replaced or removed (matched rows), from its commit."""
        if not self.rewrites_files:
            # A data file's new deletion vector carries its old positions too, and replaces the old one.
            return staged.summary_int(Summary.ADDED_POS_DELETES) - staged.summary_int(Summary.REMOVED_POS_DELETES)
        return staged.summary_int(Summary.DELETED_RECORDS) - staged.summary_int(Summary.ADDED_RECORDS) + upserts

    def added_rows_problem(self, added: int, upserts: int) -> Optional[str]:
        """A staged merge's added records against the change set's upserts: deletion vectors add exactly
        the upserts; a rewrite adds them plus the rows it carried over from rewritten files."""
        if not self.rewrites_files and added != upserts:
            return f"added-records={added}, expected the change set's {upserts} upserts"
        if self.rewrites_files and added < upserts:
            return f"added-records={added}, fewer than the change set's {upserts} upserts"
        return None

    def forbidden_deletes(self, snap: Snapshot) -> Tuple[str, ...]:
        """The delete files this mirror must not hold, as 'key=value' findings."""
        return tuple(f"{key}={snap.summary.get(key)}" for key in self.forbidden_delete_keys if snap.summary_int(key))


COW = FormatRules(MirrorFormat.COW, 2, rewrites_files=True, python_engine=True, upgrades_to=MirrorFormat.DV,
                  forbidden_delete_keys=(Summary.TOTAL_DELETE_FILES, Summary.TOTAL_EQ_DELETES,
                                         Summary.TOTAL_POS_DELETES))
DV = FormatRules(MirrorFormat.DV, 3, rewrites_files=False, python_engine=False,
                 forbidden_delete_keys=(Summary.TOTAL_EQ_DELETES, Summary.ADDED_EQ_DELETE_FILES,
                                        Summary.ADDED_POS_DELETE_FILES))
FORMATS: Mapping[MirrorFormat, FormatRules] = {r.fmt: r for r in (COW, DV)}


def built_format(mirror: TableState) -> Optional[MirrorFormat]:
    """The mirror's format (None before it exists), from what its table is and not from one property
    (someone may edit it): format version 2 is cow whatever olake-cow.mirror-format says (a dv mirror
    is made at 3, and no table goes back); at 3 it is dv when the property says so, or when most of
    the three write modes are merge-on-read (a dv mirror whose property someone changed or removed,
    and perhaps one write mode: the job sets them again before a merge), else cow
    (a cow mirror whose format version someone raised, which identity.py names). Mirrors from before
    the property are cow."""
    if not mirror.exists:
        return None
    if mirror.format_version < DV.format_version:
        return MirrorFormat.COW
    merge_on_read = sum(mirror.properties.get(key) == "merge-on-read" for key in WRITE_MODE_KEYS)
    if mirror.properties.get(FORMAT_PROPERTY) == MirrorFormat.DV.value or merge_on_read * 2 > len(WRITE_MODE_KEYS):
        return MirrorFormat.DV
    return MirrorFormat.COW
