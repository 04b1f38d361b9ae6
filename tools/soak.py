"""`make soak`: many cycles of OLake-like CDC batches against a JDBC catalog on a real PostgreSQL
server, with job runs (the real command line, in a subprocess) killed by SIGKILL at random
moments or just after one of their first three commits (half of them), two runs started at once,
runs while the writer keeps committing (it never stops on its own: the run must end by itself),
runs with mirror maintenance, and another tool rewriting the source's files now and then.
Each variant (a source mode and a mirror format: readonly or truncate, cow or dv) gets its own
namespace and the same plan.

After every completed run each mirror is compared with the resolved source at the source snapshot
the mirror holds, computed independently by the writer's model (testkit/model.py) and read back by
Spark, pyiceberg (which refuses equality deletes), DuckDB and iceberg-rust. Prints the figures and
writes them as JSON. Exit 0 only with 0 mismatches and 0 failed runs.

    .venv/bin/python tools/soak.py --seed 20261121   # what CI runs: all four variants (minutes each)
    .venv/bin/python tools/soak.py --kills 26 --concurrent 10 --out docs/soak.json   # all four variants
"""
import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from olake_cow.core.checkpoint import find_checkpoint  # noqa: E402
from olake_cow.core.identifiers import qualified  # noqa: E402
from olake_cow.core.modes import Engine, SourceMode  # noqa: E402
from olake_cow.core.planner import plan_next  # noqa: E402
from olake_cow.core.steps import Advance, Done, Merge, Publish, Truncate  # noqa: E402
from olake_cow.spark.catalog import IcebergCatalog  # noqa: E402
from testkit import pg  # noqa: E402
from testkit.local import fresh_state, local_session, mirror_problems, write_destination, writer_session  # noqa: E402
from testkit.olake_writer import OlakeWriter  # noqa: E402

MAINTENANCE = ["--expire-source-older-than", "0", "--expire-mirror-older-than", "0", "--compact-files",
               "--rewrite-manifests"]


# Where a killed run left each table: nothing committed yet, or what the planner says comes next.
KILL_MOMENTS = {
    SourceMode.TRUNCATE: {None: "before any commit", Merge: "truncated, not merged",
                          Publish: "merge staged, not published", Truncate: "between cycles",
                          Done: "checkpointed (maintenance or exit)"},
    SourceMode.READONLY: {None: "before any commit", Merge: "mirror created or evolved, not merged",
                          Publish: "merge staged, not published", Advance: "checkpointed (maintenance or exit)",
                          Done: "checkpointed (maintenance or exit)"},
}
ALL_VARIANTS = "readonly:cow,truncate:cow,readonly:dv,truncate:dv"


