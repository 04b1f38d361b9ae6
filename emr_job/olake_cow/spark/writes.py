"""The three ways a change set is staged into a mirror, one Spark class per choice of core/pruning.py's
`choose_write`. Each owns the session settings its write needs (`settings`) and the write itself
(`write`); merge.py applies the settings around the write and restores them after.

    RebuildWrite        the change set is the whole new mirror (first build, rebuild)
    WholeRewriteWrite   every mirror file rewritten: its rows less the changed keys, plus the upserts
    KeyMergeWrite       a MERGE on _olake_id into the files the keys can reach (cow or dv)
"""
import uuid
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple, Union

from ..core.filesize import mirror_target_bytes
from ..core.formats import FormatRules
from ..core.identifiers import quote
from ..core.pruning import KeyMerge, MergeShape, Rebuild, WholeRewrite, WriteChoice, cow_write
from ..core.snapshots import TableState
from .catalog import IcebergCatalog
from .change_set import ChangeSet, DataFrame
from .changes import KEY, aligned_rows, key_condition, merge_sql
from .mirror_ddl import spec_terms
from .scan_tasks import TaskSets

DISTRIBUTION_MODE = "spark.sql.iceberg.distribution-mode"
GROUP_FILTER = "spark.sql.optimizer.runtime.rowLevelOperationGroupFilter.enabled"
PARALLELISM_FIRST = "spark.sql.adaptive.coalescePartitions.parallelismFirst"
PREFER_SORT_MERGE = "spark.sql.join.preferSortMergeJoin"


@dataclass(frozen=True)
class Target:
    """The mirror a write goes to, at the state it was read in."""

    session: Any
    catalog: IcebergCatalog
    ns: str
    name: str
    sql_name: str
    state: TableState

    @property
    def partitioned(self) -> bool:
        return self.state.partitioned

    @property
    def read_id(self) -> int:
        return int(self.state.current_id or 0)


def _by_partition(partitioned: bool) -> Dict[str, str]:
    # Written by partition (the table's distribution): sized by the advisory size alone, a mirror of
    # a few hundred MB is one task sorting and writing every partition's file (1M rows in 16
    # buckets, a cow merge's write: 16 s in one task, 7.7 s in three).
    return {PARALLELISM_FIRST: "true"} if partitioned else {}


class RebuildWrite:
    def __init__(self, to: Target) -> None:
        self.to = to

    def settings(self) -> Dict[str, str]:
        return _by_partition(self.to.partitioned)

    def write(self, cs: ChangeSet) -> None:
        from pyspark.sql import functions as F

        to = self.to
        writer = aligned_rows(cs.frame, to.session.table(to.sql_name).schema).writeTo(to.sql_name)
        if not to.partitioned or (cs.clustered_by is not None
                                  and cs.clustered_by == tuple(spec_terms(to.catalog.load(to.ns, to.name)))):
            # Already partitioned and sorted as the mirror wants (by key range, or by the mirror's
            # partitions): written as it is, no second shuffle or sort.
            writer = writer.option("use-table-distribution-and-ordering", "false")
        else:
            # By partition (hashed: a mirror with a sort order would otherwise take a range
            # distribution, whose sampling pass computes the rows twice: 3.3 s of a 1M-row load).
            # Written as the key ranges are, every range would write a file into every partition.
            writer = writer.option("distribution-mode", "hash")
        if to.state.current_id is None:
            writer.append()
        else:
            writer.overwrite(F.lit(True))


class WholeRewriteWrite:
    """The mirror's rows without the changed keys, plus the upserts, replacing every file: what the
    MERGE would write, without its join. Unpartitioned, one file in the mirror's sort order;
    partitioned, by the table's partitions, each in its sort order. Read at the mirror's current
    snapshot; as the MERGE's, the commit fails if the mirror got data since."""

    def __init__(self, to: Target, keys: List[str]) -> None:
        self.to, self.keys = to, keys

    def settings(self) -> Dict[str, str]:
        return _by_partition(self.to.partitioned)

    def write(self, cs: ChangeSet) -> None:
        from pyspark.sql import functions as F

        to = self.to
        # The mirror's files at `read_id`, read with its current schema (it may have followed the
        # source since: new or renamed columns), as its scan tasks (time travel reads a snapshot
        # with that snapshot's schema, which would lose a renamed column's values).
        sets = TaskSets(to.session, to.catalog.load(to.ns, to.name), to.sql_name)
        cs.on_close(sets.close)
        plan = sets.plan(to.read_id).tasks
        rows = sets.read([plan.get(i) for i in range(int(plan.size()))])
        rows = rows.where(key_condition("", self.keys, listed=False)).unionByName(aligned_rows(cs.frame, rows.schema))
        if to.partitioned:  # hashed by partition (the sort order would make Iceberg ask for a sampled range)
            writer = rows.writeTo(to.sql_name).option("distribution-mode", "hash")
        else:  # no exchange (one task); the table's sort order still sorts the file
            writer = rows.coalesce(1).writeTo(to.sql_name).option("distribution-mode", "none")
        (writer.option("validate-from-snapshot-id", str(to.read_id)).option("isolation-level", "serializable")
         .overwrite(F.lit(True)))


