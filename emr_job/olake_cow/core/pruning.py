"""Which mirror files a change set can touch, from key metrics alone (pure).

Each mirror data file carries the lowest and highest `_olake_id` it holds (Iceberg's column metrics;
truncated bounds still enclose the real ones). A file can hold a changed key only if some key of the
change set falls inside its bounds; every other file is carried over untouched. The merge gets the
touched files' key intervals as a predicate, which Iceberg turns into file pruning, and its write
is shaped by how much of the mirror it rewrites.
"""
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple, Union

from .formats import FormatRules
from .identifiers import quote

Interval = Tuple[str, str]
MAX_INTERVALS = 64  # more than this and one covering interval is used: a long predicate costs planning time
SPREAD_FRACTION = 0.5  # a change set touching files that hold this share of the bytes is "spread"


@dataclass(frozen=True)
class FileBounds:
    path: str
    lo: Optional[str]  # None: unknown (no metrics): the file may hold any key
    hi: Optional[str]
    size: int = 0  # bytes


@dataclass(frozen=True)
class MergeShape:
    """What a merge of a change set into the mirror can touch.

    `intervals`: key intervals covering every touched file (None: no pruning possible, e.g. a file
    without key metrics); an empty tuple means no mirror file can hold a changed key.
    `touched`/`files`: touched files and all files of the mirror's current snapshot; `touched_bytes`
    and `bytes` their sizes."""

    intervals: Optional[Tuple[Interval, ...]]
    touched: int
    files: int
    touched_bytes: int = 0
    bytes: int = 0

    @property
    def spread(self) -> bool:
        """The change set touches files holding most of the mirror's bytes: keeping the mirror
        range-sorted would cost a sampling pass and a shuffle of nearly all its rows, and would
        prune little next time."""
        return self.bytes > 0 and self.touched_bytes >= SPREAD_FRACTION * self.bytes

    @property
    def everything(self) -> bool:
        """Every file may hold a changed key: looking for the ones that do cannot prune anything."""
        return self.touched == self.files


def touched_files(files: Sequence[FileBounds], sorted_keys: Sequence[str]) -> List[FileBounds]:
    """The files whose key bounds enclose at least one of `sorted_keys` (ascending)."""
    out = []
    for f in files:
        if f.lo is None or f.hi is None:
            out.append(f)
            continue
        i = bisect_left(sorted_keys, f.lo)
        if i < len(sorted_keys) and sorted_keys[i] <= f.hi:
            out.append(f)
    return out


def merge_intervals(intervals: Sequence[Interval], limit: int = MAX_INTERVALS,
                    others: Optional[Sequence[FileBounds]] = None) -> Tuple[Interval, ...]:
    """Overlapping intervals joined, and, given the `others` files (the ones the intervals need not
    cover), neighbours whose gap holds none of them wholly (the joined predicate prunes the same
    files); more than `limit` left become one interval covering them all."""
    merged: List[List[str]] = []
    for lo, hi in sorted(intervals):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    if others is not None:
        merged = _close_gaps(merged, others)
    if len(merged) > limit:
        return ((merged[0][0], max(hi for _, hi in merged)),)
    return tuple((lo, hi) for lo, hi in merged)


def _close_gaps(merged: List[List[str]], others: Sequence[FileBounds]) -> List[List[str]]:
    """Sorted disjoint intervals, each joined to the next unless a file of `others` lies wholly
    between them: a file reaching into either interval is scanned anyway. The predicate is
    evaluated on every row the merge scans: a fresh mirror of 32 key-range files, all touched by
    uniform changes, gave 32 intervals, and the dv merge's scan of 16M keys took 52 s of CPU
    against 5 s with one (its run 14-33 s against 8.5 s)."""
    if len(merged) < 2:
        return merged
    bounded = sorted((str(f.lo), str(f.hi)) for f in others if f.lo is not None and f.hi is not None)
    los = [lo for lo, _ in bounded]
    out = [merged[0]]
    for lo, hi in merged[1:]:
        gap_lo, gap_hi = out[-1][1], lo  # the files starting inside the gap; in it if they end there too
        starting = range(bisect_right(los, gap_lo), bisect_left(los, gap_hi))
        if any(bounded[i][1] < gap_hi for i in starting):
            out.append([lo, hi])
        else:
            out[-1][1] = hi
    return out


