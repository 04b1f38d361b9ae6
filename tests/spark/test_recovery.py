"""Failures injected at each step of a cycle, then a rerun: the mirror must end up right."""
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest
from testkit.local import mirror_problems

from olake_cow.core.audit import ChangeCounts
from olake_cow.spark import iceberg, merge, mirror_table

pytestmark = [pytest.mark.spark]


class Crash(RuntimeError):
    pass


def setup(lake):
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", [{"_olake_id": str(i), "v": i} for i in range(20)])
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100},
                             {"_olake_id": "2", "_op_type": "d"}], pure_deletes=["3"])


def crash(monkeypatch, cls, name, when="after"):
    """Make `cls.name` raise, before doing its work or after it."""
    real = getattr(cls, name)

    def wrapper(self, *a, **kw):
        if when == "after":
            real(self, *a, **kw)
        raise Crash(f"injected crash {when} {name}")

    monkeypatch.setattr(cls, name, wrapper)


def run_crashing(lake, monkeypatch, cls, name, when="after"):
    """One job run with `cls.name` crashing: the run must report failure (exit 1)."""
    with monkeypatch.context() as m:
        crash(m, cls, name, when)
        assert lake.run() == 1


@pytest.mark.parametrize("where", [
    ("before", merge.MirrorWriter, "stage"),
    ("after", merge.MirrorWriter, "stage"),
    ("after", iceberg.IcebergTables, "publish"),
    ("after", mirror_table.MirrorTable, "prepare"),
], ids=lambda w: f"{w[0]}-{w[2]}")
def test_rerun_after_a_crash_finishes_the_cycle(lake, monkeypatch, where):
    when, cls, name = where
    setup(lake)
    run_crashing(lake, monkeypatch, cls, name, when)
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    assert lake.run() == 0  # and then it is idle
    lake.assert_mirror_matches("t")


def test_rerun_after_a_crash_after_the_truncate_merges_the_closed_change_set(tlake, monkeypatch):
    lake = tlake
    setup(lake)
    run_crashing(lake, monkeypatch, iceberg.IcebergTables, "truncate")
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    assert lake.run() == 0  # and then it is idle
    lake.assert_mirror_matches("t")


def test_crash_between_truncate_and_merge_with_new_commits_in_between(tlake, monkeypatch):
    lake = tlake
    setup(lake)
    run_crashing(lake, monkeypatch, iceberg.IcebergTables, "truncate")
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 101}], pure_deletes=["4"])
    run_crashing(lake, monkeypatch, iceberg.IcebergTables, "truncate")
    lake.writer.commit("t", [{"_olake_id": "5", "_op_type": "d"}])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")


def test_staged_merge_that_cannot_be_fast_forwarded_is_redone(lake, monkeypatch):
    setup(lake)
    run_crashing(lake, monkeypatch, merge.MirrorWriter, "stage")
    staged = [s for s in lake.mirror("t").snapshots if s.snapshot_id != lake.mirror("t").current_id
              and "wap.id" in s.summary]
    # a maintenance commit moves the mirror on: the staged merge can no longer be fast-forwarded
    lake.writer.spark.sql(f"CALL {lake.catalog}.system.rewrite_data_files(table => "
                          f"'{lake.cow_ns}.t_cow', options => map('rewrite-all', 'true'))")
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    from olake_cow.core.snapshots import ancestors

    published = {s.snapshot_id for s in ancestors(lake.mirror("t"))[0]}
    assert staged and not {s.snapshot_id for s in staged} & published


def test_audit_failure_publishes_nothing(hlake, monkeypatch):
    setup(hlake)
    before = hlake.mirror("t").current_id
    real = merge.MirrorWriter.tally

    def miscounted(self, frame, staged, fmt):  # the change set claims one upsert more than the merge wrote
        counts, held = real(self, frame, staged, fmt)
        return ChangeCounts(counts.upserts + 1, counts.deletes), held

    monkeypatch.setattr(merge.MirrorWriter, "tally", miscounted)
    assert hlake.run() == 1
    assert hlake.mirror("t").current_id == before
    monkeypatch.undo()
    assert hlake.run() == 0
    hlake.assert_mirror_matches("t")


def test_a_merge_that_stages_nothing_is_refused(hlake, monkeypatch):
    """A write that commits nothing must not advance the checkpoint past its change set."""
    setup(hlake)
    before = hlake.mirror("t")
    monkeypatch.setattr(merge.MirrorWriter, "stage", lambda self, *a, **kw: None)
    assert hlake.run() == 1
    after = hlake.mirror("t")
    assert after.current_id == before.current_id
    assert after.properties.get("olake-cow.checkpoint") == before.properties.get("olake-cow.checkpoint")
    monkeypatch.undo()
    assert hlake.run() == 0
    hlake.assert_mirror_matches("t")


