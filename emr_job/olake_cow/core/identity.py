"""Whose table is at the mirror's name, and whether its current content is what the job left (pure).

A mirror carries who made it and what it mirrors, as table properties:
  olake-cow.made-by       "olake-cow": this project created it (mirrors of earlier versions carry
                          only the other olake-cow.* properties; they are recognised and marked)
  olake-cow.source-table  `<namespace>.<table>` of its source; the source's UUID is in every
                          checkpoint marker (checkpoint.py), so a recreated source is rebuilt
  olake-cow.data-checkpoint  the checkpoint marker of the data the mirror's current snapshot holds,
                          set in the same commit as every publish. The checkpoint property may
                          move past it without a data commit (nothing to merge); the data itself
                          may not: a current snapshot whose newest marker is another one was put
                          there by someone else (a rollback, a cherry-pick)
  olake-cow.data-snapshot the id of that snapshot, set in the same commit: a commit someone staged under
                          the job's WAP id and published carries the right marker, not this id
  olake-cow.delete-mode   keep | hard: what the mirror holds of OLake's tombstones

The job writes only to a table that is its own mirror of this source. Anything else at the name is
refused before anything is written. A mirror whose current snapshot is not what the job left is
repaired: merged again from the newest checkpoint its history proves, or rebuilt.
"""
import logging
from dataclasses import dataclass, replace
from enum import Enum
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from .checkpoint import (
    CHECKPOINT_PROPERTY,
    DATA_CHECKPOINT_PROPERTY,
    DATA_ROWS_PROPERTY,
    DATA_SNAPSHOT_PROPERTY,
    SOURCE_PROPERTY,
    Marker,
    find_checkpoint,
    is_snapshot,
    marker_of,
    parse_marker,
    recorded_snapshot,
    rejected,
)
from .formats import FORMATS, MirrorFormat, built_format
from .identifiers import MIRROR_SUFFIX
from .snapshots import MISSING, Operation, Snapshot, Summary, TableState, ancestors, exact_rows
from .uris import S3_SCHEMES

log = logging.getLogger("olake_cow")

MADE_BY_PROPERTY = "olake-cow.made-by"
MADE_BY = "olake-cow"
DELETE_MODE_PROPERTY = "olake-cow.delete-mode"


class Owner(str, Enum):
    NONE = "none"  # no table at the mirror's name
    OURS = "ours"  # the project's mirror of this source
    LEGACY = "legacy"  # the project's mirror of this source, made before the made-by marker
    FOREIGN = "foreign"  # a table the project did not make
    OTHER_SOURCE = "other_source"  # the project's mirror of another source table


@dataclass(frozen=True)
class Ownership:
    owner: Owner
    reason: str = ""
    note: str = ""  # a writable mirror: what the job found set on it by someone else (a run's note)

    @property
    def writable(self) -> bool:
        return self.owner in (Owner.NONE, Owner.OURS, Owner.LEGACY)


def ownership(mirror: TableState, source: str, mirror_name: str, source_uuid: Optional[str] = None) -> Ownership:
    """Whether the job may write the table at the mirror's name (`source`: `<namespace>.<table>`,
    whose table UUID is `source_uuid`). One property proves nothing: the job's mirror carries the
    made-by marker, names this source, and holds the job's commits (a checkpoint marker in its
    history or its checkpoint property), or holds no data yet (a first build that stopped after
    creating it). A source name someone set or removed does not make the job's mirror another's: its
    commits' markers carry the UUID of the table they came from, which no other table has."""
    if not mirror.exists:
        return Ownership(Owner.NONE)
    props = mirror.properties
    made = props.get(MADE_BY_PROPERTY) == MADE_BY
    recorded = props.get(SOURCE_PROPERTY)
    commits = _holds_job_commits(mirror)
    note = ""
    held = find_checkpoint(mirror) if recorded != source and commits and source_uuid is not None else None
    if held is not None and held.source_uuid == source_uuid:
        note = (f"the mirror's {SOURCE_PROPERTY} was {'set to ' + recorded if recorded else 'removed'} by someone "
                f"else: its commits are of {source} (that table's UUID), so it is set again")
        recorded = source
    if recorded and recorded != source and (made or commits):
        return Ownership(Owner.OTHER_SOURCE, (
            f"{mirror_name} is the mirror of {recorded}, not of {source}: nothing was written to it. "
            "Two source namespaces cannot share one mirror namespace; give this one its own --cow-namespace"))
    if made and recorded == source and (commits or mirror.current_id is None):
        return Ownership(Owner.OURS, note=note)
    if not made and commits:
        return Ownership(Owner.LEGACY, note=note)
    return Ownership(Owner.FOREIGN, _foreign_reason(mirror_name, made, recorded, commits))


