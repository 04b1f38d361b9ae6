"""Which mirror files a change set can touch, from key metrics (core/pruning.py), on literal bounds."""
import random

import pytest

from olake_cow.core.pruning import (
    CowWrite,
    FileBounds,
    MergeShape,
    counts_touched_files,
    cow_write,
    key_partition_sql,
    lists_keys,
    merge_intervals,
    merge_shape,
    rewrites_whole,
    touched_files,
    write_partitions,
)

pytestmark = pytest.mark.unit

# A mirror sorted by key, as OLake's decimal keys sort as strings: "1000000" sorts before "100001".
FILES = [FileBounds("f1", "0", "199999"), FileBounds("f2", "2", "399999"), FileBounds("f3", "4", "599999"),
         FileBounds("f4", "6", "899999"), FileBounds("f5", "9", "999999")]


def test_only_files_whose_bounds_enclose_a_changed_key_are_touched():
    assert [f.path for f in touched_files(FILES, sorted(["950000", "999999", "1000123"]))] == ["f1", "f5"]
    assert touched_files(FILES, []) == []


def test_a_file_without_key_metrics_may_hold_any_key_and_disables_the_predicate():
    files = FILES + [FileBounds("nometrics", None, None)]
    shape = merge_shape(files, ["950000"])
    assert shape.intervals is None and shape.touched == 2 and shape.files == 6


def test_the_predicate_covers_exactly_the_touched_files():
    shape = merge_shape(FILES, ["950000", "1000123"])
    assert shape.intervals == (("0", "199999"), ("9", "999999")) and (shape.touched, shape.files) == (2, 5)
    assert not shape.spread
    assert merge_shape(FILES, ["zzz"]).intervals == ()  # no file can hold the key: the merge only inserts


def test_overlapping_intervals_join_and_too_many_become_one():
    assert merge_intervals([("a", "c"), ("b", "d"), ("x", "y")]) == (("a", "d"), ("x", "y"))
    many = [(f"k{i:03d}", f"k{i:03d}z") for i in range(100)]
    assert merge_intervals(many, limit=64) == (("k000", "k099z"),)


def test_a_change_set_touching_files_with_most_of_the_bytes_is_spread():
    md5 = [FileBounds(f"f{i}", f"{i:x}0", f"{i:x}f", 100) for i in range(16)]  # hex keys: every file gets changes
    keys = [f"{i:x}7" for i in range(16)]
    shape = merge_shape(md5, keys)
    assert shape.spread and shape.everything
    assert not MergeShape((), 0, 1, 0, 10).spread and MergeShape(None, 1, 1, 30, 30).spread
    assert MergeShape(None, 2, 8, 50, 100).spread and not MergeShape(None, 7, 8, 49, 100).spread
    # many small files around the newest keys, one large file of old keys: not spread
    recent = [FileBounds("old", "0", "8", 1000)] + [FileBounds(f"n{i}", f"9{i}", f"9{i}z", 10) for i in range(6)]
    shape = merge_shape(recent, ["90a", "93a", "95a"])
    assert (shape.touched, shape.files, shape.spread, shape.everything) == (3, 7, False, False)


MB = 1024 * 1024


def test_a_merge_writes_files_of_the_target_size_but_keeps_the_cores_busy():
    assert write_partitions(54 * MB, 128 * MB, 2) == 2
    assert write_partitions(7 * MB, 128 * MB, 2) == 1
    assert write_partitions(1000 * MB, 128 * MB, 4) == 8
    assert write_partitions(0, 128 * MB, 4) == 1


