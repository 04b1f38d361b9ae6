"""Write-audit-publish of one change set: the write is staged under the target's WAP id, the
staged snapshot is audited, and only then published, with the checkpoint, in one commit.
Spark/Iceberg adapter."""
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ..core.audit import ChangeCounts, audit, count_published
from ..core.checkpoint import REJECTED_PROPERTY, STAGED_PROPERTY, Marker, staged_for, with_rejected
from ..core.errors import AuditError, MirrorMovedError, OlakeCowError
from ..core.identifiers import quote
from ..core.identity import DELETE_MODE_PROPERTY
from ..core.modes import DeleteMode, MirrorFormat
from ..core.pruning import FileBounds, KeyMerge, MergeShape, WholeRewrite, merge_shape, unknown_shape
from ..core.snapshots import Snapshot, Summary, TableState
from ..core.steps import Merge
from ..core.summary import TableResult
from . import publish as publishing
from .catalog import IcebergCatalog, is_java_error
from .change_set import ChangeSet, DataFrame
from .changes import ACTION, KEY, key_condition
from .file_listing import FileListing
from .paths import TablePath
from .writes import Target, write_for

KEYS_COLLECTED = 200_000  # change sets up to this many keys get exact file pruning; larger ones their key range
FILES_LISTED_DIRECTLY = 200  # mirrors of up to this many files: their bounds through Iceberg's API, no Spark job


@dataclass(frozen=True)
class ChangeSummary:
    """What one pass over a resolved change set gives the merge and its audit."""

    counts: ChangeCounts
    keys: Optional[List[str]]  # every key, when there are at most KEYS_COLLECTED of them


