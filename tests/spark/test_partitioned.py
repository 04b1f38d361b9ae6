"""A merge into a partitioned mirror rewrites only the files that hold a changed key. In a mirror
partitioned by a bucket of the key, or by a date beside spread (MD5) keys, every file's key range
spans nearly all keys, so key metrics alone cannot rule a file out; partition values and Spark's
search for the touched files must. Counted from the run's summary (files rewritten), in both mirror
formats (dv rewrites no data file at all). How a partitioned mirror is written does not depend on
how its source is read: these run in readonly mode, except the move between partitions, which reads
OLake's partitioned deletes in both source modes (test_mirror runs partitioned mirrors in both too)."""
import datetime as dt
import hashlib

import pytest
from tests.spark.conftest import FORMATS, MODES, _lake

from testkit.lakes import summary_of
from testkit.olake_writer import parquet_column

pytestmark = [pytest.mark.spark]


@pytest.fixture(params=[(m, f) for m in MODES for f in FORMATS], ids=lambda p: f"{p[0]}-{p[1]}")
def every_lake(request, spark, destinations, tmp_root):
    """Every source mode x every mirror format."""
    return _lake(request, spark, destinations, tmp_root, mode=request.param[0], fmt=request.param[1])


def md5(i):
    return hashlib.md5(f"{i}|order".encode()).hexdigest()


def test_a_small_change_rewrites_only_its_buckets_files(rlake):
    w = rlake.writer
    w.create_table("t", [("v", "int")], partition_by=["bucket(16, _olake_id)"])
    w.backfill("t", [{"_olake_id": str(i), "v": i} for i in range(3000)])
    first = summary_of(rlake)
    assert first["files_written"] >= 16
    changed = ["7", "1500", "2999"]
    w.commit("t", [{"_olake_id": k, "_op_type": "u", "v": -1} for k in changed])
    run = summary_of(rlake)
    assert run["status"] == "merged"
    assert run["files_rewritten"] <= len(changed), run  # at most one file per changed key's bucket
    rlake.assert_mirror_matches("t")


def test_a_small_change_rewrites_only_its_dates_files_with_spread_keys(rlake):
    w = rlake.writer
    w.create_table("t", [("v", "int"), ("d", "date")], partition_by=["d"])
    day = dt.date(2026, 11, 1)
    w.backfill("t", [{"_olake_id": md5(i), "v": i, "d": day + dt.timedelta(days=i % 10)} for i in range(2000)])
    summary_of(rlake)
    changed = [md5(3), md5(1234)]  # days 3 and 4
    w.commit("t", [{"_olake_id": k, "_op_type": "u", "v": -1, "d": day + dt.timedelta(days=n % 10)}
                   for k, n in zip(changed, (3, 1234))])
    run = summary_of(rlake)
    assert run["status"] == "merged"
    assert run["files_rewritten"] <= len(changed), run
    rlake.assert_mirror_matches("t")


def test_a_first_build_writes_each_partition_once(rlake):
    """A partitioned mirror's first build is written by partition: a file or two per date (Spark may
    split a date's rows by the target size), not one per date in every key range's task (a source
    of a few MB, 1 MB files: four ranges, 48 files before)."""
    w = rlake.writer
    w.create_table("t", [("v", "int"), ("d", "date"), ("note", "string")], partition_by=["d"])
    day = dt.date(2026, 11, 1)
    w.backfill("t", [{"_olake_id": md5(i), "v": i, "d": day + dt.timedelta(days=i % 12),
                      "note": hashlib.sha256(str(i).encode()).hexdigest()} for i in range(60_000)])
    run = summary_of(rlake, "--target-file-size-mb", "1")
    assert run["status"] == "merged"
    assert 12 <= run["files_written"] <= 2 * 12, run
    rlake.assert_mirror_matches("t")


def test_a_change_that_moves_a_row_to_another_partition_applies_to_its_key(every_lake):
    """OLake's writers put an equality delete in the partition of the record carrying the change,
    so Iceberg, which applies it only there, still shows the row in its old partition. The mirror
    holds one row per key, the newest (and `--verify` agrees)."""
    rlake = every_lake
    w = rlake.writer
    w.deletes_in = "record"
    w.create_table("t", [("v", "int"), ("region", "string")], partition_by=["region"])
    w.backfill("t", [{"_olake_id": str(i), "v": i, "region": "eu"} for i in range(20)])
    assert rlake.run() == 0
    w.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "region": "us"},
                   {"_olake_id": "2", "_op_type": "d", "v": None, "region": None}])  # no before-image
    if rlake.mode == "readonly":  # (truncate mode's first run removed the old rows from the source)
        stale = w.spark.sql(f"SELECT v FROM {w.q('t')} WHERE _olake_id IN ('1', '2')").collect()
        assert sorted(r[0] for r in stale if r[0] is not None) == [1, 2, 100]  # Iceberg keeps the old rows
    assert rlake.run() == 0
    rlake.assert_mirror_matches("t")
    if rlake.mode == "readonly":  # --verify compares a readonly mirror with its source
        assert rlake.run("--verify") == 0


