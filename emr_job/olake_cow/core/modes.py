"""How a mirror reads its source (`--source-mode`) and how it holds changes (`--mirror-format`):
the choices, and the rules that keep them.

readonly  (default for new mirrors) the job only reads OLake's table: each run merges what changed
          between the source snapshot the mirror holds and the source's current snapshot.
truncate  each run closes the open change set by truncating OLake's table (the design of OLake's
          published script); OLake's table then only holds the changes since the last run.

A mirror records its mode in the table property `olake-cow.source-mode`. Mirrors built before the
property existed were built in truncate mode (their checkpoint names a boundary). A run never
changes the mode of an existing mirror: asking for the other one is an error that says how to
switch.
"""
from enum import Enum
from typing import Dict, Optional, Tuple

from .checkpoint import MODE_PROPERTY, TRUNCATED_INTO_PROPERTY, Marker, find_checkpoint, truncated_into
from .errors import ConfigError, MirrorFormatError, SourceModeError
from .formats import FORMATS, MirrorFormat, built_format
from .identity import content_change
from .readonly import truncated_by_another
from .snapshots import TableState, ancestors


class SourceMode(str, Enum):
    READONLY = "readonly"
    TRUNCATE = "truncate"


DEFAULT_SOURCE_MODE = SourceMode.READONLY


def checkpoint_mode(mirror: TableState) -> Optional[SourceMode]:
    """The mode the mirror's checkpoint was set in (a readonly one carries the source snapshot's
    sequence number, a truncate one names a boundary); None without a checkpoint."""
    checkpoint = find_checkpoint(mirror)
    return _marker_mode(checkpoint) if checkpoint is not None else None


def _marker_mode(checkpoint: Marker) -> SourceMode:
    return SourceMode.READONLY if checkpoint.sequence_number is not None else SourceMode.TRUNCATE


def built_mode(source: TableState, mirror: TableState, mirror_name: str = "") -> Optional[SourceMode]:
    """The mode the mirror (`mirror_name`: `<namespace>.<table>`) was built with, from the tables'
    metadata; None before its first build."""
    if mirror.exists:
        recorded = mirror.properties.get(MODE_PROPERTY)
        if recorded in (SourceMode.READONLY.value, SourceMode.TRUNCATE.value):
            return SourceMode(recorded)
        held = checkpoint_mode(mirror)
        if held is not None:
            return held
    # A truncate-mode run that closed a change set but had not built the mirror yet: OLake's table
    # names the mirror it truncates into (older runs left only their boundaries).
    into = truncated_into(source)
    if into:
        return SourceMode.TRUNCATE if _same_name(into, mirror_name) else None
    if source.exists and any(s.is_boundary for s in ancestors(source)[0]):
        return SourceMode.TRUNCATE
    return None


def holds_only_copy(mirror: TableState) -> bool:
    """Whether a mirror may hold the only complete copy of its table's data (built in truncate mode:
    OLake's table keeps only the changes since the last run). Its mode property or its checkpoint
    saying so is enough: one edited marker does not make it a copy someone may drop."""
    return SourceMode.TRUNCATE in (mirror.properties.get(MODE_PROPERTY), checkpoint_mode(mirror))


def resolve_mode(source: TableState, mirror: TableState, requested: Optional[SourceMode],
                 mirror_name: str) -> SourceMode:
    """The mode this run uses for the mirror `mirror_name` (`<namespace>.<table>`): the mirror's own,
    else the requested one, else readonly. SourceModeError when the request contradicts the mirror's
    mode, and before the first build of a mirror of a table another job truncates (it would lack the
    rows that job moved out)."""
    built = built_mode(source, mirror, mirror_name)
    contradicted = _contradicted_mode(mirror)
    if contradicted is not None:
        built = _told_mode(source, mirror, mirror_name)
        if built is None:
            raise SourceModeError(_edited_mode(mirror, mirror_name, contradicted))
    if built is None:
        into = truncated_into(source)  # not this mirror's: built_mode would have said truncate
        if into:
            raise SourceModeError(truncated_elsewhere_advice(into, mirror_name))
        return requested or DEFAULT_SOURCE_MODE
    if requested is not None and requested != built:
        raise SourceModeError(switch_advice(mirror_name, built, requested, truncated_by_another(source, mirror)))
    return built


def _contradicted_mode(mirror: TableState) -> Optional[SourceMode]:
    """The checkpoint's mode where the mirror's mode property (set with every merge) says the other
    one: someone edited one of them (None: they agree, or either is missing)."""
    recorded = mirror.properties.get(MODE_PROPERTY) if mirror.exists else None
    held = checkpoint_mode(mirror) if recorded in {m.value for m in SourceMode} else None
    return held if held is not None and recorded != held.value else None


