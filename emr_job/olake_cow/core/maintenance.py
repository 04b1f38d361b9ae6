"""Maintenance options and rules (pure): what may be asked for, the safety clamps, and whether any
of it is due. The Spark procedures that carry it out are in spark/maintenance.py.

The safety rule (`source_cutoff`): source snapshots are expired only up to the oldest one
the mirror still needs, as its change source says (truncate mode: the newest merged boundary,
since unmerged change sets live in the snapshots after it; readonly mode: the snapshot the mirror
holds, which the next run reads from and --verify compares with), whatever retention is asked for.
"""
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .errors import ConfigError
from .filesize import mirror_target_bytes, range_file_bytes
from .identity import foreign_change, ground_known_foreign
from .snapshots import Snapshot, Summary, TableState, ancestors

HOUR_MS = 3600 * 1000
MAX_HOURS = 1_000_000  # over a century: longer retentions overflow timestamps (inf, 1e300)
# Iceberg's remove_orphan_files procedure refuses a shorter interval (files of a write in progress
# would look orphaned); asking for less would fail every run that asks.
MIN_ORPHAN_HOURS = 24


def timestamp_literal(epoch_ms: int) -> str:
    """A TIMESTAMP literal with an explicit UTC offset (procedure arguments must be literals)."""
    moment = datetime.fromtimestamp(epoch_ms / 1000.0, tz=timezone.utc)
    return "TIMESTAMP '" + moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}+00:00'"


DEFAULT_FOLD_RATIO = 0.2  # fold a data file's deletion vector once it deletes a fifth of its rows


@dataclass(frozen=True)
class MaintenanceOptions:
    expire_source_hours: Optional[float] = None
    expire_mirror_hours: Optional[float] = None
    rewrite_manifests: bool = False
    compact_files: bool = False
    remove_orphans_hours: Optional[float] = None
    orphans_dry_run: bool = False
    only: bool = False  # maintenance without merging (the clamps still protect unmerged changes)
    fold_deletes: bool = False  # dv mirrors: rewrite data files whose deletion vectors delete fold_ratio of them
    fold_ratio: Optional[float] = None  # None: DEFAULT_FOLD_RATIO

    @property
    def requested(self) -> bool:
        return (self.expire_source_hours is not None or self.expire_mirror_hours is not None
                or self.rewrite_manifests or self.compact_files or self.remove_orphans_hours is not None
                or self.fold_deletes)

    @property
    def ratio(self) -> float:
        return DEFAULT_FOLD_RATIO if self.fold_ratio is None else self.fold_ratio

    def validate(self, names: Optional[Mapping[str, str]] = None) -> "MaintenanceOptions":
        """The rules shared by the command line and the trigger's payloads. ConfigError names the
        option by `names` (option -> name the user wrote; default the job's flags)."""
        n = names or _FLAGS
        for key in ("expire_source_hours", "expire_mirror_hours", "remove_orphans_hours"):
            value = getattr(self, key)
            if value is not None and not 0 <= value <= MAX_HOURS:
                raise ConfigError(f"{n[key]} must be a number of hours from 0 to {MAX_HOURS}, got {value}")
        if self.remove_orphans_hours is not None and self.remove_orphans_hours < MIN_ORPHAN_HOURS:
            raise ConfigError(f"{n['remove_orphans_hours']} must be at least {MIN_ORPHAN_HOURS} hours (Iceberg "
                              f"refuses a shorter interval: a write in progress would look orphaned), got "
                              f"{self.remove_orphans_hours:g}")
        if self.fold_ratio is not None and not 0 < self.fold_ratio <= 1:
            raise ConfigError(f"{n['fold_ratio']} must be a fraction of a file's rows, above 0 and at most 1, "
                              f"got {self.fold_ratio}")
        if self.orphans_dry_run and self.remove_orphans_hours is None:
            raise ConfigError(f"{n['orphans_dry_run']} needs {n['remove_orphans_hours']}")
        if self.only and not self.requested:
            raise ConfigError(f"{n['only']} needs at least one maintenance option")
        return self

    def cli_args(self) -> List[str]:
        """The job's command-line flags for these options."""
        args: List[str] = []
        for key, flag in _FLAGS.items():
            value = getattr(self, key)
            if isinstance(value, bool):
                args += [flag] if value else []
            elif value is not None:
                args += [flag, _number(value)]
        return args