def dropped_sources(source_ns: str, cow_ns: str, present: Iterable[str], mirrors: Iterable[str],
                    state: Callable[[str], TableState]) -> List[str]:
    """For a run of a whole namespace: a line for each of the job's mirrors (`mirrors`: the table
    names of the mirror namespace, `state`: one's state) whose source is not among `present`. They
    are left as they are (in truncate mode one may be the only copy of its data), named and logged."""
    kept, found = set(present), []
    for name in mirrors:
        source = name[:-len(MIRROR_SUFFIX)]
        if not name.endswith(MIRROR_SUFFIX) or source in kept:
            continue
        if ownership(state(name), f"{source_ns}.{source}", name).owner in (Owner.OURS, Owner.LEGACY):
            found.append(f"{source_ns}.{source} no longer exists; its mirror {cow_ns}.{name} was left as it is (it "
                         "may hold the only copy of that data): drop it once it is not needed")
    for line in found:
        log.warning("%s", line)
    return found


def _holds_job_commits(mirror: TableState) -> bool:
    """A snapshot the job published (its checkpoint marker), or the checkpoint property that
    outlives their expiry, naming one source table throughout."""
    markers = [m for m in (marker_of(s) for s in mirror.snapshots) if m is not None]
    prop = parse_marker(mirror.properties.get(CHECKPOINT_PROPERTY))
    if prop is not None and markers and prop.source_uuid not in {m.source_uuid for m in markers}:
        return False  # a checkpoint of a source none of its commits came from: not written by the job
    return bool(markers) or prop is not None


def _foreign_reason(mirror_name: str, made: bool, recorded: Optional[str], commits: bool) -> str:
    if not made:
        missing = f"it has no {MADE_BY_PROPERTY} property"
    elif not recorded:
        missing = f"it carries {MADE_BY_PROPERTY} but names no source ({SOURCE_PROPERTY})"
    else:
        missing = "it carries olake-cow's properties but holds data and none of the job's commits"
    return (f"{mirror_name} exists and was not made by olake-cow ({missing}): nothing was written to it. "
            "Mirror into another namespace (--cow-namespace), or rename that table")


def foreign_change(mirror: TableState, source: TableState = MISSING) -> Optional[str]:
    """Why the mirror is not as the job left it (None when it is): its current snapshot (a
    rollback, a user's commit), its columns (a user's drop, rename or added column) or its format
    version. Only the job's publishes (a checkpoint marker in the summary) and rewrites that keep
    content (`replace`: compaction, manifest rewrites, another tool's compaction) may follow the
    newest marker."""
    if not mirror.exists or mirror.current_id is None:
        return None
    return content_change(mirror, source) or _format_change(mirror)


def content_change(mirror: TableState, source: TableState = MISSING) -> Optional[str]:
    """foreign_change less a format version someone set (which an upgrade in place settles): its
    current snapshot or its columns are not as the job left them."""
    if not mirror.exists or mirror.current_id is None:
        return None
    return _history_change(mirror) or _column_change(source, mirror)


def _history_change(mirror: TableState) -> Optional[str]:
    mirror = _as_published(mirror)[0]
    behind = _behind_publish(mirror)
    if behind:
        return behind
    chain, complete = ancestors(mirror)
    last = _newest_marker(chain)
    # A mirror that records its data checkpoint is of a version that marks every data commit: a
    # commit without one is someone's even when the job's own were expired (a mirror of an earlier
    # version may hold unmarked commits of its own, so its history must show the newest marker).
    marks_all = parse_marker(mirror.properties.get(DATA_CHECKPOINT_PROPERTY)) is not None
    found = _unmarked_commit(chain, last, complete, marks_all)
    if found:
        return found
    rewrite = chain[-1] if chain and chain[-1].operation == Operation.REPLACE.value else None
    if last is None:
        if complete and marks_all:
            return (f"the mirror's current snapshot {mirror.current_id} holds none of the job's commits "
                    "(it was rolled back or set by someone else)")
        return _rows_change(mirror, rewrite)
    return _marked_change(mirror, chain[last]) or _rows_change(mirror, rewrite)