def test_a_cow_merge_sorts_globally_only_when_it_writes_several_files_of_a_small_part_of_the_mirror():
    spread_everywhere = MergeShape(None, 8, 8, 54 * MB, 54 * MB)
    assert cow_write(spread_everywhere, 128 * MB, 2) == CowWrite(True, 2, False)
    one_file = MergeShape((("9", "99"),), 2, 8, 7 * MB, 54 * MB)  # newest keys: one small rewrite
    assert cow_write(one_file, 128 * MB, 2) == CowWrite(True, 1, True)
    several = MergeShape((("a", "c"), ("x", "z")), 20, 100, 3000 * MB, 10_000 * MB)
    assert cow_write(several, 128 * MB, 32) == CowWrite(False, None, True)  # range: new files stay apart


def test_a_partitioned_mirror_always_searches_for_the_files_a_change_touches():
    """Key metrics say every file may hold a change (a bucket of the key, or a date beside spread
    keys), but partition values and the search rule most of them out: it is never skipped there."""
    every_file = MergeShape((("0", "z"),), touched=16, files=16, touched_bytes=16 * MB, bytes=16 * MB)
    assert cow_write(every_file, 128 * MB, 2, partitioned=True) == CowWrite(False, None, True)
    assert cow_write(every_file, 128 * MB, 2, partitioned=False).find_files is False


def test_partition_values_of_a_spec_of_the_key_alone():
    assert key_partition_sql([("bucket[16]", "_olake_id")], "lake") == ["`lake`.system.bucket(16, `_olake_id`)"]
    assert key_partition_sql([("truncate[4]", "_olake_id"), ("identity", "_olake_id")], "my`cat") == [
        "`my``cat`.system.truncate(4, `_olake_id`)", "`_olake_id`"]


@pytest.mark.parametrize("terms", [
    [("day", "created")],  # a key's duplicate rows may sit in two dates
    [("bucket[16]", "_olake_id"), ("identity", "region")],
    [("void", "_olake_id")],
    [],
])
def test_no_partition_values_when_a_key_does_not_decide_its_partition(terms):
    assert key_partition_sql(terms, "lake") is None


def test_a_small_mirror_whose_every_file_may_change_is_rewritten_whole():
    one = MergeShape((("0", "9"),), touched=1, files=1, touched_bytes=4096, bytes=4096)
    assert rewrites_whole(one, partitioned=False, keys=10, most_keys=20_000)
    assert not rewrites_whole(one, partitioned=True, keys=10, most_keys=20_000)  # its partitions are written apart
    assert not rewrites_whole(one, partitioned=False, keys=20_001, most_keys=20_000)  # too many keys to list
    some = MergeShape((("0", "4"),), touched=1, files=2, touched_bytes=4096, bytes=8192)
    assert not rewrites_whole(some, partitioned=False, keys=10, most_keys=20_000)  # a file is carried over
    big = MergeShape((("0", "9"),), touched=2, files=2, touched_bytes=64 << 20, bytes=64 << 20)
    assert not rewrites_whole(big, partitioned=False, keys=10, most_keys=20_000)  # more than one file's worth
    assert not rewrites_whole(MergeShape((), 0, 0), partitioned=False, keys=10, most_keys=20_000)  # nothing to rewrite


def test_a_partitioned_mirror_counts_its_touched_files_only_for_a_change_of_many_keys_a_file():
    every = MergeShape((("0", "9"),), touched=10, files=10, touched_bytes=10 << 20, bytes=10 << 20)
    assert counts_touched_files(every, partitioned=True, keys=80, most_keys=20_000)
    assert not counts_touched_files(every, partitioned=True, keys=79, most_keys=20_000)  # some file likely untouched
    assert not counts_touched_files(every, partitioned=False, keys=80, most_keys=20_000)  # metrics decide there
    assert not counts_touched_files(every, partitioned=True, keys=20_001, most_keys=20_000)  # too many to list
    some = MergeShape((("0", "4"),), touched=9, files=10, touched_bytes=9 << 20, bytes=10 << 20)
    assert not counts_touched_files(some, partitioned=True, keys=800, most_keys=20_000)  # metrics rule a file out
    assert not counts_touched_files(MergeShape((), 0, 0), partitioned=True, keys=80, most_keys=20_000)