@pytest.mark.slow
def test_random_sigkills_during_runs_lose_nothing(hlake):
    """The real command line in a subprocess, killed at random moments, then run to the end."""
    sigkill_cycles(hlake)


@pytest.mark.slow
def test_random_sigkills_during_runs_lose_nothing_in_a_dv_mirror(spark, destinations, make_lake):
    sigkill_cycles(make_lake(destinations["hadoop"], "hadoop", "readonly", "dv"))


def sigkill_cycles(lake):
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", [{"_olake_id": str(i), "v": i} for i in range(200)])
    rng = random.Random(int(os.environ.get("OLAKE_COW_SEED", "11")))
    cmd = command(lake)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(["emr_job", "."]))
    kills = 0
    for cycle in range(3):
        keys = rng.sample(range(200), 12)
        lake.writer.commit("t", [{"_olake_id": str(k), "_op_type": "u", "v": cycle * 1000 + k} for k in keys[:8]]
                           + [{"_olake_id": str(k), "_op_type": "d"} for k in keys[8:10]],
                           pure_deletes=[str(k) for k in keys[10:]])
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        time.sleep(rng.uniform(6, 16))
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the Python driver and its JVM at once
            kills += 1
        proc.wait()
    assert subprocess.run(cmd, env=env, capture_output=True).returncode == 0
    lake.assert_mirror_matches("t")
    print(f"kills: {kills}")


def command(lake, *extra):
    fmt = ["--mirror-format", lake.fmt] if lake.fmt != "cow" else []
    return [sys.executable, os.path.join("emr_job", "main.py"), "--destination-details", lake.dest_path,
            "--source-namespace", lake.ns, "--quiet", "--source-mode", lake.mode, *fmt, "--spark-conf",
            "spark.sql.shuffle.partitions=2", *extra]


class Writer(threading.Thread):
    """OLake committing a small batch about every half second until told to stop: it never stops
    on its own, so a run that waits for a quiet source never ends."""

    def __init__(self, lake, table="t", start=1000):
        super().__init__(daemon=True)
        self.lake, self.table, self.n = lake, table, start
        self.stop, self.commits, self.errors = threading.Event(), 0, []

    def run(self):
        rng = random.Random(5)
        while not self.stop.is_set():
            try:
                keys = rng.sample(range(100), 6)
                n = self.n
                self.lake.writer.commit(self.table, [{"_olake_id": str(k), "_op_type": "u", "v": n + k}
                                                     for k in keys[:3]]
                                        + [{"_olake_id": str(n), "_op_type": "c", "v": n},
                                           {"_olake_id": str(keys[3]), "_op_type": "d"}],
                                        pure_deletes=[str(keys[4])])
                self.commits += 1
                self.n += 1
            except Exception as exc:  # noqa: BLE001 - reported by the test
                self.errors.append(repr(exc))
                return
            self.stop.wait(0.5)


def held_source_snapshot(lake, table="t"):
    """The source snapshot whose content the mirror holds (truncate mode: the boundary's parent)."""
    from olake_cow.core.checkpoint import find_checkpoint

    checkpoint = find_checkpoint(lake.mirror(table))
    if lake.mode == "readonly":
        return checkpoint.snapshot_id
    return lake.source(table).snapshot(checkpoint.snapshot_id).parent_id


@pytest.mark.slow
def test_runs_end_while_the_writer_never_stops(lake):
    """OLake keeps committing during every run: each run still exits (it merges what was committed
    before it started), and the mirror equals the model at the source snapshot it holds."""
    lake.writer.remember = True
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", [{"_olake_id": str(i), "v": i} for i in range(100)])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(["emr_job", "."]))
    writer = Writer(lake)
    writer.start()
    try:
        for _ in range(2):
            started = time.monotonic()
            done = subprocess.run(command(lake), env=env, capture_output=True, timeout=240)
            assert done.returncode == 0, done.stderr.decode()[-2000:]
            held = held_source_snapshot(lake)
            expected = lake.writer.expected_at("t", held)
            assert expected is not None, f"the mirror holds source snapshot {held}, not one the writer made"
            _, problems = mirror_problems(lake.writer.spark, lake.mirror_q("t"), lake.mirror("t"), expected)
            assert not problems, "\n".join(problems)
            print(f"run took {time.monotonic() - started:.1f} s with {writer.commits} commits so far")
    finally:
        writer.stop.set()
        writer.join()
    assert not writer.errors, writer.errors
    assert writer.commits >= 4
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