def _behind_publish(mirror: TableState) -> Optional[str]:
    """A current snapshot older than the job's last publish, which is still in the metadata: someone
    rolled the mirror back past it (sequence numbers grow along a history, and a cherry-picked stage
    gets a newer one). Told even where no marker shows it: a rollback onto the rewrite a compaction
    made before the publish, after an expiry took every snapshot of the job's older than that."""
    published = recorded_snapshot(mirror, DATA_SNAPSHOT_PROPERTY)
    named, current = mirror.snapshot(published), mirror.snapshot(mirror.current_id)
    if named is None or current is None or named.sequence_number is None or current.sequence_number is None \
            or current.sequence_number >= named.sequence_number:
        return None
    return (f"the mirror's current snapshot {current.snapshot_id} is older than snapshot {published}, the job's last "
            "publish: it was rolled back past it")


def changes_on_publish(mirror: TableState, source: TableState = MISSING) -> Optional[str]:
    """Why the mirror is not as the job left it when it is only so by commits someone made on top of
    the job's last publish, which is still in its history (what --keep-mirror-changes may keep); None
    when it is as the job left it or changed otherwise: rolled back, a forged or rejected snapshot
    made current, a column or format version changed, or its history expired past the publish (what
    such commits were made on cannot be seen)."""
    if not mirror.exists or mirror.current_id is None or _column_change(source, mirror) or _format_change(mirror):
        return None
    mirror = _as_published(mirror)[0]
    chain, _ = ancestors(mirror)
    last = _newest_marker(chain)
    if last is None or last == len(chain) - 1 or _marked_change(mirror, chain[last]):
        return None
    return _history_change(mirror)


def _newest_marker(chain: List[Snapshot]) -> Optional[int]:
    """The index in `chain` of the newest snapshot carrying the job's checkpoint marker."""
    return max((i for i, s in enumerate(chain) if marker_of(s) is not None), default=None)


def _unmarked_commit(chain: List[Snapshot], last: Optional[int], complete: bool, marks_all: bool) -> Optional[str]:
    """A commit other than a rewrite after the newest snapshot carrying the job's marker (`last`, an
    index in `chain`), where the history shows it is not one of the job's."""
    after: List[Snapshot] = chain if last is None else chain[last + 1:]
    foreign = [s for s in after if s.operation != Operation.REPLACE.value]
    if not foreign or not (last is not None or complete or marks_all):
        return None
    s = foreign[-1]
    expired = "" if last is not None or complete else " (the job's own snapshots were expired since)"
    return (f"mirror snapshot {s.snapshot_id} ({s.operation or 'no operation'}) was committed by someone else "
            f"after the job's last commit{expired}")


def edited_records(mirror: TableState) -> Tuple[Dict[str, str], Optional[str]]:
    """(the records of the job's last publish someone set, with the values the job set them to; a note
    naming the one set), or ({}, None). The job reads them as it set them (_as_published), and a run
    sets them back before anything else: the snapshot they are read by may be expired next, by the
    job's maintenance or the user's, and then the record someone set could no longer be told from the
    job's."""
    if not mirror.exists:
        return {}, None
    fixed, note = _as_published(mirror)
    return {k: v for k, v in fixed.properties.items() if mirror.properties.get(k) != v}, note


