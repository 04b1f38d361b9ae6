"""Maintenance on real Spark + Iceberg: the mirror stays equal to the resolved source, later runs
neither replay nor lose change sets, unmerged change sets survive any source retention, and
storage really shrinks."""
import json
import os
import time

import pytest

from olake_cow.core.changesource import for_mode
from olake_cow.core.identity import foreign_change
from olake_cow.core.maintenance import (
    COMPACTED_PROPERTY,
    MANIFESTS_PROPERTY,
    MaintenanceOptions,
    commits_since_manifest_rewrite,
    maintenance_due,
)
from olake_cow.core.modes import resolve_mode
from olake_cow.spark import boundary
from testkit.faults import run_crashing
from testkit.lakes import rows

pytestmark = [pytest.mark.spark]


def data_files(lake, ns, table):
    root = os.path.join(lake.dest["writer"]["iceberg_s3_path"].replace("file://", ""), ns, table, "data")
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".parquet")}


def run_with_summary(lake, tmp_path, *args):
    path = str(tmp_path / f"summary-{len(os.listdir(tmp_path))}.json")
    # Source expiry and orphan removal are maintenance the user asks for on the source: they change
    # its metadata in any mode (its data stays in readonly mode, which the tests check).
    touches_source = {"--expire-source-older-than", "--remove-orphans-older-than"} & set(args)
    run = lake.run_raw if touches_source else lake.run
    code = run("--summary-out", path, "--source-mode", lake.mode, *args)
    with open(path, encoding="utf-8") as f:
        return code, json.load(f)


def mirrored(lake, n, partition_by=()):
    """Table `t` of `n` rows, and its mirror's first build."""
    lake.writer.create_table("t", [("v", "int"), ("s", "string")], partition_by=partition_by)
    lake.writer.backfill("t", rows(0, n))
    assert lake.run() == 0


def due_now(lake, asked):
    """What the trigger's check (maintenance_due) finds due on the table now, as the Lambda asks it."""
    source, mirror = lake.source("t"), lake.mirror("t")
    floor = for_mode(resolve_mode(source, mirror, None, f"{lake.cow_ns}.t_cow")).expiry_floor(source, mirror)
    return maintenance_due(asked, source, mirror, floor, int(time.time() * 1000), dv=lake.fmt == "dv")


@pytest.mark.spark_only("maintenance runs on the Spark engine")
def test_maintenance_frees_storage_and_keeps_the_mirror_right(lake, tmp_path):
    mirrored(lake, 30)
    for n in range(3):
        lake.writer.commit("t", [{"_olake_id": str(n), "_op_type": "u", "v": 100 + n},
                                 {"_olake_id": str(40 + n), "_op_type": "c", "v": 40 + n},
                                 {"_olake_id": str(10 + n), "_op_type": "d"}], pure_deletes=[str(20 + n)])
        assert lake.run() == 0
    source_before = data_files(lake, lake.ns, "t")
    mirror_before = data_files(lake, lake.cow_ns, "t_cow")
    current_before = lake.source("t").current_id
    code, summary = run_with_summary(lake, tmp_path, "--expire-source-older-than", "0",
                                     "--expire-mirror-older-than", "0", "--compact-files", "--rewrite-manifests")
    assert code == 0, summary
    m = summary["tables"][0]["maintenance"]
    assert m["snapshots_expired"] > 0 and m["files_removed"] > 0 and m["bytes_removed"] > 0  # both tables
    assert any("clamped" in note for note in m["notes"])
    source_after = data_files(lake, lake.ns, "t")
    mirror_after = data_files(lake, lake.cow_ns, "t_cow")
    assert len(mirror_after) < len(mirror_before)
    if lake.mode == "truncate":  # truncated change sets are freed by expiry
        assert len(source_after) < len(source_before)
    else:  # a readonly mirror never removes the source's data, nor its current snapshot
        assert source_after == source_before
        assert lake.source("t").current_id == current_before
    lake.assert_mirror_matches("t")
    # Everything asked for was done: the trigger's check finds none of it due any more.
    asked = MaintenanceOptions(expire_source_hours=0, expire_mirror_hours=0, compact_files=True, rewrite_manifests=True)
    assert due_now(lake, asked) == []
    # The job's own maintenance commits are its own: no later run takes them for someone else's change
    # (that would rebuild the mirror at every run, with rows still right).
    assert foreign_change(lake.mirror("t")) is None
    # a later incremental run still works
    lake.writer.commit("t", [{"_olake_id": "5", "_op_type": "u", "v": 555}, {"_olake_id": "6", "_op_type": "d"}])
    code, summary = run_with_summary(lake, tmp_path)
    assert code == 0, summary
    assert summary["tables"][0]["merges"] == 1, (summary, lake.source("t"), lake.mirror("t"))
    assert summary["tables"][0]["repaired"] == 0
    lake.assert_mirror_matches("t")