def variants(text: str) -> List[Tuple[SourceMode, str]]:
    """'readonly:dv,truncate:cow' -> [(readonly, dv), (truncate, cow)]; argparse error on anything else."""
    out = []
    for item in [v.strip() for v in text.split(",") if v.strip()]:
        mode, _, fmt = item.partition(":")
        if mode not in ("readonly", "truncate") or fmt not in ("cow", "dv"):
            raise argparse.ArgumentTypeError(f"{item!r} is not <readonly|truncate>:<cow|dv>")
        out.append((SourceMode(mode), fmt))
    if not out:
        raise argparse.ArgumentTypeError("no variant given")
    return out


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="soak", description=__doc__.split("\n\n")[0])
    p.add_argument("--kills", type=int, default=4,
                   help="job runs to kill with SIGKILL (default 4); a run that finishes before its kill "
                        "moment counts as completed and another run is killed instead")
    p.add_argument("--concurrent", type=int, default=2,
                   help="job runs with the writer committing meanwhile (default 2)")
    p.add_argument("--twins", type=int, default=1,
                   help="times two job runs are started at once on the namespace (default 1)")
    p.add_argument("--tables", type=int, default=2, help="tables in the namespace (default 2)")
    p.add_argument("--rows", type=int, default=300, help="rows per table after the backfill (default 300)")
    p.add_argument("--change-fraction", type=float, default=0.05, help="keys touched per batch (default 0.05)")
    p.add_argument("--maintenance-every", type=int, default=3,
                   help="every Nth quiet completed run also maintains the tables (default 3; 0 = never)")
    p.add_argument("--variants", type=variants, default=variants(ALL_VARIANTS), metavar="MODE:FORMAT,...",
                   help=f"source mode and mirror format of each soak, one after the other (default {ALL_VARIANTS})")
    p.add_argument("--rewrite-chance", type=float, default=0.15,
                   help="chance per action that another tool rewrites a source table's files (default 0.15)")
    p.add_argument("--engine", choices=[e.value for e in Engine], default=Engine.SPARK.value,
                   help="the job's --engine (auto: the python engine merges what it serves, Spark the rest)")
    p.add_argument("--seed", type=int, default=int(time.time()), help="random seed (printed; reruns are alike)")
    p.add_argument("--out", metavar="PATH", help="write the figures as JSON here")
    p.add_argument("--keep", action="store_true", help="keep the work folder (warehouse, logs)")
    return p.parse_args(argv)