class KeyMergeWrite:
    """A MERGE on _olake_id into the files the change keys can reach (`shape`; None: unknown). A cow
    merge rewrites those files as core/pruning.py's cow_write says; a dv merge writes deletion
    vectors, filtering the mirror by the `listed` keys first when it has them."""

    def __init__(self, to: Target, rules: FormatRules, shape: Optional[MergeShape],
                 listed: Optional[List[str]]) -> None:
        self.to, self.shape, self.listed = to, shape, listed
        self.conf: Dict[str, str] = {}
        self.partitions: Optional[int] = None  # the join's partitions, when the change set is hashed by key
        if not rules.rewrites_files:  # deletion vectors: Spark's own MERGE plan
            return
        # A cow MERGE is a full outer join of the mirror's touched files with the change set: a hash
        # of the (small, cached) change set spares sorting the whole rewrite for the join. Spark
        # still picks it only for a side 3x smaller and under its broadcast size per partition.
        self.conf = {PREFER_SORT_MERGE: "false", **_by_partition(to.partitioned)}
        if shape is None:
            return
        parallelism = int(to.session.sparkContext.defaultParallelism)
        plan = cow_write(shape, mirror_target_bytes(to.state.properties), parallelism, to.partitioned)
        if plan.hash:  # unpartitioned: no exchange before the write; the join's partitions are the files
            self.conf[DISTRIBUTION_MODE] = "hash"
            self.partitions = plan.partitions
        if not plan.find_files or shape.intervals == ():
            # No file to find when no mirror file can hold a changed key; Spark 4.1 also fails
            # planning that search ("None.get") for a MERGE whose ON clause is false.
            self.conf[GROUP_FILTER] = "false"

    def settings(self) -> Dict[str, str]:
        return self.conf

    def write(self, cs: ChangeSet) -> None:
        from pyspark.sql import functions as F

        to = self.to
        intervals: Optional[Tuple[Tuple[str, str], ...]] = self.shape.intervals if self.shape is not None else None
        view = f"olake_cow_changes_{uuid.uuid4().hex[:12]}"
        # The join takes its partitions from the change set's, when it is partitioned by key.
        changes = cs.frame.repartition(self.partitions, F.col(KEY)) if self.partitions else cs.frame
        view_of(to.session, changes).createOrReplaceTempView(view)
        try:
            cols = list(to.state.columns) or to.session.table(to.sql_name).columns
            to.session.sql(merge_sql(to.sql_name, quote(view), cols, cs.frame.columns, intervals, self.listed))
        finally:
            to.session.catalog.dropTempView(view)


Write = Union[RebuildWrite, WholeRewriteWrite, KeyMergeWrite]


def write_for(choice: WriteChoice, to: Target, rules: FormatRules, shape: Optional[MergeShape],
              keys: Optional[List[str]]) -> Write:
    """The Spark write for core/pruning.py's choice."""
    if isinstance(choice, Rebuild):
        return RebuildWrite(to)
    if isinstance(choice, WholeRewrite):
        return WholeRewriteWrite(to, keys or [])
    assert isinstance(choice, KeyMerge)
    return KeyMergeWrite(to, rules, shape, keys if choice.listed else None)


def view_of(session: Any, frame: DataFrame) -> DataFrame:
    """`frame` as a temporary view can hold it. Spark 4.1 resolves the Iceberg tables of a view's
    plan again when a query reads the view, and a staged task set (scan_tasks.py) is no table its
    catalog can load again ("No plan for TableReference"): there the view gets the rows read once
    (a local checkpoint of the persisted change set), not the reads themselves."""
    if int(str(session.version).split(".")[0]) < 4:
        return frame
    return frame.localCheckpoint(eager=False)