def test_source_expiry_never_removes_an_unmerged_change_set(tlake, monkeypatch, tmp_path):
    lake = tlake
    mirrored(lake, 20)
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100}, {"_olake_id": "2", "_op_type": "d"}],
                       pure_deletes=["3"])
    run_crashing(lake, monkeypatch, boundary, "close_change_set")  # closed but not merged
    code, summary = run_with_summary(lake, tmp_path, "--maintenance-only", "--expire-source-older-than", "0")
    assert code == 0, summary
    assert summary["tables"][0]["status"] == "maintained"
    assert summary["tables"][0]["maintenance"]["snapshots_expired"] > 0
    assert lake.run() == 0  # the unmerged change set is still there to merge
    lake.assert_mirror_matches("t")


def test_orphan_files_are_listed_by_dry_run_then_removed(rlake, tmp_path):
    lake = rlake
    mirrored(lake, 10)
    some_dir = os.path.dirname(sorted(data_files(lake, lake.cow_ns, "t_cow"))[0])
    orphan = os.path.join(some_dir, "00000-orphan-from-a-dead-writer.parquet")
    with open(orphan, "wb") as f:
        f.write(b"PAR1 not really")
    os.utime(orphan, (1_000_000_000, 1_000_000_000))  # 2001: older than any safe age
    # A user's file beside the mirror's own folders, as old: never the mirror's to remove.
    mine = os.path.join(os.path.dirname(some_dir.split("/data")[0] + "/data"), "keep", "mine.parquet")
    os.makedirs(os.path.dirname(mine))
    with open(mine, "wb") as f:
        f.write(b"PAR1 mine")
    os.utime(mine, (1_000_000_000, 1_000_000_000))
    code, summary = run_with_summary(lake, tmp_path, "--maintenance-only", "--remove-orphans-older-than", "24",
                                     "--orphans-dry-run")
    assert code == 0, summary
    assert [p for p in summary["tables"][0]["maintenance"]["orphan_files"] if p.endswith(os.path.basename(orphan))]
    assert os.path.exists(orphan)
    assert not [p for p in summary["tables"][0]["maintenance"]["orphan_files"] if p.endswith("mine.parquet")]
    code, summary = run_with_summary(lake, tmp_path, "--maintenance-only", "--remove-orphans-older-than", "24")
    assert code == 0 and not os.path.exists(orphan)
    assert open(mine, "rb").read() == b"PAR1 mine"
    lake.assert_mirror_matches("t")


@pytest.mark.parametrize("args, why", [
    (["--orphans-dry-run"], "--orphans-dry-run needs --remove-orphans-older-than"),
    (["--expire-source-older-than", "-1"], "must be a number of hours from 0 to"),
    (["--maintenance-only"], "needs at least one maintenance option"),
])
def test_bad_maintenance_options_are_refused(rlake, capsys, args, why):
    assert rlake.run(*args) == 2
    assert why in capsys.readouterr().err


def _scattered(lake):
    """The mirror of 400 rows scattered over many small files; returns a count of its live files."""
    mirrored(lake, 400)
    # Scatter the mirror over many small files (same rows), as many small merges would: written and
    # published the way the job publishes (staged under its checkpoint's marker, fast-forwarded, and
    # recorded as the snapshot published), so the job takes it for its own commit.
    spark = lake.writer.spark
    marker = lake.mirror("t").properties["olake-cow.data-checkpoint"]
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    spark.conf.set("spark.sql.shuffle.partitions", "8")
    spark.conf.set("spark.wap.id", marker)
    try:
        from pyspark.sql.functions import lit

        spark.table(lake.mirror_q("t")).repartition(8).writeTo(lake.mirror_q("t")).overwrite(lit(True))
    finally:
        for key in ("spark.sql.adaptive.enabled", "spark.sql.shuffle.partitions", "spark.wap.id"):
            spark.conf.unset(key)
    mirror = lake.mirror("t")
    [staged] = [s for s in mirror.snapshots if s.summary.get("wap.id") == marker and s.parent_id == mirror.current_id]
    spark.sql(f"CALL {lake.catalog}.system.cherrypick_snapshot('{lake.cow_ns}.t_cow', {staged.snapshot_id})")
    spark.sql(f"ALTER TABLE {lake.mirror_q('t')} SET TBLPROPERTIES ('olake-cow.data-snapshot'='{staged.snapshot_id}')")
    return lambda: spark.sql(f"SELECT count(*) FROM {lake.mirror_q('t')}.files").collect()[0][0]


def test_compaction_merges_small_files_and_keeps_rows(rlake, tmp_path):
    lake = rlake
    live = _scattered(lake)
    before = live()
    assert before >= 4
    lake.writer.commit("t", [{"_olake_id": "7", "_op_type": "u", "v": 777}, {"_olake_id": "8", "_op_type": "d"}])
    code, summary = run_with_summary(lake, tmp_path, "--compact-files")
    assert code == 0, summary
    assert summary["tables"][0]["merges"] == 1
    assert summary["tables"][0]["maintenance"]["files_compacted"] >= before - 1
    assert live() < before / 2
    lake.assert_mirror_matches("t")


