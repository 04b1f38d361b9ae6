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
  olake-cow.delete-mode   keep | hard: what the mirror holds of OLake's tombstones

The job writes only to a table that is its own mirror of this source. Anything else at the name is
refused before anything is written. A mirror whose current snapshot is not what the job left is
repaired: merged again from the newest checkpoint its history proves, or rebuilt.
"""
from dataclasses import dataclass
from enum import Enum
from typing import List, Optional

from .checkpoint import (
    CHECKPOINT_PROPERTY,
    DATA_CHECKPOINT_PROPERTY,
    FORMAT_PROPERTY,
    MODE_PROPERTY,
    SOURCE_PROPERTY,
    marker_of,
    parse_marker,
    rejected,
)
from .snapshots import Operation, Snapshot, TableState, ancestors
from .uris import S3_SCHEMES

MADE_BY_PROPERTY = "olake-cow.made-by"
MADE_BY = "olake-cow"
DELETE_MODE_PROPERTY = "olake-cow.delete-mode"
# What mirrors of earlier versions carry (any one of them marks the table as the project's).
LEGACY_PROPERTIES = (SOURCE_PROPERTY, CHECKPOINT_PROPERTY, MODE_PROPERTY, FORMAT_PROPERTY)


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

    @property
    def writable(self) -> bool:
        return self.owner in (Owner.NONE, Owner.OURS, Owner.LEGACY)


def ownership(mirror: TableState, source: str, mirror_name: str) -> Ownership:
    """Whether the job may write the table at the mirror's name (`source`: `<namespace>.<table>`)."""
    if not mirror.exists:
        return Ownership(Owner.NONE)
    props = mirror.properties
    made = props.get(MADE_BY_PROPERTY) == MADE_BY
    legacy = not made and (any(k in props for k in LEGACY_PROPERTIES)
                           or any(marker_of(s) is not None for s in mirror.snapshots))
    if not made and not legacy:
        return Ownership(Owner.FOREIGN, (
            f"{mirror_name} exists and was not made by olake-cow (it has no {MADE_BY_PROPERTY} property): "
            "nothing was written to it. Rename or drop that table, or mirror into another namespace "
            "(--cow-namespace)"))
    recorded = props.get(SOURCE_PROPERTY)
    if recorded and recorded != source:
        return Ownership(Owner.OTHER_SOURCE, (
            f"{mirror_name} is the mirror of {recorded}, not of {source}: nothing was written to it. "
            "Two source namespaces cannot share one mirror namespace; give this one its own --cow-namespace"))
    return Ownership(Owner.OURS if made else Owner.LEGACY)


def foreign_change(mirror: TableState) -> Optional[str]:
    """Why the mirror's current snapshot is not one the job left (None when it is). Only the job's
    publishes (a checkpoint marker in the summary) and rewrites that keep content (`replace`:
    compaction, manifest rewrites, another tool's compaction) may follow the newest marker."""
    if not mirror.exists or mirror.current_id is None:
        return None
    chain, complete = ancestors(mirror)
    last = max((i for i, s in enumerate(chain) if marker_of(s) is not None), default=None)
    after: List[Snapshot] = chain if last is None else chain[last + 1:]
    foreign = [s for s in after if s.operation != Operation.REPLACE.value]
    data = parse_marker(mirror.properties.get(DATA_CHECKPOINT_PROPERTY))
    if foreign and (last is not None or complete):
        s = foreign[-1]
        return (f"mirror snapshot {s.snapshot_id} ({s.operation or 'no operation'}) was committed by someone else "
                "after the job's last commit")
    if last is not None and chain[last].snapshot_id in rejected(mirror):
        return f"mirror snapshot {chain[last].snapshot_id} failed its audit but was made current by someone else"
    held = marker_of(chain[last]) if last is not None else None
    if data is not None and held is not None and held != data:
        return (f"the mirror's current snapshot {mirror.current_id} holds source snapshot {held.snapshot_id}, "
                f"not {data.snapshot_id} that the job left it at (it was rolled back or set by someone else)")
    if data is not None and held is None and complete:
        return (f"the mirror's current snapshot {mirror.current_id} holds none of the job's commits "
                "(it was rolled back or set by someone else)")
    return None


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
    if source.key_field_id is None:
        return SourceProblem(f"{name} has no _olake_id column: it is not an OLake table, skipped", skip=True)
    if source.key_type != "string":
        return SourceProblem(f"{name}: _olake_id is of type {source.key_type}, not string as OLake writes it; "
                             "the mirror keys on OLake's string ids, so the table is refused")
    return None


def location_problem(mirror_location: str, source_location: str, name: str) -> Optional[str]:
    """Why a new mirror may not live at `mirror_location`: inside its source table's location or its
    source namespace's folder (where OLake's tables and their orphan removal live)."""
    mirror, table = _comparable(mirror_location).rstrip("/") + "/", _comparable(source_location).rstrip("/")
    namespace = table.rsplit("/", 1)[0] + "/" if "/" in table.split("://", 1)[-1] else None
    for folder, what in ((table + "/", "its source table"), (namespace, "its source namespace's folder")):
        if folder and mirror.startswith(folder):
            return (f"{name} would be created at {mirror_location}, inside {what} ({folder.rstrip('/')}): nothing "
                    "was created. Give the mirrors a location of their own (--cow-base-location)")
    return None


def _comparable(location: str) -> str:
    """One spelling per place: file:///p, file:/p and /p are one local path; s3a:// and s3n:// are s3://."""
    scheme, sep, rest = location.partition("://")
    if sep and f"{scheme.lower()}://" in S3_SCHEMES:
        return "s3://" + rest
    if sep and scheme.lower() == "file":
        return "/" + rest.lstrip("/")
    return location[len("file:"):] if location.startswith("file:") else location