def test_a_dv_merge_lists_its_keys_only_while_few_files_read_the_list():
    few = MergeShape((("0", "9"),), touched=8, files=8, touched_bytes=55 << 20, bytes=55 << 20)
    assert lists_keys(few, keys=5_000, most_keys=20_000)  # 40,000 key-files: the list spares the shuffle
    many = MergeShape((("0", "f"),), touched=600, files=600, touched_bytes=60 << 20, bytes=60 << 20)
    assert not lists_keys(many, keys=5_000, most_keys=20_000)  # each of 600 files would bind 5,000 keys
    assert lists_keys(many, keys=2_500, most_keys=20_000)  # 1,500,000: still within the budget
    assert not lists_keys(few, keys=20_001, most_keys=20_000)  # too many keys to list at all
    assert not lists_keys(MergeShape((), 0, 8), keys=10, most_keys=20_000)  # no file can hold a change
    assert not lists_keys(few, keys=0, most_keys=20_000)  # nothing to list


def test_neighbouring_intervals_join_unless_an_untouched_file_lies_between_them():
    # a fresh mirror of range files, every one touched: one interval, as few comparisons a row as can be
    ranges = [FileBounds(f"r{i}", f"{i:x}0", f"{i:x}f") for i in range(16)]
    assert merge_shape(ranges, [f"{i:x}7" for i in range(16)]).intervals == (("00", "ff"),)
    # an untouched file wholly between two touched ones keeps them apart; one reaching into a touched
    # file's range does not (it is scanned either way), nor does one touching a bound
    apart = ranges[:3] + [FileBounds("mid", "30", "3f")] + ranges[4:6]
    shape = merge_shape(apart, ["05", "15", "25", "45", "55"])
    assert shape.intervals == (("00", "2f"), ("40", "5f")) and (shape.touched, shape.files) == (5, 6)
    reaching = [FileBounds("a", "10", "20"), FileBounds("b", "15", "45"), FileBounds("edge", "20", "30"),
                FileBounds("edge2", "45", "50"), FileBounds("d", "50", "60")]
    assert merge_shape(reaching, ["12", "55"]).intervals == (("10", "60"),)  # b reaches into a; nothing lies between
    assert merge_shape(reaching + [FileBounds("between", "41", "49")], ["12", "55"]).intervals == \
        (("10", "20"), ("50", "60"))
    # without the other files nothing but overlaps joins
    assert merge_intervals([("a", "b"), ("c", "d")]) == (("a", "b"), ("c", "d"))
    assert merge_intervals([("a", "b"), ("c", "d")], others=[]) == (("a", "d"),)


def _kept(intervals, files):
    """The files a predicate of key intervals keeps, as Iceberg prunes by bounds: those reaching into one."""
    return {f.path for f in files if any(lo <= f.hi and f.lo <= hi for lo, hi in intervals)}


def test_the_predicate_keeps_every_file_that_may_hold_a_changed_key():
    # A file the predicate prunes is carried over unmerged: missing one would lose changes.
    rng = random.Random(7)
    for _ in range(500):
        files = []
        for i in range(rng.randint(1, 12)):
            lo, hi = sorted(f"{rng.randint(0, 999):03d}" for _ in range(2))
            files.append(FileBounds(f"f{i}", lo, hi, rng.randint(1, 100)))
        keys = [f"{rng.randint(0, 999):03d}" for _ in range(rng.randint(1, 20))]
        shape = merge_shape(files, keys)
        holding = {f.path for f in files if any(f.lo <= k <= f.hi for k in keys)}
        assert shape.intervals is not None and shape.touched == len(holding)
        assert holding <= _kept(shape.intervals, files)
        held = [k for k in keys if any(f.lo <= k <= f.hi for f in files)]  # a key no file holds matches no row
        assert all(any(lo <= k <= hi for lo, hi in shape.intervals) for k in held)