class MirrorWriter:
    """Writes one change set into the mirror: staged under the target's WAP id (a MERGE touching
    only the files the change keys can reach, or a whole rebuild), audited, then published with
    the checkpoint in one commit. Counts go to the table's result."""

    def __init__(self, session: Any, catalog: IcebergCatalog, ns: str, name: str, mirror_q: str,
                 result: TableResult, delete_mode: DeleteMode) -> None:
        self.session, self.catalog, self.files = session, catalog, FileListing(catalog)
        self.ns, self.name, self.mirror_q, self.result = ns, name, mirror_q, result
        self.delete_mode = delete_mode

    def summarize(self, frame: DataFrame, most: Optional[int] = None) -> ChangeSummary:
        """One pass over the (cached) change set: its keys and actions when it can hold at most
        KEYS_COLLECTED keys (`most`: an upper bound, the records of the files it was read from),
        else only its counts."""
        from pyspark.sql import functions as F

        if most is not None and most <= KEYS_COLLECTED:
            rows = frame.select(KEY, ACTION).collect()
            upserts = sum(1 for r in rows if r[1] == "U")
            return ChangeSummary(ChangeCounts(upserts, len(rows) - upserts), [r[0] for r in rows])
        upsert = F.col(ACTION) == F.lit("U")
        row = frame.agg(F.sum(upsert.cast("long")).alias("u"), F.sum((~upsert).cast("long")).alias("d")).collect()[0]
        return ChangeSummary(ChangeCounts(int(row["u"] or 0), int(row["d"] or 0)), None)

    def shape(self, mirror: TableState, keys: Optional[List[str]], key_range: Optional[Tuple[str, str]]) -> MergeShape:
        """Which mirror files the change keys can touch, from the key metrics of the mirror's files
        (its manifests, no data read: through Iceberg's API for a mirror of few files, else a
        metadata query). Without the keys, the change set's key range stands in."""
        current = mirror.snapshot(mirror.current_id)
        if current is not None and current.summary_int(Summary.TOTAL_DATA_FILES) <= FILES_LISTED_DIRECTLY \
                and mirror.key_field_id is not None:
            files = self.files.data_file_bounds(self.ns, self.name, mirror.key_field_id)
        else:
            metrics = f"readable_metrics.{quote(KEY)}"
            files = [FileBounds(r[0], r[1], r[2], int(r[3] or 0)) for r in self.session.sql(
                f"SELECT file_path, {metrics}.lower_bound, {metrics}.upper_bound, file_size_in_bytes "
                f"FROM {self.mirror_q}.{quote('files')} WHERE content = 0").collect()]
        return merge_shape(files, keys) if keys is not None else unknown_shape(files, key_range)

    def stage(self, cs: ChangeSet, marker: Marker, mirror: TableState, path: TablePath[Any],
              shape: Optional[MergeShape] = None, keys: Optional[List[str]] = None) -> Optional[Snapshot]:
        """Write the change set as a staged snapshot on the mirror's current one, as core/pruning.py's
        choose_write says (writes.py has one Spark class per choice), and record it as the job's (a
        run killed before its publish leaves it to the next); returns it, or None when the write
        changed nothing."""
        to = Target(self.session, self.catalog, self.ns, self.name, self.mirror_q, mirror)
        choice = path.choose(shape, mirror, keys, cs.rebuild)
        if isinstance(choice, WholeRewrite) and choice.if_every_file_touched and keys is not None and \
                shape is not None and not self._touches_every_file(keys, shape, to.read_id):
            choice = KeyMerge()
        write = write_for(choice, to, path.format, shape, keys)
        with self._settings({"spark.wap.id": marker.wap_id, **write.settings()}):
            try:
                write.write(cs)
            except Exception as exc:  # py4j's: a write whose validation met a commit made meanwhile
                now = self.catalog.state(self.ns, self.name).current_id
                if now != mirror.current_id and is_java_error(exc, "ValidationException", "CommitFailedException"):
                    raise MirrorMovedError(f"the mirror moved from snapshot {mirror.current_id} to {now} while the "
                                           f"merge wrote (someone committed, or another run published): nothing was "
                                           "staged") from exc
                raise
        after = self.catalog.state(self.ns, self.name)
        staged = [s for s in staged_for(after, marker) if s.parent_id == after.current_id]
        if not staged:
            return None
        self.catalog.set_property(self.ns, self.name, STAGED_PROPERTY, str(staged[0].snapshot_id))
        return staged[0]

    @contextmanager
    def _settings(self, conf: Dict[str, str]) -> Iterator[None]:
        """The write's session settings, back to what the run set after it (unset would drop a
        launch setting)."""
        before = {key: self.session.conf.get(key, None) for key in conf}
        for key, value in conf.items():
            self.session.conf.set(key, value)
        try:
            yield
        finally:
            for key, value in before.items():
                if value is None:
                    self.session.conf.unset(key)
                else:
                    self.session.conf.set(key, value)

    def _touches_every_file(self, keys: List[str], shape: MergeShape, read_id: int) -> bool:
        """Whether the changed keys are in every one of the mirror's `shape.files` files at
        `read_id`, the snapshot a whole rewrite reads and validates from (core/pruning.py
        counts_touched_files says when this count is worth its scan)."""
        rows = self.session.sql(f"SELECT * FROM {self.mirror_q} VERSION AS OF {int(read_id)}")
        return rows.where(key_condition("", keys)).select("_file").distinct().count() == shape.files

    def publish(self, staged: Snapshot, merge: Merge, counts: ChangeCounts, parent_rows: int,
                rebuild: bool, fmt: MirrorFormat) -> None:
        """Audit the staged snapshot, then publish it with the checkpoint and the merge's properties
        (one commit). A snapshot that fails is recorded as rejected on the mirror, so no later run
        tries to publish it again."""
        try:
            audit(staged, parent_rows, counts, rebuild, self.result.mirror, fmt)
        except AuditError:
            mirror = self.catalog.state(self.ns, self.name)
            self.catalog.set_property(self.ns, self.name, REJECTED_PROPERTY, with_rejected(mirror, staged.snapshot_id))
            raise
        publishing.publish(self.catalog, self.ns, self.name, staged.snapshot_id, merge.target.wap_id,
                           {DELETE_MODE_PROPERTY: str(self.delete_mode), **dict(merge.properties)})
        count_published(self.result, staged, counts, rebuild, fmt)

    def nothing_staged(self, counts: ChangeCounts, merge: Merge, rebuild: bool, parent: Optional[int]) -> None:
        """A write that staged nothing may only be one that had nothing to upsert (deletes of keys
        the mirror does not hold change nothing): committed as a snapshot of no file that carries
        the checkpoint, as a publish does, onto snapshot `parent` the merge was planned on."""
        if counts.upserts or rebuild:
            raise OlakeCowError(f"{self.result.mirror}: the merge for source snapshot {merge.target.snapshot_id} "
                                "staged no snapshot")
        publishing.publish(self.catalog, self.ns, self.name, None, merge.target.wap_id,
                           {DELETE_MODE_PROPERTY: str(self.delete_mode), **dict(merge.properties)}, parent=parent)
        self.result.rows_deleted += counts.deletes