def test_compaction_alone_writes_what_every_reader_reads_whatever_a_user_set(rlake, tmp_path):
    """A maintenance-only compaction (no merge to reset them first) on a mirror whose data file format
    and codec someone set to what pyiceberg or DuckDB cannot read: they are reset before it rewrites,
    and every reader reads the result (the other format's write modes, which do not steer a rewrite,
    wait for the next merge)."""
    lake = rlake
    live = _scattered(lake)
    before = live()
    other = "copy-on-write" if lake.fmt == "dv" else "merge-on-read"
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} SET TBLPROPERTIES ('write.format.default'='avro', "
                          f"'write.parquet.compression-codec'='lz4', 'write.delete.mode'='{other}')")
    code, summary = run_with_summary(lake, tmp_path, "--maintenance-only", "--compact-files")
    assert code == 0, summary
    assert summary["tables"][0]["maintenance"]["files_compacted"] >= before - 1
    props = lake.mirror("t").properties
    assert (props["write.format.default"], props["write.parquet.compression-codec"]) == ("parquet", "zstd")
    assert props["write.delete.mode"] == other  # reset by the next merge, before it writes
    lake.assert_mirror_matches("t")


def test_a_partitioned_mirror_compaction_cannot_join_is_not_due_again_until_files_are_added(rlake, tmp_path):
    # One small file per bucket: compaction joins files only within a partition, so it has nothing to
    # do, and a periodic trigger that still found it due would start an EMR run for nothing each time.
    lake = rlake
    mirrored(lake, 200, partition_by=["bucket(4, _olake_id)"])
    due = lambda: due_now(lake, MaintenanceOptions(compact_files=True))  # noqa: E731
    files = lambda: lake.mirror("t").snapshot(lake.mirror("t").current_id).summary_int("total-data-files")  # noqa: E731
    assert files() == 4 and due() == ["compact_files"]  # small on average, never compacted
    code, summary = run_with_summary(lake, tmp_path, "--compact-files")
    assert code == 0, summary
    assert summary["tables"][0]["maintenance"]["files_compacted"] == 0
    assert lake.mirror("t").properties[COMPACTED_PROPERTY] == "4"
    assert due() == []
    # New keys in every bucket: the merges add files there.
    for n in range(3):
        lake.writer.commit("t", [{"_olake_id": str(1000 + 10 * n + k), "_op_type": "c", "v": k} for k in range(8)])
        lake.writer.commit("t", [{"_olake_id": str(3 * n + 1), "_op_type": "d"}])
        assert lake.run() == 0
    assert files() >= 6 and due() == ["compact_files"]
    code, summary = run_with_summary(lake, tmp_path, "--compact-files")
    assert code == 0 and summary["tables"][0]["maintenance"]["files_compacted"] >= 6, summary
    assert files() == 4 and lake.mirror("t").properties[COMPACTED_PROPERTY] == "4" and due() == []
    lake.assert_mirror_matches("t")


def test_a_manifest_rewrite_with_nothing_to_rewrite_still_restarts_the_count_to_the_next(rlake, tmp_path):
    # A mirror of one manifest: Iceberg's rewrite commits nothing, so no snapshot says it ran, and
    # the due rule (50 commits since the last rewrite) would stay met at every schedule.
    lake = rlake
    mirrored(lake, 50)
    before = lake.mirror("t")
    code, summary = run_with_summary(lake, tmp_path, "--rewrite-manifests")
    assert code == 0 and summary["tables"][0]["maintenance"]["manifests_rewritten"] == 0, summary
    after = lake.mirror("t")
    assert after.current_id == before.current_id  # nothing committed but the record
    assert after.properties[MANIFESTS_PROPERTY] == str(after.current_id)
    assert commits_since_manifest_rewrite(after) == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100}])
    assert lake.run() == 0
    assert commits_since_manifest_rewrite(lake.mirror("t")) == 1
    lake.assert_mirror_matches("t")


def test_a_tag_on_an_old_source_snapshot_neither_goes_nor_keeps_expiry_due(rlake, tmp_path):
    # Iceberg's expiry keeps a snapshot a tag points at; the due rule must know it, or a user's tag
    # would start a run for nothing at every schedule.
    lake = rlake
    mirrored(lake, 20)
    for n in range(2):
        lake.writer.commit("t", [{"_olake_id": str(n), "_op_type": "u", "v": 100 + n}])
    assert lake.run() == 0
    first = min(lake.source("t").snapshots, key=lambda s: s.timestamp_ms).snapshot_id
    lake.writer.spark.sql(f"ALTER TABLE {lake.writer.q('t')} CREATE TAG `before_migration` AS OF VERSION {first}")
    code, summary = run_with_summary(lake, tmp_path, "--expire-source-older-than", "0")
    assert code == 0 and summary["tables"][0]["maintenance"]["snapshots_expired"] > 0, summary
    source = lake.source("t")
    assert first in source.by_id() and source.referenced >= {first, source.current_id}
    assert due_now(lake, MaintenanceOptions(expire_source_hours=0)) == []
    lake.assert_mirror_matches("t")