def _told_mode(source: TableState, mirror: TableState, mirror_name: str) -> Optional[SourceMode]:
    """The mode of a mirror whose mode property and checkpoint disagree, where OLake's table tells
    which one someone edited (None: it does not). A truncate checkpoint is believed when OLake's table
    names this mirror as the one its rows are truncated into (no readonly mirror's run truncates it);
    a readonly one when nothing ever truncated OLake's table (no mark, no boundary in its history).
    Anything else could be a forged marker: a wrong guess truncates OLake's table, or rebuilds the
    only complete copy without the rows only it holds."""
    checkpoint, into = find_checkpoint(mirror), truncated_into(source)
    if checkpoint is None or checkpoint.source_uuid != source.uuid:  # not even this source's marker
        return None
    held = _marker_mode(checkpoint)
    if held == SourceMode.TRUNCATE and into and _same_name(into, mirror_name):
        return held
    if held == SourceMode.READONLY and not into and not any(s.is_boundary for s in ancestors(source)[0]):
        return held
    return None


def mode_set_back(source: TableState, mirror: TableState, mirror_name: str) -> Tuple[Dict[str, str], Optional[str]]:
    """(the mode property to set back, a note) when someone set it and OLake's table tells the mode
    (_told_mode); ({}, None) otherwise."""
    if _contradicted_mode(mirror) is None:
        return {}, None
    told = _told_mode(source, mirror, mirror_name)
    if told is None:
        return {}, None
    return {MODE_PROPERTY: told.value}, (
        f"{mirror_name}'s {MODE_PROPERTY} was set to {mirror.properties.get(MODE_PROPERTY)!r} by someone else: its "
        f"checkpoint is a {told.value}-mode one, and OLake's table "
        + ("names it as the mirror its rows are truncated into" if told == SourceMode.TRUNCATE
           else "was never truncated") + f" (read as {told.value}; a run sets it back)")


def _edited_mode(mirror: TableState, mirror_name: str, held: SourceMode) -> str:
    """Why the mirror's mode cannot be told: its checkpoint's (`held`) contradicts its property, and
    OLake's table does not tell which one someone edited (_told_mode). Either guess could cost data:
    a truncate run truncates OLake's table, a readonly rebuild of a truncate mirror drops the rows
    only it holds."""
    recorded = mirror.properties.get(MODE_PROPERTY)
    return (f"{mirror_name}'s {MODE_PROPERTY} is {recorded!r} but its checkpoint is a {held.value}-mode one: someone "
            "edited one of them, and the job cannot tell which mode the mirror was built in. Nothing was written or "
            f"truncated. If it was built in {held.value} mode, set the property back (ALTER TABLE {mirror_name} SET "
            f"TBLPROPERTIES ('{MODE_PROPERTY}'='{held.value}'))")


def _same_name(a: str, b: str) -> bool:
    return a.lower() == b.lower()  # Glue and Hive names are case-insensitive (the job keeps the user's spelling)


def truncated_elsewhere_advice(into: str, mirror_name: str) -> str:
    return (f"another olake-cow job truncates OLake's table in truncate mode, into its mirror {into}: OLake's table "
            f"holds only the changes since that job's last run, so {mirror_name} built from it would lack every row "
            f"that job moved out. Nothing was written or truncated. {into} is the complete copy: read it. If that "
            "job no longer runs and OLake has re-synced the table in full, remove its mark first (ALTER TABLE "
            f"<OLake's table> UNSET TBLPROPERTIES ('{TRUNCATED_INTO_PROPERTY}')), then run again")


def switch_advice(mirror_name: str, built: SourceMode, requested: SourceMode, elsewhere: str = "") -> str:
    """Why a run does not switch the mirror's mode, and how to switch it without losing a row.
    `elsewhere`: where another olake-cow job's truncates of OLake's table show (readonly.py)."""
    head = (f"{mirror_name} was built in {built.value} mode and a run does not change that "
            f"(--source-mode {requested.value} was asked); omit --source-mode to keep {built.value}. ")
    if built == SourceMode.TRUNCATE:
        return head + ("To switch to readonly: OLake's table only holds the changes since the last "
                       "truncate and this mirror is the only complete copy, so keep it as it is; have OLake "
                       "re-sync the table (full refresh), then mirror it with --source-mode readonly into another "
                       "namespace (--cow-namespace).")
    if elsewhere:  # this mirror holds rows OLake's table lost to them, and a truncate build would be refused
        return head + (f"It cannot switch to truncate: another olake-cow job truncates OLake's table ({elsewhere}), "
                       "so this mirror keeps rows OLake's table no longer holds. Keep it as it is: a truncate-mode "
                       "mirror built from OLake's table would lack those rows, and the job refuses to build one. "
                       "That job's mirror is the table's truncate-mode copy.")
    return head + ("To switch to truncate (OLake's table then only keeps the changes since the last run): "
                   "drop the mirror and run with --source-mode truncate; that run rebuilds it.")