def _as_published(mirror: TableState) -> Tuple[TableState, Optional[str]]:
    """`mirror` with the records of its last publish as the job set them, and a note naming the one
    someone set. Every publish sets olake-cow.data-snapshot, olake-cow.data-checkpoint and
    olake-cow.data-rows from the snapshot it stages, in its own commit, so while that snapshot is in
    the metadata they must agree with it: its marker, its rows. When they do not, the newest marked
    snapshot of the current history tells which record was set: the one that disagrees with it, if
    it also carries the checkpoint property's marker (set with every publish) and the other record
    agrees with it. Anything else (both disagree: a rollback with a record set to match it, someone's
    commit) is left for the rules that follow to name: a rollback plus one record set to match it
    must not pass for the job's state, whose next merge would lack the rolled-back publish's rows."""
    published = recorded_snapshot(mirror, DATA_SNAPSHOT_PROPERTY)
    named = mirror.snapshot(published)
    data_value = mirror.properties.get(DATA_CHECKPOINT_PROPERTY)
    data = parse_marker(data_value)
    if named is None or data is None:
        return mirror, None
    marker = marker_of(named)
    if marker == data:
        rows, left = exact_rows(named.summary, mirror.format_version), recorded_snapshot(mirror, DATA_ROWS_PROPERTY)
        if rows is None or left is None or rows == left:
            return mirror, None
        return _with(mirror, DATA_ROWS_PROPERTY, str(rows)), (
            f"the mirror's {DATA_ROWS_PROPERTY} was set to {left} by someone else: snapshot {published}, which the job "
            f"published and recorded it for, shows {rows} rows (read as such; a run sets it back)")
    chain, _ = ancestors(mirror)
    last = _newest_marker(chain)
    held = chain[last] if last is not None else None
    if held is None or marker_of(held) != parse_marker(mirror.properties.get(CHECKPOINT_PROPERTY)):
        return mirror, None
    if marker is not None and is_snapshot(held, named.snapshot_id):
        return _with(mirror, DATA_CHECKPOINT_PROPERTY, marker.wap_id), (
            f"the mirror's {DATA_CHECKPOINT_PROPERTY} was set to {data_value} by someone else: snapshot {published}, "
            f"which the job published and the mirror holds, carries {marker.wap_id} (read as such; a run sets it "
            "back)")
    if marker_of(held) == data:
        picked = held.summary.get(Summary.SOURCE_SNAPSHOT_ID) if Summary.PUBLISHED_WAP_ID in held.summary else None
        own = picked or str(held.snapshot_id)  # a cherry-pick records the snapshot it picked
        return _with(mirror, DATA_SNAPSHOT_PROPERTY, own), (
            f"the mirror's {DATA_SNAPSHOT_PROPERTY} was set to {published} by someone else: snapshot {own}, which the "
            f"mirror holds, carries the data checkpoint {data_value} (read as such; a run sets it back)")
    return mirror, None


def _with(mirror: TableState, key: str, value: str) -> TableState:
    return replace(mirror, properties={**mirror.properties, key: value})


def _marked_change(mirror: TableState, held: Snapshot) -> Optional[str]:
    """Why `held`, the newest snapshot carrying the job's marker, is not the job's last publish."""
    if held.snapshot_id in rejected(mirror):
        return f"mirror snapshot {held.snapshot_id} failed its audit but was made current by someone else"
    published = recorded_snapshot(mirror, DATA_SNAPSHOT_PROPERTY)
    if published is not None and not is_snapshot(held, published):
        changed = _data_checkpoint_change(mirror, marker_of(held))
        return changed or (f"mirror snapshot {held.snapshot_id} carries the job's checkpoint marker but is not "
                           f"snapshot {published} that the job published: it was committed by someone else")
    return _data_checkpoint_change(mirror, marker_of(held))


def _rows_change(mirror: TableState, current: Optional[Snapshot]) -> Optional[str]:
    """A rewrite (the current snapshot, None when it is not one) whose rows differ from those the
    job's publish left: a rewrite keeps them, so someone's commit came before it (its own snapshot
    perhaps expired since). Counted only where both snapshots' summaries tell their rows exactly."""
    left, published = recorded_snapshot(mirror, DATA_ROWS_PROPERTY), recorded_snapshot(mirror, DATA_SNAPSHOT_PROPERTY)
    now = exact_rows(current.summary, mirror.format_version) if current is not None else None
    if current is None or left is None or published is None or now is None or now == left \
            or is_snapshot(current, published):
        return None
    return (f"mirror snapshot {current.snapshot_id} ({current.operation or 'no operation'}) shows {now} rows, not the "
            f"{left} of snapshot {published} that the job published: a rewrite keeps rows, so what it rewrote was "
            "committed by someone else")


def _data_checkpoint_change(mirror: TableState, held: Optional[Marker]) -> Optional[str]:
    data = parse_marker(mirror.properties.get(DATA_CHECKPOINT_PROPERTY))
    if data is not None and held is not None and held != data:
        return (f"the mirror's current snapshot {mirror.current_id} holds source snapshot {held.snapshot_id}, "
                f"not {data.snapshot_id} that the job left it at (it was rolled back or set by someone else)")
    return None


def _column_change(source: TableState, mirror: TableState) -> Optional[str]:
    """A column the job gave the mirror that someone dropped or renamed, or one someone added. The
    job never drops a mirror column and renames one only after the source, so a name the source
    still has that the mirror had and lacks now, or a mirror name no source schema ever had, is a
    user's edit."""
    if not source.exists or not mirror.fields:
        return None
    held = find_checkpoint(mirror)
    if held is not None and held.source_uuid != source.uuid:
        return None  # a recreated source: its columns are not the ones the mirror followed (rebuilt anyway)
    source_now = set(source.fields.values())
    mirror_now = set(mirror.fields.values())
    for field_id, name in sorted(mirror.past_fields):
        if name in mirror_now or name not in source_now:
            continue
        renamed = mirror.fields.get(field_id)
        if renamed is None:
            return f"column {name} of the mirror was dropped by someone else"
        if renamed not in source_now:
            return f"column {name} of the mirror was renamed to {renamed} by someone else"
    ever = source_now | {n for _, n in source.past_fields}
    added = sorted(mirror_now - ever)
    if added:
        return f"the mirror's column {added[0]} is in no schema of its source: it was added by someone else"
    return None