def _number(value: float) -> str:
    """The shortest text that reads back as `value` (`:g` alone keeps 6 digits: 1234567 would not)."""
    text = f"{value:g}"
    return text if float(text) == value else repr(float(value))


# option -> job flag; the trigger's payload uses the option names as keys.
_FLAGS = {
    "expire_source_hours": "--expire-source-older-than",
    "expire_mirror_hours": "--expire-mirror-older-than",
    "rewrite_manifests": "--rewrite-manifests",
    "compact_files": "--compact-files",
    "remove_orphans_hours": "--remove-orphans-older-than",
    "orphans_dry_run": "--orphans-dry-run",
    "only": "--maintenance-only",
    "fold_deletes": "--fold-deletes",
    "fold_ratio": "--fold-ratio",
}


def options_from_payload(value: Any) -> MaintenanceOptions:
    """`{"expire_source_hours": 24, "compact_files": true, ...}` from a trigger payload."""
    if value is None:
        return MaintenanceOptions()
    if not isinstance(value, Mapping):
        raise ConfigError(f"'maintenance' must be an object, got {type(value).__name__}")
    unknown = sorted(set(value) - set(_FLAGS))
    if unknown:
        raise ConfigError(f"'maintenance' has unknown key(s) {', '.join(unknown)}; expected "
                          f"{', '.join(_FLAGS)}")
    fields: Dict[str, Any] = {}
    for key, raw in value.items():
        if key.endswith("_hours") or key == "fold_ratio":
            if raw is not None and (isinstance(raw, bool) or not isinstance(raw, (int, float))):
                what = "a fraction" if key == "fold_ratio" else "a number of hours"
                raise ConfigError(f"'maintenance.{key}' must be {what}, got {raw!r}")
            fields[key] = None if raw is None else float(raw)
        else:
            if not isinstance(raw, bool):
                raise ConfigError(f"'maintenance.{key}' must be true or false, got {raw!r}")
            fields[key] = raw
    return MaintenanceOptions(**fields).validate({key: f"'maintenance.{key}'" for key in _FLAGS})


@dataclass
class MaintenanceResult:
    snapshots_expired: int = 0
    files_removed: int = 0
    bytes_removed: int = 0
    manifests_rewritten: int = 0
    files_compacted: int = 0
    files_folded: int = 0  # dv mirrors: data files rewritten to drop their deletion vectors
    orphan_files: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


def source_cutoff(now_ms: int, retention_h: float, floor: Optional[Snapshot]) -> Tuple[Optional[int], Optional[str]]:
    """(expire source snapshots older than this epoch-ms, or None to skip; a note for the summary).
    `floor`: the oldest source snapshot the mirror still needs (None: the mirror holds nothing yet)."""
    if floor is None:
        return None, "source expiry skipped: the mirror holds no snapshot of this source yet"
    wanted = now_ms - int(retention_h * HOUR_MS)
    if wanted > floor.timestamp_ms:
        age_h = (now_ms - floor.timestamp_ms) / HOUR_MS
        return floor.timestamp_ms, (
            f"source retention {retention_h:g} h clamped to {age_h:.2f} h: snapshots from {floor.snapshot_id} on "
            "are kept, because the mirror still needs them")
    return wanted, None


def mirror_expiry_problem(source: TableState, mirror: TableState) -> Optional[str]:
    """Why the mirror's snapshots are not expired now (None: they may be): it is not as the job left
    it (core/identity.py foreign_change), and its older snapshots hold the job's last commit, which the
    refusal's advice restores (a truncate mirror is the only complete copy) and --keep-mirror-changes
    checks a kept change against."""
    change = foreign_change(mirror, source)
    if change is None:
        return None
    return (f"the mirror's snapshots were not expired: {change}, and its older snapshots keep the job's last "
            "commit to restore; nothing was deleted")