def parse_mode(value: Optional[str], what: str = "--source-mode") -> Optional[SourceMode]:
    if value is None or value == "":
        return None
    try:
        return SourceMode(value)
    except ValueError:
        raise SourceModeError(f"{what} must be readonly or truncate, got {value!r}") from None


DEFAULT_MIRROR_FORMAT = MirrorFormat.COW


def resolve_format(mirror: TableState, requested: Optional[MirrorFormat], upgrade: bool = False,
                   mirror_name: str = "the mirror") -> Tuple[MirrorFormat, bool]:
    """(the format this run uses, whether it upgrades an existing cow mirror to dv now). A mirror's
    format never changes silently: cow -> dv needs --upgrade-mirror (in place, irreversible), or only
    --mirror-format dv where someone already raised the format version to dv's; dv -> cow needs a
    rebuild."""
    built = built_format(mirror)
    if built is None:
        return requested or DEFAULT_MIRROR_FORMAT, False
    if requested is None or requested == built:
        return built, False
    if FORMATS[built].upgrades_to == requested:
        if upgrade or mirror.format_version >= FORMATS[requested].format_version:
            return requested, True  # at dv's format version already: nothing irreversible is left to ask for
        raise MirrorFormatError(
            f"{mirror_name} is a cow mirror (format version {mirror.format_version}) and --mirror-format dv was asked. "
            "Add --upgrade-mirror to upgrade it in place to format version 3 with deletion vectors: this cannot be "
            "undone, and engines that read only format version 2 (Athena, StarRocks) can then no longer read it. "
            "Or omit --mirror-format to keep cow.")
    raise MirrorFormatError(
        f"{mirror_name} is a dv mirror (format version {mirror.format_version}) and --mirror-format cow was asked: "
        "Iceberg tables cannot go back to format version 2, so it must be rebuilt: in readonly mode mirror into "
        "another namespace with --mirror-format cow (--cow-namespace), which builds a new mirror from OLake's table; "
        "in truncate mode the mirror is the only complete copy, so keep it as it is. Or omit --mirror-format to keep "
        "dv.")


def upgrade_waits(source: TableState, mirror: TableState) -> Optional[str]:
    """Why an asked upgrade in place (--upgrade-mirror) is not made this run (None: it is): the
    mirror's rows or columns are not as the job left them, and this run's plan rebuilds, refuses or
    keeps it first. The upgrade cannot be undone, so a run that refuses the mirror must not make it."""
    change = content_change(mirror, source)
    if change is None:
        return None
    return (f"the upgrade to dv (--upgrade-mirror) waits for a run that finds the mirror as the job left it "
            f"({change}): the mirror was not upgraded")


class DeleteMode(str, Enum):
    """What the mirror holds of OLake's tombstone rows (`--delete-mode`, stack parameter DeleteMode)."""

    KEEP = "keep"  # tombstone rows (_op_type 'd') as the source shows them
    HARD = "hard"  # their keys removed

    def __str__(self) -> str:  # the value in messages and properties, on every Python (3.12 changed it)
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Engine(str, Enum):
    """Which engine merges (`--engine`): Spark, the Python engine (Arrow and pyiceberg, no JVM), or
    the Python engine where it serves and Spark for the rest. A table's summary names the one that ran."""

    SPARK = "spark"
    PYTHON = "python"
    AUTO = "auto"

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


def parse_delete_mode(value: str, what: str = "--delete-mode") -> DeleteMode:
    try:
        return DeleteMode(value)
    except ValueError:
        raise ConfigError(f"{what} must be keep or hard, got {value!r}") from None


def parse_format(value: Optional[str], what: str = "--mirror-format") -> Optional[MirrorFormat]:
    if value is None or value == "":
        return None
    try:
        return MirrorFormat(value)
    except ValueError:
        raise MirrorFormatError(f"{what} must be cow or dv, got {value!r}") from None