def _format_change(mirror: TableState) -> Optional[str]:
    built = FORMATS[built_format(mirror) or MirrorFormat.COW]
    if mirror.format_version != built.format_version:
        upgrade = FORMATS[built.upgrades_to] if built.upgrades_to else None  # cow: at dv's version already
        way = (" (a truncate mirror keeps every row with --mirror-format dv --upgrade-mirror, which makes it a dv "
               "mirror of format version 3 in place)" if upgrade and mirror.format_version == upgrade.format_version
               else "")
        return (f"the mirror is a {built.fmt.value} mirror (format version {built.format_version}) and someone set its "
                f"format-version to {mirror.format_version}{way}")
    return None


def layout_change(source: TableState, mirror: TableState) -> Optional[str]:
    """What makes the mirror's table itself unfit to be rebuilt in place: a column someone dropped,
    renamed or added, a format version someone changed, or a source column type it cannot take. A
    readonly mirror is then created anew (OLake's table holds every row)."""
    return _column_change(source, mirror) or _format_change(mirror) or incompatible_column(source, mirror)


def incompatible_column(source: TableState, mirror: TableState) -> Optional[str]:
    """A column whose type in the source the mirror's cannot become (Iceberg promotes int to long,
    float to double and widens decimals, nothing else): a column dropped and re-added with another
    type, or a source recreated with one."""
    if not (source.exists and mirror.exists):
        return None
    for name, wanted in sorted(source.types.items()):
        held = mirror.types.get(name)
        if held is not None and held != wanted and not _promotes(held, wanted):
            return (f"the source's column {name} is now {wanted} and the mirror's is {held}, which Iceberg "
                    "cannot change into it")
    return None


_PROMOTIONS = {("int", "long"), ("float", "double")}


def _promotes(held: str, wanted: str) -> bool:
    if (held, wanted) in _PROMOTIONS:
        return True
    if held.startswith("decimal(") and wanted.startswith("decimal("):
        (p1, s1), (p2, s2) = (tuple(int(x) for x in t[8:-1].split(",")) for t in (held, wanted))
        return s1 == s2 and p2 >= p1
    return False


def restore_advice(mirror: TableState) -> str:
    """How to bring a mirror that is the only complete copy (truncate mode, or a readonly mirror of a
    source another job truncates) back to what the job left, keeping its rows."""
    mirror = _as_published(mirror)[0]
    chain, _ = ancestors(mirror)
    data = parse_marker(mirror.properties.get(DATA_CHECKPOINT_PROPERTY))
    published = recorded_snapshot(mirror, DATA_SNAPSHOT_PROPERTY)
    left = [s for s in mirror.snapshots if data is not None and marker_of(s) == data
            and (published is None or is_snapshot(s, published))]
    if not left:  # a record set to match a rollback: the snapshot the other record and the checkpoint name
        checkpoint = parse_marker(mirror.properties.get(CHECKPOINT_PROPERTY))
        left = [s for s in mirror.snapshots if checkpoint is not None and marker_of(s) == checkpoint
                and (checkpoint == data or (published is not None and is_snapshot(s, published)))]
    held = left[-1] if left else _rewrite_of_publish(mirror, chain)
    what = "" if left or held is None else " (a rewrite of the job's last commit, which was expired since)"
    where = (f"mirror snapshot {held.snapshot_id} holds every row as the job left it{what}: "
             f"{_back_to(chain, held)}, " if held is not None else "")
    return (f"To resume, {where}undo the change (rename a column back, restore a property; a column dropped "
            "from the mirror keeps its values in the job's snapshots: read them with VERSION AS OF) and run again. "
            "Do not drop the mirror: it is the only complete copy")