@pytest.mark.parametrize("spec", ["bucket(4, _olake_id)", "truncate(_olake_id, 2)"])
def test_a_first_build_of_a_key_partitioned_source_writes_each_partition_once_in_key_order(rlake, spec):
    """A spec of the key alone is built with one shuffle by partition (one row per key and the write
    by partition in one): still one row per key when the source shows two rows of a key (OLake
    #1189), one file per partition, each in the mirror's key order."""
    w = rlake.writer
    w.create_table("t", [("v", "int")], partition_by=[spec])
    w.backfill("t", [{"_olake_id": str(i), "v": i} for i in range(2000)])
    w.commit("t", [{"_olake_id": "30", "_op_type": "u", "v": 1}, {"_olake_id": "30", "_op_type": "u", "v": 2},
                   {"_olake_id": "5000", "_op_type": "c", "v": 3}, {"_olake_id": "5000", "_op_type": "u", "v": 4}],
             dedupe=False)
    run = summary_of(rlake)
    assert run["status"] == "merged"
    rlake.assert_mirror_matches("t")
    files = w.spark.sql(f"SELECT file_path, partition FROM {rlake.mirror_q('t')}.files WHERE content = 0").collect()
    assert len({str(f["partition"]) for f in files}) == len(files), files  # one file per partition
    for f in files:  # read by pyarrow: a Spark job per file of ~110 cost 20 s
        keys = parquet_column(f["file_path"], "_olake_id")
        assert keys == sorted(keys), f["file_path"]


def changed_everywhere(w, keys):
    """A change to every one of `keys` (given as key -> date or None): updates, a delete of every
    tenth, an insert beside each tenth."""
    rows = []
    for n, (k, d) in enumerate(keys):
        extra = {"d": d} if d is not None else {}
        deleted = n % 10 == 0
        rows.append({"_olake_id": k, "_op_type": "d" if deleted else "u", "v": None if deleted else -n, **extra})
        if n % 10 == 5:
            rows.append({"_olake_id": f"new{n}", "_op_type": "c", "v": n, **extra})
    w.commit("t", rows)


def test_a_change_to_every_file_of_a_partitioned_mirror_rewrites_it_whole_and_exactly(rlake, monkeypatch):
    """A change that touches every file of a partitioned cow mirror (counted first) is written as the
    mirror's rows less the changed keys plus the upserts, by partition (writes.py WholeRewriteWrite),
    where the MERGE would shuffle the whole mirror twice: still exactly the resolved rows, one file
    per partition, every file replaced."""
    from olake_cow.spark import writes

    w = rlake.writer
    w.create_table("t", [("v", "int")], partition_by=["bucket(4, _olake_id)"])
    w.backfill("t", [{"_olake_id": str(i), "v": i} for i in range(400)])
    built = summary_of(rlake)
    calls = []
    real = writes.WholeRewriteWrite.write
    monkeypatch.setattr(writes.WholeRewriteWrite, "write",
                        lambda self, cs: calls.append(self.to.partitioned) or real(self, cs))
    changed_everywhere(w, [(str(i), None) for i in range(0, 400, 3)])  # 134 keys: every bucket's
    run = summary_of(rlake)
    assert run["status"] == "merged"
    rlake.assert_mirror_matches("t")
    if rlake.fmt == "cow":
        assert calls == [True]
        assert run["files_rewritten"] == built["files_written"], run
        files = w.spark.sql(f"SELECT partition FROM {rlake.mirror_q('t')}.files WHERE content = 0").collect()
        assert len({str(f["partition"]) for f in files}) == len(files) == 4, files
    else:
        assert calls == []  # dv rewrites no data file


def test_a_large_change_that_leaves_a_partition_untouched_rewrites_only_the_others(rlake):
    """A change of many keys in all dates but one, with spread keys (every file's key range holds
    some): the count finds a file no key reaches, so the MERGE runs and leaves that file as it is."""
    w = rlake.writer
    w.create_table("t", [("v", "int"), ("d", "date")], partition_by=["d"])
    day = dt.date(2026, 11, 1)
    w.backfill("t", [{"_olake_id": md5(i), "v": i, "d": day + dt.timedelta(days=i % 5)} for i in range(1000)])
    built = summary_of(rlake)
    assert built["files_written"] == 5, built
    changed_everywhere(w, [(md5(i), day + dt.timedelta(days=i % 5)) for i in range(1000) if i % 5 != 4][:200])
    run = summary_of(rlake)
    assert run["status"] == "merged"
    rlake.assert_mirror_matches("t")
    if rlake.fmt == "cow":
        assert run["files_rewritten"] == 4, run  # the fifth date holds no changed key