class Soak:
    def __init__(self, args: argparse.Namespace, work: str, server: "pg.PostgresServer", mode: SourceMode,
                 fmt: str) -> None:
        self.args, self.work, self.mode, self.fmt = args, work, mode, fmt
        self.rng = random.Random(args.seed)
        self.ns = f"soak_{args.seed}_{fmt}_{mode.value}"  # not ending in _cow: that names a mirror namespace
        self.cow_ns = self.ns + "_cow"
        dest = {"type": "ICEBERG", "writer": {
            "catalog_type": "jdbc", "catalog_name": "soak", "jdbc_url": server.jdbc_url,
            "jdbc_username": "iceberg", "jdbc_password": "soak-Secret-1",
            "iceberg_s3_path": "file://" + os.path.join(work, "warehouse")}}
        self.dest_path = write_destination(os.path.join(work, "destination.json"), dest)
        root, cfg = local_session(dest)
        self.writer = OlakeWriter(writer_session(root, cfg), "soak", self.ns)
        self.reader = writer_session(root, cfg)
        self.tables = [f"t{i}" for i in range(args.tables)]
        self.history: Dict[str, Dict[int, List[Dict[str, Any]]]] = {t: {} for t in self.tables}
        self.lock = threading.Lock()
        self.next_key = {t: args.rows for t in self.tables}
        self.extra_cols: Dict[str, List[str]] = {t: [] for t in self.tables}
        self.widened: set = set()
        self.figures: Dict[str, Any] = {
            "seed": args.seed, "tables": args.tables, "rows": args.rows, "runs_completed": 0,
            "runs_killed": 0, "kills_after_a_commit": 0, "twin_runs": 0, "runs_finished_before_kill": 0,
            "runs_with_concurrent_writer": 0,
            "concurrent_commits": 0, "commits": 0, "schema_changes": 0, "maintenance_runs": 0,
            "checks": 0, "rows_checked": 0, "mismatches": 0, "failed_runs": 0, "run_seconds": [],
            "kill_after_seconds": [], "failures": [], "source_mode": mode.value, "source_rewrites": 0,
            "source_rewrites_refused": 0,
            "concurrent_run_seconds": [], "mirror_format": fmt, "engine": args.engine,
            "tables_merged_by": {"spark": 0, "python": 0},
            "killed_at": {label: 0 for label in dict.fromkeys(KILL_MOMENTS[mode].values())}}
        self.quiet_runs, self.launches = 0, -1
        # truncate mode: boundary -> the writer's snapshot whose content the mirror holds at it
        self.held_at: Dict[int, int] = {}
        import psycopg2  # the kills that wait for a commit watch the catalog's table of tables

        self.pg = psycopg2.connect(host="127.0.0.1", port=server.port, user="iceberg", dbname="iceberg")
        self.pg.autocommit = True

    # --- the OLake side ---------------------------------------------------------------------
    def setup(self) -> None:
        for t in self.tables:
            self.writer.create_table(t, [("v", "int"), ("s", "string")])
            rows = [{"_olake_id": str(i), "v": i, "s": f"r{i}"} for i in range(self.args.rows)]
            self.writer.backfill(t, rows, chunk=max(1, self.args.rows // 3))
            self._remember(t, self._current(t))

    def _current(self, table: str) -> int:
        return int(self.writer.tables.load(self.ns, table).currentSnapshot().snapshotId())

    def _remember(self, table: str, snapshot_id: int) -> None:
        with self.lock:
            self.history[table][snapshot_id] = [dict(r) for r in self.writer.model(table).expected()]

    def batch(self, table: str) -> None:
        """One OLake commit: inserts, updates, tombstones, pure deletes, sometimes a key twice."""
        rng, model = self.rng, self.writer.model(table)
        live = [k for k, r in model.rows.items() if r.get("_op_type") != "d"]
        n = max(4, int(len(live) * self.args.change_fraction))
        touched = rng.sample(live, min(n, len(live)))
        rows, pure = [], []
        for k in touched:
            roll = rng.random()
            if roll < 0.55:
                rows.append(self._row(table, k, "u"))
            elif roll < 0.75:
                rows.append({"_olake_id": k, "_op_type": "d"})
            else:
                pure.append(k)
        for _ in range(max(1, n // 3)):
            rows.append(self._row(table, str(self.next_key[table]), "c"))
            self.next_key[table] += 1
        dedupe = True
        if rows and rng.random() < 0.3:  # the same key twice in one commit
            twice = rng.choice([r for r in rows if r["_op_type"] != "d"] or rows)
            rows.append(self._row(table, twice["_olake_id"], "u"))
            dedupe = rng.random() < 0.5  # OLake #1189: without position deletes
        snap = self.writer.commit(table, rows, pure_deletes=pure, dedupe=dedupe)
        if snap is not None:
            self._remember(table, snap)
            self.figures["commits"] += 1

    def _row(self, table: str, key: str, op: str) -> Dict[str, Any]:
        row = {"_olake_id": key, "_op_type": op, "v": self.rng.randint(0, 10**6), "s": f"{op}{key}"}
        for col in self.extra_cols[table]:
            if self.rng.random() < 0.7:
                row[col] = f"{col}-{key}"
        return row

    def rewrite_source(self, table: str) -> None:
        """Another tool (OLake Fusion, a Glue optimizer) compacts the source's files."""
        try:
            snapshot_id = self.writer.rewrite_files(table)
        except Exception as exc:
            if self.mode != SourceMode.TRUNCATE or not _is_commit_conflict(exc):
                raise
            self.figures["source_rewrites_refused"] += 1  # as a compactor, it tries again later
            return
        if snapshot_id is not None:
            self._remember(table, snapshot_id)
        self.figures["source_rewrites"] += 1

    def schema_change(self, table: str) -> None:
        """A column added, or `v` widened from int to bigint (once)."""
        if table not in self.widened and self.rng.random() < 0.5:
            self.writer.widen_column(table, "v", "bigint")
            self.widened.add(table)
        else:
            col = f"c{len(self.extra_cols[table]) + 1}"
            self.writer.add_column(table, col, "string")
            self.extra_cols[table].append(col)
        self.figures["schema_changes"] += 1

    # --- the job side -------------------------------------------------------------------------
    def command(self, summary: str, maintenance: bool) -> List[str]:
        cmd = [sys.executable, os.path.join(ROOT, "emr_job", "main.py"), "--destination-details", self.dest_path,
               "--source-namespace", self.ns, "--quiet", "--parallelism", "2", "--summary-out", summary,
               "--source-mode", self.mode.value, "--mirror-format", self.fmt,
               "--spark-conf", "spark.sql.shuffle.partitions=2", "--engine", self.args.engine]
        return cmd + (MAINTENANCE if maintenance else [])

    def launch(self, maintenance: bool) -> subprocess.Popen:
        n = self.launches = self.launches + 1
        summary = os.path.join(self.work, "summaries", f"run-{n:04d}.json")
        os.makedirs(os.path.dirname(summary), exist_ok=True)
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "emr_job"), OLAKE_COW_DRIVER_MEMORY="1g")
        log = open(os.path.join(self.work, "summaries", f"run-{n:04d}.log"), "wb")
        proc = subprocess.Popen(self.command(summary, maintenance), env=env, stdout=log, stderr=log,
                                start_new_session=True)
        proc.log, proc.summary = log, summary  # type: ignore[attr-defined]
        return proc

    def maintains(self) -> bool:
        """Whether runs may ask for maintenance (never with --engine python, which refuses it)."""
        return self.args.maintenance_every > 0 and self.args.engine != Engine.PYTHON.value

    def typical_run_s(self) -> float:
        runs = self.figures["run_seconds"]
        return statistics.median(runs) if runs else 20.0

    def killed_run(self, attempts: int = 5) -> None:
        """Kill one run at a random moment, or (half the kills) just after one of its first commits.
        A run that finishes first is checked like any other and the next attempt (after a new
        batch) is killed sooner, so `--kills` counts real kills."""
        for attempt in range(attempts):
            if attempt:
                self.batch(self.rng.choice(self.tables))
            maintenance = self.maintains() and self.rng.random() < 0.3
            on_commit = self.rng.random() < 0.5
            before, marks = self._states(), self._catalog_marks()
            proc = self.launch(maintenance)
            # A python-engine run lasts about a second: its kills land from a fifth of it on.
            soonest = min(1.0, 0.2 * self.typical_run_s())
            after = self.rng.uniform(soonest, max(soonest + 0.5, self.typical_run_s() * 0.9 / (attempt + 1)))
            started = time.monotonic()
            # Every table has a change on a first attempt, one on a retry: a run commits at least
            # once a table (a python-engine merge is one commit).
            commits = min(self.rng.choice((1, 1, 2, 3)), len(self.tables) if not attempt else 1)
            if self._await_kill(proc, started, after, marks if on_commit else None, commits):
                os.killpg(proc.pid, signal.SIGKILL)  # the Python driver and its JVM at once
                proc.wait()
                proc.log.close()  # type: ignore[attr-defined]
                self.figures["runs_killed"] += 1
                self.figures["kills_after_a_commit"] += int(on_commit)
                self.figures["kill_after_seconds"].append(round(time.monotonic() - started, 2))
                self._record_kill_moment(before)
                return
            self._finished(proc, started, maintenance=maintenance)
            self.figures["runs_finished_before_kill"] += 1
        self._failure(f"no run could be killed in {attempts} attempts")

    def _await_kill(self, proc: subprocess.Popen, started: float, after: float,
                    marks: Optional[Dict[Tuple[str, str], str]], commits: int) -> bool:
        """Wait for the moment to kill `proc`: `after` seconds from `started`, or with the catalog's
        `marks` from before the run, a random 0-50 ms after the catalog has changed `commits` times
        (a truncate, a mirror's creation, a staged merge, a publish; a run that commits fewer times
        is killed at three typical runs). False: the run ended first."""
        deadline = started + (3 * self.typical_run_s() if marks is not None else after)
        delay = self.rng.uniform(0, 0.05)
        while proc.poll() is None:
            now = self._catalog_marks() if marks is not None else marks
            if now != marks:
                commits, marks = commits - 1, now
                if not commits:
                    time.sleep(delay)
                    return proc.poll() is None
            if time.monotonic() >= deadline:
                return True
            time.sleep(0.005)
        return False

    def _catalog_marks(self) -> Dict[Tuple[str, str], str]:
        """Each table's metadata location in the JDBC catalog (a commit changes it), from PostgreSQL."""
        with self.pg.cursor() as cur:
            cur.execute("SELECT table_namespace, table_name, metadata_location FROM iceberg_tables "
                        "WHERE catalog_name = %s AND table_namespace IN (%s, %s)", ("soak", self.ns, self.cow_ns))
            return {(ns, t): loc for ns, t, loc in cur.fetchall()}

    def _states(self) -> Dict[str, tuple]:
        return {t: (self._fresh(self.ns, t), self._fresh(self.cow_ns, f"{t}_cow")) for t in self.tables}

    def _record_kill_moment(self, before: Dict[str, tuple]) -> None:
        for t, (source, mirror) in self._states().items():
            moved = (source.metadata_location, mirror.metadata_location) != tuple(
                s.metadata_location for s in before[t])
            step = plan_next(source, mirror, self.mode) if moved else None
            label = KILL_MOMENTS[self.mode].get(type(step) if step is not None else None, "blocked")
            self.figures["killed_at"][label] = self.figures["killed_at"].get(label, 0) + 1

    def completed_run(self, concurrent: bool = False) -> None:
        if not concurrent:
            self.quiet_runs += 1
        maintenance = (not concurrent and self.maintains()
                       and self.quiet_runs % self.args.maintenance_every == 0)
        started = time.monotonic()
        proc = self.launch(maintenance)
        stop, errors = threading.Event(), []
        thread = None
        if concurrent:
            def write() -> None:
                while not stop.is_set():
                    try:
                        table = self.rng.choice(self.tables)
                        self.batch(table)
                        self.figures["concurrent_commits"] += 1
                        if self.rng.random() < self.args.rewrite_chance / 3:
                            self.rewrite_source(table)  # another tool compacts during the run
                    except Exception as exc:  # noqa: BLE001 - reported as a failure
                        errors.append(repr(exc))
                        return
                    stop.wait(self.rng.uniform(0.2, 1.5))
            thread = threading.Thread(target=write)
            thread.start()
        try:
            code = proc.wait(timeout=900)
        finally:
            stop.set()
            if thread:
                thread.join()
        self._finished(proc, started, code, maintenance)
        if errors:
            self._failure(f"concurrent writer failed: {errors[0]}")
        if concurrent:
            self.figures["runs_with_concurrent_writer"] += 1
            self.figures["concurrent_run_seconds"].append(round(time.monotonic() - started, 2))

    def twin_runs(self) -> None:
        """Two runs of the job started at once on the namespace (a user's beside the schedule's, or
        two deployments on one source): each must end by itself with exit 0, and the mirrors must
        equal the model after them (a change set merged twice, or lost, is a mismatch)."""
        started = time.monotonic()
        procs = [self.launch(False), self.launch(False)]
        codes = [proc.wait(timeout=900) for proc in procs]
        for proc, code in zip(procs, codes):
            self._finished(proc, started, code, check=False)
        self.check()  # both have ended: one check sees what they left
        self.figures["twin_runs"] += 1

    def _finished(self, proc: subprocess.Popen, started: float, code: Optional[int] = None,
                  maintenance: bool = False, check: bool = True) -> None:
        proc.log.close()  # type: ignore[attr-defined]
        code = proc.returncode if code is None else code
        self.figures["run_seconds"].append(round(time.monotonic() - started, 2))
        if code != 0:
            self.figures["failed_runs"] += 1
            self._failure(f"run exited {code}; see {proc.log.name}")  # type: ignore[attr-defined]
            return
        self.figures["runs_completed"] += 1
        self.figures["maintenance_runs"] += int(maintenance)
        self._read_summary(proc.summary)  # type: ignore[attr-defined]
        if check:
            self.check()

    def _read_summary(self, summary: str) -> None:
        """Which engine merged each table of a completed run (--engine auto: both take part). A
        repair is a failure: nobody but the job writes the mirrors here, so a rebuild "of someone's
        change" would be the job mistaking its own commits (or a kill's leftovers) for another's."""
        try:
            with open(summary, encoding="utf-8") as f:
                tables = json.load(f).get("tables") or []
        except (OSError, ValueError):
            return
        for t in tables:
            if t.get("repaired"):
                self._failure(f"{t.get('table')}: repaired, but nobody else writes the mirror: {t.get('notes')}")
            if t.get("status") == "merged":
                merged_by = self.figures["tables_merged_by"]
                merged_by[t.get("engine", "spark")] = merged_by.get(t.get("engine", "spark"), 0) + 1

    # --- the check ------------------------------------------------------------------------------
    def check(self) -> None:
        for t in self.tables:
            mirror = self._fresh(self.cow_ns, f"{t}_cow")
            source = self._fresh(self.ns, t)
            checkpoint = find_checkpoint(mirror)
            held = self._held(source, checkpoint)
            if held is None:
                self._failure(f"{t}: mirror has no checkpoint in the source after a completed run")
                continue
            with self.lock:
                expected_rows = self.history[t].get(held)
            if expected_rows is None:
                self._failure(f"{t}: the mirror holds source snapshot {held}, which follows no known writer commit")
                continue
            if checkpoint is not None:
                self.held_at[checkpoint.snapshot_id] = held  # for when maintenance expired what led to it
            compared, problems = mirror_problems(self.reader, qualified("soak", self.cow_ns, f"{t}_cow"), mirror,
                                                 expected_rows, self.fmt)
            self.figures["rows_checked"] += compared
            for problem in problems:
                self.figures["mismatches"] += 1
                self._failure(f"{t}: {problem}")
            self.figures["checks"] += 1

    def _held(self, source, checkpoint) -> Optional[int]:
        """The source snapshot whose content the mirror holds (truncate mode: the boundary's parent)."""
        if checkpoint is None:
            return None
        if self.mode == SourceMode.READONLY:
            return checkpoint.snapshot_id
        if checkpoint.snapshot_id in self.held_at:  # resolved by an earlier check
            return self.held_at[checkpoint.snapshot_id]
        boundary = source.snapshot(checkpoint.snapshot_id)
        if boundary is None:
            return None
        held = boundary.parent_id
        snap = source.snapshot(held) if held is not None else None
        # A boundary on a boundary closed an empty change set: two runs at once truncated, and
        # Iceberg retried the second's truncate on the first's (spark/boundary.py).
        while snap is not None and snap.is_boundary and snap.parent_id is not None:
            held, snap = snap.parent_id, source.snapshot(snap.parent_id)
        return held

    def _fresh(self, ns: str, table: str):
        return fresh_state(IcebergCatalog(self.reader, "soak"), ns, table)

    def _failure(self, text: str) -> None:
        print(f"  FAILURE: {text}", flush=True)
        self.figures["failures"].append(text)

    # --- the plan ---------------------------------------------------------------------------------
    def run(self) -> Dict[str, Any]:
        started = time.monotonic()
        self.setup()
        self.completed_run()
        plan = ["kill"] * self.args.kills + ["concurrent"] * self.args.concurrent + ["twins"] * self.args.twins
        self.rng.shuffle(plan)
        for i, action in enumerate(plan, 1):
            for t in self.tables:
                if self.rng.random() < 0.08:
                    self.schema_change(t)
                self.batch(t)
                if self.rng.random() < self.args.rewrite_chance:
                    self.rewrite_source(t)
            if action == "concurrent":
                self.completed_run(concurrent=True)
            elif action == "twins":
                self.twin_runs()
            else:
                self.killed_run()
                if self.rng.random() < 0.25 or i == len(plan) or plan[i] != "kill":
                    self.completed_run()
            f = self.figures
            print(f"[{self.mode.value}:{self.fmt} {i}/{len(plan)}] {action:<10} completed={f['runs_completed']} "
                  f"killed={f['runs_killed']} "
                  f"concurrent_commits={f['concurrent_commits']} rows_checked={f['rows_checked']} "
                  f"mismatches={f['mismatches']} failed={f['failed_runs']} "
                  f"({time.monotonic() - started:.0f} s)", flush=True)
        self.completed_run()  # a last quiet run: everything committed so far is in the mirrors
        self.pg.close()
        self.figures["seconds"] = round(time.monotonic() - started, 1)
        return self.figures


def _is_commit_conflict(exc: BaseException) -> bool:
    """Iceberg refused a commit because a concurrent one changed what it read (the files it rewrites
    were truncated meanwhile): what a compactor meets beside a truncate-mode job."""
    text = str(exc)
    return any(name in text for name in ("ValidationException", "CommitFailedException"))


def _spread(values: List[float]) -> str:
    if not values:
        return "-"
    return f"{min(values):.1f} s / {statistics.median(values):.1f} s / {max(values):.1f} s after start"


def report(f: Dict[str, Any]) -> str:
    runs = f["run_seconds"]
    return "\n".join([
        f"soak figures, {f['source_mode']} mode, {f['mirror_format']} mirror",
        f"  seed                        {f['seed']}",
        f"  tables x rows               {f['tables']} x {f['rows']}",
        f"  OLake commits               {f['commits']} (schema changes {f['schema_changes']})",
        f"  job runs completed          {f['runs_completed']} (with maintenance {f['maintenance_runs']})",
        f"  job runs killed (SIGKILL)   {f['runs_killed']} ({f['kills_after_a_commit']} just after a commit; "
        f"+{f['runs_finished_before_kill']} finished first)",
        f"  kill moments min/median/max {_spread(f['kill_after_seconds'])}",
        "  tables left by the kills     " + ", ".join(f"{label} {n}" for label, n in f["killed_at"].items()),
        f"  runs under a writer         {f['runs_with_concurrent_writer']} ({f['concurrent_commits']} commits "
        f"during them; each run {_spread(f['concurrent_run_seconds']).replace(' after start', '')})",
        f"  two runs at once            {f['twin_runs']} (both must exit 0)",
        f"  source rewrites (other tool) {f['source_rewrites']} (+{f['source_rewrites_refused']} refused by a "
        "conflicting commit)",
        f"  mirror checks               {f['checks']} ({f['rows_checked']} rows compared: Spark, pyiceberg, DuckDB, "
        "iceberg-rust)",
        f"  mismatches                  {f['mismatches']}",
        f"  failed runs                 {f['failed_runs']}",
        f"  run time median / max       {statistics.median(runs) if runs else 0:.1f} s / {max(runs or [0]):.1f} s",
        f"  total time                  {f['seconds']:.0f} s",
        *(f"  FAILURE: {text}" for text in f["failures"]),
    ])


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    why = pg.available()
    if why:
        print(f"soak: {why}", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="olake-cow-soak-")
    print(f"soak: seed {args.seed}, {args.kills} kills, {args.concurrent} concurrent-writer runs, "
          f"{args.tables} tables x {args.rows} rows; work folder {work}", flush=True)
    server = pg.PostgresServer().start()
    results = {}
    try:
        for mode, fmt in args.variants:
            results[f"{mode.value}:{fmt}"] = Soak(args, work, server, mode, fmt).run()
    finally:
        server.stop()
    command = "tools/soak.py " + " ".join(argv if argv is not None else sys.argv[1:])
    for figures in results.values():
        print(report(figures))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"command": command, "modes": results}, f, indent=2)
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    ok = all(f["mismatches"] == 0 and f["failed_runs"] == 0 and not f["failures"] for f in results.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