def _rewrite_of_publish(mirror: TableState, chain: List[Snapshot]) -> Optional[Snapshot]:
    """Where the job's last publish lives on once its snapshots were expired (a compaction, then an
    expiry: the job's maintenance does both): the rewrite right before the first commit of someone
    else's in the mirror's history, when it shows exactly the rows the publish left (a rewrite keeps
    rows; `chain`: its current ancestry). None when there is no such rewrite or its rows differ or are
    not known."""
    first = next((i for i, s in enumerate(chain) if s.operation != Operation.REPLACE.value), None)
    rewrite = chain[first - 1] if first else None
    left = recorded_snapshot(mirror, DATA_ROWS_PROPERTY)
    if rewrite is None or left is None or exact_rows(rewrite.summary, mirror.format_version) != left:
        return None
    return rewrite


def _back_to(chain: List[Snapshot], snap: Snapshot) -> str:
    """The call that makes `snap` the mirror's current snapshot again (`chain`: the mirror's current
    ancestry). Iceberg rolls back only to an ancestor of the current snapshot; after someone rolled
    the mirror back past the job's commit, that commit is a descendant, which set_current_snapshot
    reaches."""
    if any(s.snapshot_id == snap.snapshot_id for s in chain):
        return (f"roll the mirror back to it (CALL <catalog>.system.rollback_to_snapshot('<mirror>', "
                f"{snap.snapshot_id}))")
    return (f"make it the mirror's current snapshot again (CALL <catalog>.system.set_current_snapshot('<mirror>', "
            f"{snap.snapshot_id}): someone rolled the mirror back past it, so it is not an ancestor to roll back to)")


def delete_mode_change(mirror: TableState, requested: str) -> Optional[str]:
    """The delete mode the mirror was built with when the run asks for another one (None: the same,
    or a mirror from before the mode was recorded)."""
    built = mirror.properties.get(DELETE_MODE_PROPERTY) if mirror.exists else None
    return built if built and built != requested else None


@dataclass(frozen=True)
class SourceProblem:
    """Why a source table cannot be mirrored: `skip` for a table that is not OLake's (a note, not a
    failure: a namespace may hold other tables), else a refusal of an OLake-like table."""

    reason: str
    skip: bool = False


def source_problem(source: TableState, name: str) -> Optional[SourceProblem]:
    """What in the source's schema the job cannot serve, before anything is read or written."""
    if source.properties.get(MADE_BY_PROPERTY) == MADE_BY or SOURCE_PROPERTY in source.properties:
        return SourceProblem(f"{name} is an olake-cow mirror (it carries {MADE_BY_PROPERTY} or {SOURCE_PROPERTY}), "
                             "not OLake's table: a mirror is not mirrored again. Name OLake's namespace")
    if source.key_field_id is None:
        return SourceProblem(f"{name} has no _olake_id column: it is not an OLake table, skipped", skip=True)
    if source.key_type != "string":
        return SourceProblem(f"{name}: _olake_id is of type {source.key_type}, not string as OLake writes it; "
                             "the mirror keys on OLake's string ids, so the table is refused")
    return None


def _under(path: str, root: str) -> bool:
    """Whether `path` is `root` or lies in it (one spelling per place: comparable_location)."""
    return (comparable_location(path).rstrip("/") + "/").startswith(comparable_location(root).rstrip("/") + "/")


def _shared_places(mine: Iterable[str], theirs: Iterable[str]) -> List[Tuple[str, str]]:
    """The pairs of a place of one table and a place of another that lie in one another."""
    theirs = list(theirs)
    return [(a, b) for a in mine for b in theirs if _under(a, b) or _under(b, a)]


def location_problem(mirror_location: str, source_location: str, name: str) -> Optional[str]:
    """Why a new mirror may not live at `mirror_location`: inside its source table's location or its
    source namespace's folder (where OLake's tables and their orphan removal live)."""
    table = comparable_location(source_location).rstrip("/")
    namespace = table.rsplit("/", 1)[0] if "/" in table.split("://", 1)[-1] else None
    for folder, what in ((table, "its source table"), (namespace, "its source namespace's folder")):
        if folder and _under(mirror_location, folder):
            return (f"{name} would be created at {mirror_location}, inside {what} ({folder}): nothing "
                    "was created. Give the mirrors a location of their own (--cow-base-location)")
    return None


def foreign_files(paths: Iterable[str], location: str) -> List[str]:
    """The files of `paths` that are not under table location `location`: files someone committed
    to the table from elsewhere (another table's data, OLake's too), which nothing that deletes the
    table's files (its snapshots' expiry, a drop that purges) may delete."""
    return sorted(p for p in paths if not _under(p, location))