def mirror_cutoff(now_ms: int, retention_h: float) -> int:
    # The checkpoint also lives in a table property, and the current snapshot is always kept.
    return now_ms - int(retention_h * HOUR_MS)


# --- is any requested maintenance due? (the trigger asks before starting a run for it) -------------
SMALL_FILE_FRACTION = 0.5  # compaction is due when the mirror's files average under half its key ranges' size
MANIFEST_REWRITE_EVERY = 50  # manifest rewrite is due after this many mirror commits since the last one
FOLD_DUE_SHARE = 0.25  # folding is due when deletion vectors delete a quarter of --fold-ratio of all rows
# What the mirror's last compaction, fold and manifest rewrite left, recorded by the job in table
# properties. Each may find nothing to do (compaction joins files only within a partition; a fold
# takes only files whose vectors delete fold_ratio of their rows; a manifest rewrite of a single
# manifest commits nothing), and a mirror they cannot improve would stay due and start a run that
# does nothing at every schedule. Each is due again only once more work came since.
COMPACTED_PROPERTY = "olake-cow.compacted-files"  # data files right after the last compaction
FOLDED_PROPERTY = "olake-cow.folded-deletes"  # rows deletion vectors deleted right after the last fold
MANIFESTS_PROPERTY = "olake-cow.manifests-rewritten-at"  # the current snapshot after the last manifest rewrite
# The current snapshot when the mirror's expiry was last skipped because its history references files
# outside its location (core/identity.py foreign_files): not due again until the mirror moves on.
EXPIRY_SKIPPED_PROPERTY = "olake-cow.expiry-skipped-at"
COMPACTED_GROWTH = 0.25  # due again with 25% more files (at least 2)


def compaction_file_bytes(mirror: TableState) -> int:
    """The file size compaction writes the mirror in and judges its files small against: the key
    ranges a full build of its current size writes (core/filesize.py), so that compaction keeps them
    (one 128 MB file would be rewritten whole by every cow merge)."""
    current = mirror.snapshot(mirror.current_id)
    size = current.summary_int(Summary.TOTAL_FILES_SIZE) if current is not None else 0
    return range_file_bytes(size, mirror_target_bytes(mirror.properties))


def _recorded(mirror: TableState, key: str) -> int:
    """A count the job recorded in the mirror's properties; 0 when never recorded (or not a count)."""
    value = str(mirror.properties.get(key) or "")
    return int(value) if value.isdigit() else 0


def left_by_maintenance(mirror: TableState, done: Sequence[str]) -> Dict[str, str]:
    """The properties that record what the maintenance `done` (compact_files, fold_deletes,
    rewrite_manifests) left in this mirror state. Compaction folds as well."""
    current = mirror.snapshot(mirror.current_id)
    if current is None:
        return {}
    left: Dict[str, str] = {}
    if "compact_files" in done:
        left[COMPACTED_PROPERTY] = str(current.summary_int(Summary.TOTAL_DATA_FILES))
    if "compact_files" in done or "fold_deletes" in done:
        left[FOLDED_PROPERTY] = str(current.summary_int(Summary.TOTAL_POS_DELETES))
    if "rewrite_manifests" in done:
        left[MANIFESTS_PROPERTY] = str(current.snapshot_id)
    return left


def files_added_since_compaction(mirror: TableState, files: int) -> bool:
    """Whether a mirror of `files` data files has enough more than its last compaction left for
    another to have something to join (at least 2 files when it never ran)."""
    left = _recorded(mirror, COMPACTED_PROPERTY)
    return files >= left + max(2, int(left * COMPACTED_GROWTH))