def merge_shape(files: Sequence[FileBounds], keys: Sequence[str]) -> MergeShape:
    touched = touched_files(files, sorted(keys))
    sizes = (len(touched), len(files), sum(f.size for f in touched), sum(f.size for f in files))
    if any(f.lo is None or f.hi is None for f in touched):
        return MergeShape(None, *sizes)
    chosen = {f.path for f in touched}
    untouched = [f for f in files if f.path not in chosen]
    return MergeShape(merge_intervals([(str(f.lo), str(f.hi)) for f in touched], others=untouched), *sizes)


def unknown_shape(files: Sequence[FileBounds], key_range: Optional[Interval]) -> MergeShape:
    """Without the change keys: every file may be touched (the change set's key range, if known,
    still prunes)."""
    total = sum(f.size for f in files)
    return MergeShape((key_range,) if key_range else None, len(files), len(files), total, total)


MIN_WRITE_FILE_BYTES = 32 * 1024 * 1024


def write_partitions(touched_bytes: int, target_file_bytes: int, cores: int) -> int:
    """How many files a merge that rewrites `touched_bytes` writes: files of about the target size,
    but one per core while each keeps 32 MB."""
    by_size = -(-touched_bytes // max(1, target_file_bytes))
    return max(1, by_size, min(cores, -(-touched_bytes // MIN_WRITE_FILE_BYTES)))


@dataclass(frozen=True)
class CowWrite:
    """How a copy-on-write merge writes. `hash`: no global sort (no sampling pass over the rewrite,
    which Spark's range distribution costs), the change set partitioned into `partitions` so the
    join writes that many files, each sorted by the mirror's sort order; else the mirror's own
    range distribution keeps several new files apart by key. `find_files`: first look for the
    files holding changed keys (Spark's row-level group filter), unless every file may hold one by
    its key metrics and the mirror is unpartitioned. In a partitioned mirror every file's key range
    can span all keys (a bucket or a date partition beside spread keys), yet a change lives in few
    partitions: only the search finds them, so it always runs there."""

    hash: bool
    partitions: Optional[int]
    find_files: bool


def cow_write(shape: MergeShape, target_file_bytes: int, cores: int, partitioned: bool = False) -> CowWrite:
    """A spread change set, or a rewrite that fits one file, needs no global sort: the files it
    writes are the only ones holding its keys, or they would be rewritten next time anyway."""
    find_files = partitioned or not shape.everything
    if partitioned:  # the table's own distribution clusters the rewrite by partition
        return CowWrite(False, None, find_files)
    n = write_partitions(shape.touched_bytes, target_file_bytes, cores)
    if shape.spread or n == 1:
        return CowWrite(True, n, find_files)
    return CowWrite(False, None, find_files)


def key_partition_sql(terms: Sequence[Tuple[str, str]], catalog: str) -> Optional[List[str]]:
    """Spark SQL for a partition spec's values when every field is a transform of `_olake_id`
    alone (identity, bucket[N], truncate[W]; `terms` as (transform, column)): then all rows of a
    key share a partition, and one shuffle by these values serves both one row per key and the
    write by partition. None otherwise: with a date partition, two visible rows of one key (OLake
    #1189) may sit in two partitions, so one row per key needs a shuffle by key of its own."""
    exprs = []
    for transform, column in terms:
        if column != "_olake_id":
            return None
        name, _, arg = transform.partition("[")
        if name == "identity":
            exprs.append("`_olake_id`")
        elif name in ("bucket", "truncate") and arg.rstrip("]").isdigit():
            exprs.append(f"{quote(catalog)}.system.{name}({int(arg.rstrip(']'))}, `_olake_id`)")
        else:
            return None
    return exprs or None


SMALL_MIRROR_BYTES = MIN_WRITE_FILE_BYTES  # at most this, a cow merge writes a whole mirror as one file


def rewrites_whole(shape: MergeShape, partitioned: bool, keys: int, most_keys: int) -> bool:
    """Whether a cow merge rewrites a small unpartitioned mirror whole: every file may hold one of
    its `keys` (at most `most_keys`, listed in a filter) and together they fit one file. Then the
    new mirror is its rows less the changed keys, plus the upserts, sorted into one file: one Spark
    stage where a MERGE's join takes three (a namespace of small tables spends most of a run there)."""
    return (not partitioned and shape.files > 0 and shape.everything and shape.bytes <= SMALL_MIRROR_BYTES
            and keys <= most_keys)


KEYS_PER_FILE_TO_COUNT = 8


def counts_touched_files(shape: MergeShape, partitioned: bool, keys: int, most_keys: int) -> bool:
    """Whether a cow merge into a partitioned mirror first counts the files its `keys` touch (one
    scan of the key column, the search the MERGE makes for them anyway), to rewrite the mirror whole
    when that is every file. Key metrics cannot say so (every file of a bucket or a date partition
    spans nearly all keys), and the MERGE would then shuffle the whole mirror twice, once for its
    outer join and once for the write; the whole rewrite filters the changed keys out instead of
    joining (1M rows in 59 date partitions, all changed: two full shuffles against one). Only with
    at least 8 keys a file: fewer leave some file untouched, and the count would be paid for
    nothing."""
    return (partitioned and shape.files > 0 and shape.everything and keys <= most_keys
            and keys >= KEYS_PER_FILE_TO_COUNT * shape.files)


LISTED_KEY_FILES = 1_500_000


def lists_keys(shape: MergeShape, keys: int, most_keys: int) -> bool:
    """Whether a dv merge filters the mirror's rows by an IN list of its `keys` (at most
    `most_keys`) before its join. The list spares the join's shuffle the unmatched rows of the
    touched files, but every file's reader binds and applies it: its cost grows with keys times
    touched files. Measured with 5,000 keys on 1M rows, cold: with 8 files, or 48-160 bucket files
    (in three pairs of runs of four), the list saves 0.2-0.7 s a run; on a day-partitioned mirror
    it is within the noise at 118-236 files and costs 0.4-2.7 s at 350-650 files and 3-4 s at
    700-1,100 (15 ms of CPU a file task). Listed while keys x touched files stays within 1,500,000."""
    return (shape.intervals != () and 0 < keys <= most_keys
            and keys * shape.touched <= LISTED_KEY_FILES)


# A dv merge filters the mirror's rows by an IN list of up to this many keys before its join: the
# MERGE is an outer join that cannot broadcast the change set, so the mirror side is shuffled, and
# the list keeps that to the matched rows (measured at 1M rows, 5,000 keys: 1.45 s -> 1.25 s a run),
# while the touched files are few (core/pruning.py lists_keys). A cow merge rewrites whole files
# anyway: there the list costs more to plan than it saves.
KEYS_LISTED = 20_000


@dataclass(frozen=True)
class Rebuild:
    """The change set is the whole new mirror (a first build, a rebuild)."""


@dataclass(frozen=True)
class WholeRewrite:
    """Every file of the mirror is rewritten: its rows less the changed keys, plus the upserts.
    `if_every_file_touched`: only once a count shows the keys touch every file (partitioned)."""

    if_every_file_touched: bool = False


@dataclass(frozen=True)
class KeyMerge:
    """A MERGE on `_olake_id` into the files the keys can reach; `listed`: the dv merge filters the
    mirror's rows by an IN list of the keys before its join."""

    listed: bool = False


WriteChoice = Union[Rebuild, WholeRewrite, KeyMerge]


def choose_write(shape: Optional[MergeShape], rules: FormatRules, partitioned: bool, keys: Optional[int],
                 rebuild: bool = False, has_data: bool = True) -> WriteChoice:
    """How one change set is written into a mirror of `rules`' format (spark/merge.py has one writer
    per choice). `keys`: how many changed keys are known (None: not counted); `has_data`: the
    mirror has a current snapshot to merge into."""
    if rebuild:
        return Rebuild()
    if shape is None or keys is None:
        return KeyMerge()
    cow = rules.rewrites_files
    if cow and has_data:
        if rewrites_whole(shape, partitioned, keys, KEYS_LISTED):
            return WholeRewrite()
        if counts_touched_files(shape, partitioned, keys, KEYS_LISTED):
            return WholeRewrite(if_every_file_touched=True)
        return KeyMerge()
    return KeyMerge(listed=not cow and lists_keys(shape, keys, KEYS_LISTED))