def foreign_files_problem(name: str, location: str, files: List[str], what: str) -> str:
    """Why `what` is not done to table `name`: its snapshots reference `files` outside `location`."""
    return (f"{name}'s snapshots reference {len(files)} file(s) outside its location {location} (the first: "
            f"{files[0]}), which someone committed to it (or it held before someone moved it): {what} would "
            "delete them, and they may be another table's data, so nothing was deleted. If someone moved the "
            "table, set its location back (ALTER TABLE ... SET LOCATION); else take that commit out of the "
            "table's history without deleting files (roll back before it if it is current, then expire with "
            "Iceberg's ExpireSnapshots.cleanExpiredFiles(false)). Do not drop the table: a truncate mirror is the "
            "only complete copy, and OLake's table is OLake's")


# Where Iceberg's default location provider writes data files, first set first (the last two are
# older spellings Iceberg still honours); metadata files go to write.metadata.path or metadata/.
DATA_PATH_PROPERTIES = ("write.data.path", "write.object-storage.path", "write.folder-storage.path")


def table_folders(location: str, properties: Mapping[str, str]) -> Tuple[str, str]:
    """The folders a table at `location` writes its data and metadata files to."""
    base = location.rstrip("/")
    data = next((str(properties[k]) for k in DATA_PATH_PROPERTIES if properties.get(k)), f"{base}/data")
    return data.rstrip("/"), str(properties.get("write.metadata.path") or f"{base}/metadata").rstrip("/")


def state_places(table: TableState) -> Tuple[str, ...]:
    """A table's location and the folders it writes to, from its metadata (none if not known)."""
    return (table.location, *table_folders(table.location, table.properties)) if table.location else ()


def mirror_ground_problem(source: TableState, mirror: TableState) -> Optional[str]:
    """Why the mirror's files would land on OLake's ground (someone pointed its write.data.path, or
    its location, into OLake's table's folders), where an orphan removal of OLake's table (OLake's,
    a catalog's optimizer, this job's) would delete them. None: their places are apart."""
    if not (source.exists and mirror.exists):
        return None
    shared = _shared_places(state_places(mirror), state_places(source))
    if not shared:
        return None
    mine, theirs = shared[0]
    return (f"the mirror writes its files to {mine}, in OLake's table's {theirs} (someone set the mirror's "
            "write.data.path or location there), where an orphan removal of OLake's table would delete them")


# Iceberg's switch for deleting a table's files (expiry, orphan removal, a purging drop): someone
# who turns it off says those files may be another table's (a clone, a table registered on them).
GC_ENABLED = "gc.enabled"


def gc_disabled(properties: Mapping[str, str]) -> Optional[str]:
    """The value of gc.enabled when it turns deleting files off, as Iceberg reads it (anything but
    "true", in any case); None when deleting is on (the default)."""
    value = properties.get(GC_ENABLED)
    return None if value is None or str(value).lower() == "true" else str(value)


@dataclass(frozen=True)
class Ground:
    """Where a table keeps its files: its location, the folders it writes data and metadata to,
    every file its history references, and its gc.enabled when someone turned deleting off."""

    name: str
    location: str
    folders: Tuple[str, ...] = ()
    files: Tuple[str, ...] = ()
    gc_off: Optional[str] = None

    @property
    def places(self) -> Tuple[str, ...]:
        return (self.location, *self.folders)


def ground_problem(mine: Ground, what: str, other: Optional[Ground] = None) -> Optional[str]:
    """Why `what`, which deletes files of table `mine` (its expiry, a purging drop, orphan removal),
    is not done (None: its ground is its own). Only what lies under the table's location is its own:
    a file its history references or a folder it writes to that lies elsewhere may be another
    table's. `other` is the other table of its pair (a mirror's source, a source's mirror): a place
    of either lying in a place of the other, or a file of the other's history in one of its folders,
    means files there may be the other's (someone moved a table onto the other's folders)."""
    if mine.gc_off is not None:
        return (f"{mine.name} has gc.enabled={mine.gc_off}: someone turned off deleting its files (Iceberg refuses "
                f"expiry, orphan removal and a purging drop then), so {what} was not done and nothing was deleted. "
                "If no other table uses its files, set gc.enabled=true (ALTER TABLE ... SET TBLPROPERTIES) to let "
                "the job maintain it")
    foreign = foreign_files(mine.files, mine.location)
    if foreign:
        return foreign_files_problem(mine.name, mine.location, foreign, what)
    outside = foreign_files(mine.folders, mine.location)
    if outside:
        return (f"{mine.name} writes its files to {outside[0]}, outside its location {mine.location} (someone set "
                f"its write.data.path or write.metadata.path): {what} would delete files there that may be another "
                "table's, so nothing was deleted. Unset that property to let the job maintain the table")
    if other is None:
        return None
    shared = _shared_places(mine.places, other.places)
    theirs = [f for f in other.files if any(_under(f, folder) for folder in mine.folders)]
    if shared or theirs:
        where = (f"its {shared[0][0]} and {other.name}'s {shared[0][1]} lie in one another" if shared else
                 f"{other.name}'s file {theirs[0]} lies in its folders")
        return (f"{mine.name}: {where} (someone moved a table onto the other's folders): {what} would delete "
                f"files of {other.name}, so nothing was deleted. Give each table its own location back "
                "(ALTER TABLE ... SET LOCATION, UNSET TBLPROPERTIES) to let the job maintain them")
    return None