def deletes_added_since_fold(mirror: TableState, deleted: int, records: int, ratio: float) -> bool:
    """Whether the deletion vectors deleted a quarter of `ratio` of the rows since the last fold left
    (a count above today's means files were rewritten since: what is there now is the base)."""
    left = min(_recorded(mirror, FOLDED_PROPERTY), deleted)
    return records > 0 and deleted - left >= FOLD_DUE_SHARE * ratio * records


def _older(state: TableState, cutoff_ms: Optional[int]) -> bool:
    """Whether expiry with this cutoff would remove a snapshot: the current one, and those a branch or
    tag points at, are always kept (a user's tag would otherwise keep expiry due at every schedule)."""
    return cutoff_ms is not None and any(
        s.timestamp_ms < cutoff_ms and s.snapshot_id != state.current_id and s.snapshot_id not in state.referenced
        for s in state.snapshots)


def commits_since_manifest_rewrite(mirror: TableState) -> int:
    """Mirror commits since one that replaced manifests, or since the snapshot a rewrite that had
    nothing to do left current (MANIFESTS_PROPERTY)."""
    since, at = 0, str(mirror.properties.get(MANIFESTS_PROPERTY) or "")
    for snap in reversed(ancestors(mirror)[0]):
        if snap.summary_int("manifests-replaced") > 0 or str(snap.snapshot_id) == at:
            break
        since += 1
    return since


def maintenance_due(m: MaintenanceOptions, source: TableState, mirror: TableState, floor: Optional[Snapshot],
                    now_ms: int, dv: bool, writes_source: bool = False) -> List[str]:
    """The requested maintenance that has work on this table pair, judged from metadata alone.
    `floor`: the oldest source snapshot the mirror needs (ChangeSource.expiry_floor); `writes_source`:
    the job maintains OLake's table too (truncate mode: its orphan removal)."""
    current = mirror.snapshot(mirror.current_id) if mirror.exists else None
    due = _deleting_due(m, source, mirror, current, floor, now_ms, writes_source)
    if current is None:
        return due
    files, records = current.summary_int(Summary.TOTAL_DATA_FILES), current.summary_int("total-records")
    deleted = current.summary_int(Summary.TOTAL_POS_DELETES)
    size = current.summary_int(Summary.TOTAL_FILES_SIZE)
    folding = dv and deletes_added_since_fold(mirror, deleted, records, m.ratio)
    # Small against the key ranges a full build writes, not the target size: a fresh mirror is not due.
    small = (files_added_since_compaction(mirror, files)
             and size / files < SMALL_FILE_FRACTION * compaction_file_bytes(mirror))
    if m.compact_files and (small or folding):
        due.append("compact_files")
    if m.fold_deletes and folding:
        due.append("fold_deletes")
    if m.rewrite_manifests and commits_since_manifest_rewrite(mirror) >= MANIFEST_REWRITE_EVERY:
        due.append("rewrite_manifests")
    return due


def _deleting_due(m: MaintenanceOptions, source: TableState, mirror: TableState, current: Optional[Snapshot],
                  floor: Optional[Snapshot], now_ms: int, writes_source: bool) -> List[str]:
    """The expiries and orphan removal due. None is due on a table whose metadata shows ground not its
    own (core/identity.py ground_problem): the job would skip it, at every schedule."""
    due: List[str] = []
    source_own = not ground_known_foreign(source, mirror)
    mirror_own = mirror.exists and not ground_known_foreign(mirror, source)
    if (m.expire_source_hours is not None and source_own
            and _older(source, source_cutoff(now_ms, m.expire_source_hours, floor)[0])):
        due.append("expire_source")
    if m.remove_orphans_hours is not None and ((writes_source and source_own) or mirror_own):
        due.append("remove_orphans")  # no metadata tells; schedule it rarely, on its own
    if (current is not None and m.expire_mirror_hours is not None and mirror_own
            and _older(mirror, mirror_cutoff(now_ms, m.expire_mirror_hours))
            and mirror.properties.get(EXPIRY_SKIPPED_PROPERTY) != str(current.snapshot_id)
            and mirror_expiry_problem(source, mirror) is None):
        due.append("expire_mirror")
    return due