def state_ground(table: TableState, name: str = "") -> Optional[Ground]:
    """A table's ground as its metadata tells it: location and folders (its files are in its
    manifests). None when the table or its location is not known."""
    if not (table.exists and table.location):
        return None
    return Ground(name, table.location, table_folders(table.location, table.properties),
                  gc_off=gc_disabled(table.properties))


def ground_known_foreign(table: TableState, other: TableState) -> bool:
    """Whether ground_problem refuses to delete files of `table` (its pair's other table `other`) from
    their metadata alone: the trigger starts no run for an expiry or orphan removal the job would skip."""
    mine = state_ground(table)
    return mine is not None and ground_problem(mine, "", state_ground(other)) is not None


def is_table_metadata(path: str) -> bool:
    """Whether a file is named as Iceberg names a table metadata file (v3.metadata.json,
    00001-<uuid>.metadata.json, .gz.metadata.json, and the older .metadata.json.gz)."""
    return path.rsplit("/", 1)[-1].endswith((".metadata.json", ".metadata.json.gz"))


def foreign_metadata(uuid: Optional[str], found: Iterable[Tuple[str, Optional[str]]]) -> Optional[Tuple[str, str]]:
    """The first of `found` (a table metadata file among the files orphan removal would delete, and
    the UUID of the table it describes, None when it cannot be read) that is not of the table with
    `uuid`: then another table keeps its files in this one's folders (someone moved a table onto
    another's location, one that never held a file so that ground_problem could not tell), and
    orphan removal would delete that table's files. (path, what it is); None: all are the table's own
    (a commit that lost a race leaves its metadata file unreferenced)."""
    for path, theirs in found:
        if theirs is None or uuid is None or theirs.lower() != uuid.lower():  # one UUID, either case
            return path, (f"the metadata of table {theirs}" if theirs else "a table metadata file it cannot read")
    return None


def foreign_metadata_problem(name: str, path: str, what: str) -> str:
    return (f"{name}: orphan removal would delete {path}, {what}, not {name}'s: another table keeps its files in "
            f"{name}'s folders (someone moved a table onto another's location), so nothing was deleted. Give "
            "each table its own location back (ALTER TABLE ... SET LOCATION) to let the job maintain them")


def occupied_location_problem(name: str, location: str) -> str:
    """Why no mirror is created at a location that already holds files."""
    return (f"{name} would be created at {location}, which already holds files: nothing was created. "
            "Those files may be another table's data (a renamed or dropped table keeps its files): "
            "leave them, and give the mirrors another location (--cow-base-location) or namespace "
            "(--cow-namespace)")


def source_namespace_problem(table: TableState, ns: str, name: str, source_name: str) -> Optional[str]:
    """Why no mirror of `source_name` is created in namespace `ns`, which holds table `name` (None:
    that table is no OLake table, or a mirror): a namespace with an OLake table is a source namespace."""
    if table.key_field_id is None or ownership(table, "", name).owner != Owner.FOREIGN:
        return None
    return (f"{ns} holds OLake's table {name}: it is a source namespace, not a mirror namespace, and no "
            f"mirror of {source_name} was created there. Choose another --cow-namespace")


def comparable_location(location: str) -> str:
    """One spelling per place: file:///p, file:/p and /p are one local path; s3a:// and s3n:// are s3://."""
    scheme, sep, rest = location.partition("://")
    if sep and f"{scheme.lower()}://" in S3_SCHEMES:
        return "s3://" + rest
    if sep and scheme.lower() == "file":
        return "/" + rest.lstrip("/")
    return location[len("file:"):] if location.startswith("file:") else location
