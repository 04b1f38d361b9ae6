"""`make bench`: every run timed as EMR Serverless runs it, a new process (a new JVM) each time.

Each mirror run, each run of OLake's published script and each plain copy is its own process; its
figure is the process's wall time minus a bare Spark start (a process that only starts the same
Spark session), measured the same way. Data is set up in this process's own session, not timed.

Tiers (`--tiers`, each runnable alone; results are kept per tier in docs/bench-cold.json):
  single       one table of --rows (1M) rows: decimal keys with recent changes, MD5 keys with
               uniform changes; full load and --cycles CDC cycles of --changes keys
  partitioned  the same on partitioned sources: bucket(16, _olake_id) with recent decimal keys,
               and a day partition of `created` with uniform MD5 keys
  fleet        namespaces of --fleet (40, 200) tables of 200 rows: first build, nothing changed,
               one table changed (and that table's run alone), 10% changed, every table changed
               (with the script: about 13 minutes at 40 tables, 42 at 200)
  large        the single tier at --large-rows (16M) rows (not for CI: about 95 minutes)

Systems: cow and dv (the job, readonly mode), script (OLake's published script, --script PATH,
on its own copy of each source: it truncates its source), copy (CREATE TABLE AS SELECT of the
resolved source, with its partition spec: the floor of a full load). Writes docs/bench-cold.json
and the cold section of docs/BENCHMARKS.md.

Locally every process is one JVM doing both the driver's and the executors' work, with the job's
short-run driver options (C1 only). On EMR Serverless the executors are JVMs of their own with the
job's executor options (core/jvm.py: C2 for what runs long). --executor-memory 8g runs each process
that way (Spark's local-cluster master: one worker, an executor JVM of that memory; the script's
executors on Java's defaults) and stores its tiers apart (<tier>_executors).

    .venv/bin/python bench/cold.py --script ../shared/seeds/000_3cdcd90d80e3b70c.txt
    .venv/bin/python bench/cold.py --tiers fleet --fleet 40 --script ...
    .venv/bin/python bench/cold.py --tiers single,large --executor-memory 8g --script ...
    .venv/bin/python bench/cold.py --quick       # small sizes: checks the harness
"""
import argparse
import datetime as dt
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from typing import Any, Dict, List, Optional, Sequence, Tuple

from bench import ROOT

CATALOG = "bench"
COLUMNS = [("v", "int"), ("amount", "double"), ("status", "string"), ("note", "string"), ("qty", "bigint"),
           ("created", "timestamp"), ("customer", "string"), ("address", "string")]
TIERS = ("single", "partitioned", "fleet", "large")
REPEATS = 3  # a fleet's short runs, each the median of this many
# OLake's script: as it is run (a stock JVM) and with the job's JVM settings; the namespace suffix of its copy
SCRIPT_NS = {"script": "_s", "script_tuned": "_st"}
EPOCH_S = 1_700_000_000
SPACING_S = 5  # row i was created at EPOCH_S + i * SPACING_S: 1M rows span 58 days
MARK_START, MARK_END = "<!-- bench:cold -->", "<!-- /bench:cold -->"
RESULTS = os.path.join(ROOT, "docs", "bench-cold.json")
EXECUTORS = "_executors"  # the stored tier of a run with --executor-memory
# A child's master and executor memory (--executor-memory), read in the child: bench settings, not the job's
MASTER_ENV, EXECUTOR_MEMORY_ENV = "OLAKE_COW_BENCH_MASTER", "OLAKE_COW_BENCH_EXECUTOR_MEMORY"


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench.cold", description=__doc__.split("\n\n")[0])
    p.add_argument("--tiers", default="single,partitioned,fleet,large", help="tiers to run (default all)")
    p.add_argument("--rows", type=int, default=1_000_000, help="rows of the single and partitioned tables")
    p.add_argument("--large-rows", type=int, default=16_000_000, help="rows of the large tier's tables")
    p.add_argument("--changes", type=int, default=5_000, help="keys changed per CDC cycle (default 5,000)")
    p.add_argument("--recent", type=int, default=100_000, help="'recent' changes: among this many newest keys")
    p.add_argument("--cycles", type=int, default=3, help="CDC cycles per workload (default 3)")
    p.add_argument("--fleet", default="40,200", help="fleet sizes, tables per namespace (default 40,200)")
    p.add_argument("--fleet-rows", type=int, default=200, help="rows per fleet table (default 200)")
    p.add_argument("--systems", default="cow,dv,script,script_tuned,copy",
                   help="what to measure (default all; script_tuned: the script with the job's JVM settings)")
    p.add_argument("--script", metavar="PATH", help="OLake's published script (its blog text or a .py copy)")
    p.add_argument("--starts", type=int, default=3, help="bare Spark starts to measure (median; default 3)")
    p.add_argument("--memory", default="6g", help="driver memory of every process (default 6g)")
    p.add_argument("--java-options", default="", metavar="OPTS",
                   help="JVM options of every process: '' the job's short-run defaults (core/jvm.py), 'none' none")
    p.add_argument("--executor-memory", default="", metavar="MEM",
                   help="run the data work in an executor JVM of its own with this much memory (e.g. 8g; "
                        "Spark's local-cluster master, one worker of every core), with the job's executor options "
                        "(the script's on Java's defaults), while the driver keeps the job's settings; its tiers "
                        "are stored as <tier>" + EXECUTORS + " (default: one JVM, local[*])")
    p.add_argument("--class-archive", default="train", metavar="train|none|PATH",
                   help="driver class archive of every process (core/jvm.py): 'train' one for this bench "
                        "(infra/image/class_archive.py, as the job image does), 'none' none, or an archive's path")
    p.add_argument("--quick", action="store_true", help="small sizes: checks the harness, not the targets")
    p.add_argument("--no-doc", action="store_true", help="do not rewrite docs/BENCHMARKS.md and bench-cold.json")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.large_rows, args.changes, args.recent, args.cycles = 20_000, 40_000, 200, 2_000, 2
        args.fleet, args.fleet_rows, args.starts = "6", 50, 1
    args.tiers = [t for t in args.tiers.split(",") if t]
    args.systems = [s for s in args.systems.split(",") if s and (s not in SCRIPT_NS or args.script)]
    bad = set(args.tiers) - set(TIERS)
    if bad:
        p.error(f"--tiers: unknown {sorted(bad)}; choose from {', '.join(TIERS)}")
    if args.executor_memory:
        if "fleet" in args.tiers:
            p.error("--executor-memory: the fleet tier's runs are the driver's work; measure the single, "
                    "partitioned and large tiers with it")
        try:
            executor_master(args.executor_memory, 1)
        except ValueError as exc:
            p.error(f"--executor-memory: {exc}")
    return args


def executor_master(memory: str, cores: int) -> str:
    """Spark's local-cluster master for one worker of `cores` cores and an executor of `memory`."""
    units = {"m": 1, "g": 1024}
    text = memory.strip().lower()
    if len(text) < 2 or text[-1] not in units or not text[:-1].isdigit() or int(text[:-1]) == 0:
        raise ValueError(f"{memory!r} is not a size such as 8g or 4096m")
    return f"local-cluster[1,{cores},{int(text[:-1]) * units[text[-1]]}]"


def tier_key(tier: str, executors: bool) -> str:
    """Where a tier's figures are stored: runs with an executor JVM apart from one-JVM runs."""
    return tier + (EXECUTORS if executors else "")


def md5_key(i: int) -> str:
    """OLake's key for a composite primary key (id, tenant): MD5 of the values, each followed by '|'."""
    return hashlib.md5(f"{i}|t{i % 7}|".encode()).hexdigest()


def source_frame(spark: Any, rows: int, key: str) -> Any:
    """`rows` OLake-shaped rows (a backfill): keys 0..rows-1 as `key` ("decimal" or "md5") writes them."""
    from pyspark.sql import functions as F

    k = (F.col("id").cast("string") if key == "decimal"
         else F.md5(F.concat(F.col("id").cast("string"), F.lit("|t"), (F.col("id") % 7).cast("string"), F.lit("|"))))
    h = F.sha2(F.col("id").cast("string"), 256)  # row content that compresses like real data
    return spark.range(rows).select(
        k.alias("_olake_id"), (F.rand(1) * 1000).cast("int").alias("v"), (F.rand(2) * 10000).alias("amount"),
        F.element_at(F.array(*[F.lit(s) for s in ("new", "paid", "shipped", "done")]),
                     (F.col("id") % 4 + 1).cast("int")).alias("status"),
        F.concat(F.lit("note "), F.substring(h, 1, 24)).alias("note"),
        (F.rand(3) * 1e9).cast("bigint").alias("qty"),
        F.timestamp_seconds(F.lit(EPOCH_S) + F.col("id") * SPACING_S).alias("created"),
        F.substring(h, 25, 16).alias("customer"),
        F.concat(F.substring(h, 41, 24), F.lit(" street")).alias("address"),
        F.lit("r").alias("_op_type"), F.current_timestamp().alias("_olake_timestamp"),
        F.timestamp_seconds(F.lit(0)).alias("_cdc_timestamp"))


# --- one process per run ----------------------------------------------------------------------------
class Processes:
    """Starts each run as its own Python + JVM process and times it from the outside."""

    def __init__(self, work: str, dest_path: str, memory: str, java_options: str = "", archive: str = "",
                 executor_memory: str = "") -> None:
        self.work, self.dest_path = work, dest_path
        path = [os.path.join(ROOT, "emr_job"), ROOT, os.path.join(ROOT, "scripts")]
        from olake_cow.spark.session import CLASS_ARCHIVE_ENV, EXECUTOR_JAVA_OPTIONS_ENV

        self.env = dict(os.environ, OLAKE_COW_DRIVER_MEMORY=memory, PYTHONPATH=os.pathsep.join(path),
                        OLAKE_COW_DRIVER_JAVA_OPTIONS=java_options, **{CLASS_ARCHIVE_ENV: archive})
        if executor_memory:  # executors are JVMs of their own; Python workers use this Python
            self.env.update({MASTER_ENV: executor_master(executor_memory, os.cpu_count() or 2),
                             EXECUTOR_MEMORY_ENV: executor_memory, "PYSPARK_PYTHON": sys.executable})
        self.executors = bool(executor_memory)
        # OLake's script as it is run: Spark's stock JVMs (no short-run options, no class archive)
        self.stock_env = dict(self.env, OLAKE_COW_DRIVER_JAVA_OPTIONS="none",
                              **{CLASS_ARCHIVE_ENV: "", EXECUTOR_JAVA_OPTIONS_ENV: "none"})
        self.bare_s = self.stock_bare_s = 0.0

    def _run(self, *args: str, stock: bool = False) -> float:
        folder = spark_work() if self.executors else ""
        before = set(os.listdir(folder)) if os.path.isdir(folder) else set()
        t0 = time.monotonic()
        done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", *args],
                              env=self.stock_env if stock else self.env, capture_output=True, text=True)
        wall = time.monotonic() - t0
        if os.path.isdir(folder):
            # A local cluster's executors keep their copy of the jars and their logs under Spark's home
            # (its worker takes no other folder): about 40 MB a process, removed after each.
            for app in set(os.listdir(folder)) - before:
                shutil.rmtree(os.path.join(folder, app), ignore_errors=True)
        if done.returncode != 0:
            raise SystemExit(f"bench: child {args[:3]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
        return wall

    def measure_bare(self, n: int, stock: bool) -> float:
        """The bare start of the job's settings (and of the stock JVM's, for the script, when `stock`)."""
        starts = [self._run("bare", self.dest_path) for _ in range(n)]
        self.bare_s = statistics.median(starts)
        print(f"   bare Spark start: {', '.join(f'{s:.1f}' for s in starts)} s (median {self.bare_s:.1f})", flush=True)
        if stock:
            starts = [self._run("bare", self.dest_path, stock=True) for _ in range(n)]
            self.stock_bare_s = statistics.median(starts)
            print(f"   bare Spark start, stock JVM (the script's): {', '.join(f'{s:.1f}' for s in starts)} s "
                  f"(median {self.stock_bare_s:.1f})", flush=True)
        return self.bare_s

    def job(self, ns: str, *args: str) -> Dict[str, Any]:
        path = os.path.join(self.work, f"summary-{time.monotonic_ns()}.json")
        wall = self._run("job", "--destination-details", self.dest_path, "--source-namespace", ns, "--quiet",
                         "--summary-out", path, *args)
        with open(path, encoding="utf-8") as f:
            summary = json.load(f)
        tables = summary["tables"]
        failed = [t for t in tables if t["status"] in ("failed", "verify_failed")]
        if failed:
            raise SystemExit(f"bench: the job failed on {ns} {args}: {json.dumps(failed[0])[:2000]}")
        return {"s": round(wall - self.bare_s, 2), "wall_s": round(wall, 2), "tables": len(tables),
                "merged": sum(1 for t in tables if t["merges"]),
                "files_read": sum(t["files_read"] for t in tables), "bytes_read": sum(t["bytes_read"] for t in tables),
                "files_rewritten": sum(t["files_rewritten"] for t in tables),
                "files_written": sum(t["files_written"] for t in tables),
                "timings_s": _phases(tables), "verify": [t.get("verify") for t in tables if t.get("verify")]}

    def script(self, script: str, ns: str, tables: Sequence[str], tuned: bool = False) -> Dict[str, Any]:
        """OLake's script on a stock JVM, or (`tuned`) with the job's JVM settings; each minus its own bare start."""
        wall = self._run("script", self.dest_path, script, ns, ",".join(tables), stock=not tuned)
        return {"s": round(wall - (self.bare_s if tuned else self.stock_bare_s), 2), "wall_s": round(wall, 2)}

    def copy(self, ns: str, table: str, partition_by: Sequence[str] = ()) -> Dict[str, Any]:
        wall = self._run("copy", self.dest_path, ns, table, *partition_by)
        return {"s": round(wall - self.bare_s, 2), "wall_s": round(wall, 2)}


def spark_work() -> str:
    """Where a local cluster's worker puts its executors' folders: <Spark's home>/work."""
    import pyspark

    return os.path.join(os.environ.get("SPARK_HOME") or os.path.dirname(os.path.abspath(pyspark.__file__)), "work")


def _phases(tables: Sequence[Dict[str, Any]]) -> Dict[str, float]:
    """The job's own timings (planning, reading_changes, merging, committing, ...) over its tables."""
    out: Dict[str, float] = {}
    for t in tables:
        for phase, secs in (t.get("timings_s") or {}).items():
            out[phase] = round(out.get(phase, 0.0) + secs, 2)
    return out


def child(argv: List[str]) -> int:
    """The body of one timed process."""
    kind, rest = argv[0], argv[1:]
    master = os.environ.get(MASTER_ENV, "")
    executor = {"spark.executor.memory": os.environ.get(EXECUTOR_MEMORY_ENV, "")} if master else {}
    if kind == "job":
        from olake_cow.cli import main as job_main

        return job_main(rest + ([f"--spark-master={master}"] if master else [])
                        + [f"--spark-conf={k}={v}" for k, v in executor.items()])
    from olake_cow.core.config import parse_destination
    from olake_cow.core.identifiers import qualified
    from olake_cow.spark.session import build_session

    with open(rest[0], encoding="utf-8") as f:
        cfg = parse_destination(f.read())
    spark = build_session(cfg, f"bench {kind}", master or None, executor)
    if kind == "copy":
        ns, table, partition_by = rest[1], rest[2], rest[3:]
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.`{ns}_copy`")
        if partition_by:
            # A copy of a partitioned table keeps its spec, as the mirror does, written as Spark
            # writes it by default (as many tasks as cores; the job's own partitioned writes too).
            spark.conf.set("spark.sql.adaptive.coalescePartitions.parallelismFirst", "true")
        spark.sql(f"CREATE OR REPLACE TABLE {qualified(CATALOG, ns + '_copy', table)} USING iceberg"
                  + (f" PARTITIONED BY ({', '.join(partition_by)})" if partition_by else "")
                  + f" AS SELECT * FROM {qualified(CATALOG, ns, table)}")
    elif kind == "script":
        import contextlib
        import io

        from bench.baseline import load

        script, ns, tables = rest[1], rest[2], rest[3].split(",")
        cow_ns = f"{ns}_cow"
        module = load(script, spark, CATALOG, ns, cow_ns, f"{cfg.warehouse}/{cow_ns}")
        module.ensure_namespace_exists(CATALOG, cow_ns)
        with contextlib.redirect_stdout(io.StringIO()):
            for table in tables:  # as the script's own entry point does, table after table
                module.run_compaction_cycle_for_table(f"{CATALOG}.{ns}.{table}")
    return 0


# --- lakes ----------------------------------------------------------------------------------------
class Source:
    """One OLake table with identical copies (one per namespace), the same CDC batches on each."""

    def __init__(self, bench: "Bench", namespaces: Sequence[str], table: str, key: str, skew: str, rows: int,
                 partition_by: Sequence[str] = ()) -> None:
        from testkit.local import writer_session
        from testkit.olake_writer import OlakeWriter

        self.table, self.key, self.skew, self.rows, self.partition_by = table, key, skew, rows, partition_by
        self.rng = random.Random(zlib.crc32(f"{namespaces[0]}.{table}".encode()))
        self.next_id = rows
        self.recent, self.changes = bench.args.recent, bench.args.changes
        self.writers = [OlakeWriter(writer_session(bench.root, bench.cfg), CATALOG, ns) for ns in namespaces]
        self.spark = bench.spark

    def key_of(self, i: int) -> str:
        return str(i) if self.key == "decimal" else md5_key(i)

    def backfill(self) -> None:
        from olake_cow.core.identifiers import qualified

        df = source_frame(self.spark, self.rows, self.key)
        for writer in self.writers:
            writer.create_table(self.table, COLUMNS, partition_by=self.partition_by)
            target = qualified(CATALOG, writer.namespace, self.table)
            (df.sortWithinPartitions("_olake_id") if not self.partition_by else df).writeTo(target).append()

    def cdc_batch(self, changes: Optional[int] = None) -> None:
        """One OLake CDC commit on every copy: 60% updates, 10% tombstones, 10% pure deletes, 20%
        inserts of new keys; `recent` changes pick among the newest keys."""
        size = self.next_id
        lo = max(0, size - self.recent) if self.skew == "recent" else 0
        ids = self.rng.sample(range(lo, size), min(changes or self.changes, size - lo))
        rows, pure = [], []
        for n, i in enumerate(ids):
            kind = n % 10
            if kind < 6:
                rows.append(self._row(i, "u"))
            elif kind < 7 or (kind < 8 and self.partition_by):
                rows.append(self._tombstone(i))
            elif kind < 8:
                pure.append(self.key_of(i))
            else:
                rows.append(self._row(self.next_id, "c"))
                self.next_id += 1
        for writer in self.writers:
            writer.commit(self.table, rows, pure_deletes=pure)

    def _tombstone(self, i: int) -> Dict[str, Any]:
        """A delete. In a partitioned source it carries the row's partition column (a before-image, as
        OLake's delete events from a full replica identity or the binlog do): the writer puts an
        equality delete in the partition of the row it names, and Iceberg applies it only there.
        The bench's backfill bypasses the writer's row model, so a delete without it would land in
        the null partition and remove nothing. Partitioned sources get no pure deletes for that reason."""
        row: Dict[str, Any] = {"_olake_id": self.key_of(i), "_op_type": "d"}
        if self.partition_by:
            row["created"] = dt.datetime.fromtimestamp(EPOCH_S + i * SPACING_S, tz=dt.timezone.utc)
        return row

    def _row(self, i: int, op: str) -> Dict[str, Any]:
        r = self.rng
        return {"_olake_id": self.key_of(i), "_op_type": op, "v": r.randint(0, 999), "amount": r.random() * 1e4,
                "status": "updated", "note": f"changed {r.getrandbits(96):024x}", "qty": i,
                "created": dt.datetime.fromtimestamp(EPOCH_S + i * SPACING_S, tz=dt.timezone.utc),
                "customer": f"{r.getrandbits(64):016x}", "address": f"{r.getrandbits(96):024x} street"}


class Bench:
    def __init__(self, args: argparse.Namespace, work: str) -> None:
        from testkit.local import hadoop_destination, local_session, write_destination, writer_session

        os.environ.setdefault("OLAKE_COW_DRIVER_MEMORY", args.memory)
        self.args, self.work = args, work
        self.warehouse = "file:" + os.path.join(work, "warehouse")  # the script's LOCATION matches the catalog's
        dest = hadoop_destination(self.warehouse, CATALOG)
        self.dest_path = write_destination(os.path.join(work, "destination.json"), dest)
        self.root, self.cfg = local_session(dest, {"spark.sql.shuffle.partitions": "8"})
        self.spark = writer_session(self.root, self.cfg)
        self.procs = Processes(work, self.dest_path, args.memory, args.java_options, self._archive(args, work),
                               args.executor_memory)

    @staticmethod
    def _archive(args: argparse.Namespace, work: str) -> str:
        """The class archive every timed process uses ('' none): trained here before anything is timed."""
        if args.class_archive == "none":
            return ""
        if args.class_archive != "train":
            return os.path.abspath(args.class_archive)
        from infra.image.class_archive import train

        path = os.path.join(work, "driver.jsa")
        print(f"   class archive trained in {train(path):.0f} s (infra/image/class_archive.py)", flush=True)
        return path

    def has(self, system: str) -> bool:
        return system in self.args.systems

    # --- single table (single, partitioned, large) ------------------------------------------------
    def table_workload(self, name: str, key: str, skew: str, rows: int, partition_by: Sequence[str] = ()
                       ) -> Dict[str, Any]:
        print(f"-- {name}: {rows:,} rows, {key} keys, {skew} changes"
              + (f", partitioned by {', '.join(partition_by)}" if partition_by else ""), flush=True)
        namespaces = [name] + [f"{name}{SCRIPT_NS[s]}" for s in SCRIPT_NS if self.has(s)]
        src = Source(self, namespaces, "orders", key, skew, rows, partition_by)
        t0 = time.monotonic()
        src.backfill()
        print(f"   set up in {time.monotonic() - t0:.0f} s", flush=True)
        out: Dict[str, Any] = {"name": name, "rows": rows, "key": key, "skew": skew,
                               "partition_by": list(partition_by), "full_load": {}, "cycles": {}}
        if self.has("copy"):
            out["full_load"]["copy"] = self.procs.copy(name, "orders", partition_by)
        runs = self._systems(name)
        for system, run in runs.items():
            out["full_load"][system] = run()
        print("   full load: " + _line(out["full_load"]), flush=True)
        for c in range(self.args.cycles):
            src.cdc_batch()
            results = {system: run() for system, run in runs.items()}
            for system, r in results.items():
                out["cycles"].setdefault(system, []).append(r)
            print(f"   cycle {c + 1}: " + _line(results), flush=True)
        out["incremental_s"] = {s: round(statistics.median(r["s"] for r in rs), 2) for s, rs in out["cycles"].items()}
        out["rewritten"] = {s: statistics.median(r.get("files_rewritten", 0) for r in rs)
                            for s, rs in out["cycles"].items()}
        for fmt in ("cow", "dv"):
            if self.has(fmt):
                found = self.procs.job(name, "--cow-namespace", f"{name}_{fmt}", "--verify")["verify"]
                if not found or not all(v.get("ok") for v in found):
                    raise SystemExit(f"bench: the {fmt} mirror of {name} differs from its source: {found}")
        return out

    def _systems(self, ns: str) -> Dict[str, Any]:
        runs: Dict[str, Any] = {}
        for fmt in ("cow", "dv"):
            if self.has(fmt):
                runs[fmt] = lambda fmt=fmt: self.procs.job(ns, "--cow-namespace", f"{ns}_{fmt}", "--source-mode",
                                                           "readonly", "--mirror-format", fmt)
        for system, suffix in SCRIPT_NS.items():  # each on its own copy: the script truncates its source
            if self.has(system):
                runs[system] = lambda suffix=suffix, tuned=system != "script": self.procs.script(
                    self.args.script, f"{ns}{suffix}", ["orders"], tuned)
        return runs

    def single(self, rows: int, prefix: str) -> List[Dict[str, Any]]:
        return [self.table_workload(f"{prefix}_decimal_recent", "decimal", "recent", rows),
                self.table_workload(f"{prefix}_md5_uniform", "md5", "uniform", rows)]

    def partitioned(self) -> List[Dict[str, Any]]:
        rows = self.args.rows
        return [self.table_workload("part_bucket_decimal_recent", "decimal", "recent", rows,
                                    ["bucket(16, _olake_id)"]),
                self.table_workload("part_day_md5_uniform", "md5", "uniform", rows, ["days(created)"])]

    # --- a namespace of small tables ----------------------------------------------------------------
    def fleet(self, n: int) -> Dict[str, Any]:
        name = f"fleet{n}"
        print(f"-- {name}: {n} tables of {self.args.fleet_rows} rows", flush=True)
        namespaces = [name] + ([f"{name}_s"] if self.has("script") else [])
        t0 = time.monotonic()
        tables = []
        for i in range(n):
            src = Source(self, namespaces, f"t{i:03d}", "decimal", "uniform", self.args.fleet_rows)
            src.recent = src.changes = max(1, self.args.fleet_rows // 20)
            src.backfill()
            tables.append(src)
        print(f"   set up in {time.monotonic() - t0:.0f} s", flush=True)
        names = [t.table for t in tables]
        out: Dict[str, Any] = {"name": name, "tables": n, "rows": self.args.fleet_rows, "runs": {}}

        def cow_run(*args: str) -> Dict[str, Any]:
            return self.procs.job(name, "--cow-namespace", f"{name}_cow", "--source-mode", "readonly",
                                  "--mirror-format", "cow", *args)

        def run_all(label: str, changed: Sequence[Source]) -> None:
            for t in changed:
                t.cdc_batch()
            r: Dict[str, Any] = {"changed": len(changed)}
            if self.has("cow"):
                r["cow"] = cow_run()
            if self.has("script"):
                r["script"] = self.procs.script(self.args.script, f"{name}_s", names)
            out["runs"][label] = r
            print(f"   {label}: " + _line({k: v for k, v in r.items() if k != "changed"}), flush=True)

        run_all("first build", [])
        run_all("nothing changed", [])
        run_all("one changed", tables[:1])
        if self.has("cow"):
            # Short runs move by a second from one run to the next: the idle run, one changed table
            # and that table's run alone (after the same kind of change) are each the median of
            # REPEATS, interleaved. The script's runs are not repeated; the copies it mirrors get
            # the same extra changes, which its next run applies.
            idle, one = [out["runs"]["nothing changed"]["cow"]], [out["runs"]["one changed"]["cow"]]
            alone: List[Dict[str, Any]] = []
            for rep in range(REPEATS):
                if rep:
                    idle.append(cow_run())
                    tables[0].cdc_batch()
                    one.append(cow_run())
                tables[0].cdc_batch()
                alone.append(cow_run("--tables", names[0]))
            out["runs"]["nothing changed"]["cow"] = median_run(idle)
            out["runs"]["one changed"]["cow"] = median_run(one)
            out["runs"]["one table alone"] = {"changed": 1, "cow": median_run(alone)}
            for label in ("nothing changed", "one changed", "one table alone"):
                print(f"   {label}: cow {_cell(out['runs'][label]['cow'])} s", flush=True)
        run_all("10% changed", tables[: max(1, n // 10)])
        run_all("all changed", tables)
        if self.has("cow"):
            found = self.procs.job(name, "--cow-namespace", f"{name}_cow", "--verify")["verify"]
            if len(found) != n or not all(v.get("ok") for v in found):
                raise SystemExit(f"bench: a mirror of {name} differs from its source")
        return out

    def run(self, on_tier: Any = None) -> Dict[str, Any]:
        """Every asked tier; `on_tier(tier, result)` after each (a stopped bench keeps what it measured)."""
        a = self.args
        out: Dict[str, Any] = {"bare_s": round(self.procs.measure_bare(a.starts, self.has("script")), 2),
                               "tiers": {}}
        for tier in a.tiers:
            t0 = time.monotonic()
            if tier == "single":
                result: Any = self.single(a.rows, "single")
            elif tier == "partitioned":
                result = self.partitioned()
            elif tier == "large":
                result = self.single(a.large_rows, "large")
            else:
                result = [self.fleet(int(n)) for n in a.fleet.split(",") if n]
            out["tiers"][tier] = {"workloads": result, "bare_s": out["bare_s"],
                                  "script_bare_s": round(self.procs.stock_bare_s, 2),
                                  "total_s": round(time.monotonic() - t0), "settings": _settings(a, tier)}
            if on_tier:
                on_tier(tier, out["tiers"][tier])
        return out


def median_run(runs: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """The run of median time (the lower middle of an even count), with every run's time."""
    chosen = sorted(runs, key=lambda r: r["s"])[(len(runs) - 1) // 2]
    return {**chosen, "runs_s": [r["s"] for r in runs]}


def _cell(run: Dict[str, Any]) -> str:
    """A run's time; a repeated run's median with every time."""
    many = run.get("runs_s", [])
    return f"{run['s']:.1f}" + (f" (median of {', '.join(f'{s:.1f}' for s in many)})" if len(many) > 1 else "")


def _line(results: Dict[str, Dict[str, Any]]) -> str:
    return ", ".join(f"{s} {r['s']:.1f} s" + (f" ({r['files_rewritten']} rewritten)" if r.get("files_rewritten")
                                              else "") for s, r in results.items())


def _settings(a: argparse.Namespace, tier: str) -> Dict[str, Any]:
    keep = ("changes", "recent", "cycles", "systems", "memory", "java_options", "class_archive", "executor_memory",
            "quick")
    s = {k: getattr(a, k) for k in keep}
    s["rows"] = a.large_rows if tier == "large" else a.rows
    if tier == "fleet":
        s.update({"fleet": a.fleet, "fleet_rows": a.fleet_rows})
    if a.executor_memory:
        from olake_cow.core.jvm import executor_java_options
        from olake_cow.spark.session import EXECUTOR_JAVA_OPTIONS_ENV

        s["executor_java_options"] = executor_java_options(os.environ.get(EXECUTOR_JAVA_OPTIONS_ENV, ""))
    return s


# --- targets and the report ---------------------------------------------------------------------
EXECUTORS_NOTE = " (data work in an executor JVM)"


def _table_tiers(tiers: Dict[str, Any]) -> List[Tuple[str, str]]:
    """The stored single-table tiers in report order, each with what its targets' text adds."""
    return [(base + suffix, EXECUTORS_NOTE if suffix else "") for suffix in ("", EXECUTORS)
            for base in ("single", "partitioned", "large") if base + suffix in tiers]


def _growth(tiers: Dict[str, Any], small_tier: str, large_tier: str, add: Any) -> None:
    """dv's and cow's growth from the small tier's runs to the large tier's."""
    small = {w["name"].split("_", 1)[1]: w for w in tiers.get(small_tier, {}).get("workloads", [])}
    # Growth compares two tiers' runs: only when they ran on a machine of the same speed (their bare
    # Spark starts within 25%); otherwise it is shown, not judged.
    starts = [tiers.get(t, {}).get("bare_s") or 0.0 for t in (small_tier, large_tier)]
    alike = min(starts) > 0 and max(starts) <= 1.25 * min(starts)
    for w in tiers.get(large_tier, {}).get("workloads", []):
        base = small.get(w["name"].split("_", 1)[1])
        for fmt in ("dv", "cow"):
            if (base and fmt in w["incremental_s"] and fmt in base["incremental_s"]  # --systems may leave one out
                    and (fmt == "dv" or w["skew"] == "recent")):
                growth = w["incremental_s"][fmt] / max(base["incremental_s"][fmt], 0.01)
                big, one = f"{w['rows'] // 1_000_000}M", f"{base['rows'] // 1_000_000}M"
                add(f"{fmt} at {big} rows at most 1.5x its time at {one}: {w['key']} {w['skew']}"
                    + ("" if alike else f" (not comparable: bare Spark starts {starts[1]:.1f} s at {big}, "
                       f"{starts[0]:.1f} s at {one})"), growth, growth <= 1.5 if alike else None)


def targets(tiers: Dict[str, Any]) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []

    def add(text: str, value: float, met: Optional[bool], unit: str = "x") -> None:
        out.append({"target": text, "value": f"{value:.2f}{unit}", "met": None if met is None else bool(met)})

    def noted(first: int, note: str) -> None:  # what the targets added since `first` measured
        for t in out[first:]:
            t["target"] += note

    for tier, note in _table_tiers(tiers):
        first = len(out)
        for w in tiers[tier]["workloads"]:
            inc, full = w["incremental_s"], w["full_load"]
            if "script" in inc and "dv" in inc and not tier.startswith("large"):
                add(f"dv at least 3x the script: {w['name']}", inc["script"] / max(inc["dv"], 0.01),
                    inc["script"] >= 3 * inc["dv"])
            if "script" in inc and "cow" in inc:
                need = 2.0 if (w["key"], w["skew"]) == ("decimal", "recent") and tier.startswith("single") else 1.0
                add(f"cow {'at least 2x' if need > 1 else 'no slower than'} the script: {w['name']}",
                    inc["script"] / max(inc["cow"], 0.01), inc["script"] >= need * inc["cow"])
            # not a target: the script given the job's JVM settings
            if "script_tuned" in inc and not tier.startswith("large"):
                for fmt in ("dv", "cow"):
                    if fmt in inc:
                        add(f"(not a target) {fmt} against the script run with the job's JVM settings: {w['name']}",
                            inc["script_tuned"] / max(inc[fmt], 0.01), None)
            if "copy" in full and "cow" in full:
                add(f"full load within 1.3x a plain copy: {w['name']}", full["cow"]["s"] / max(full["copy"]["s"], 0.01),
                    full["cow"]["s"] <= 1.3 * full["copy"]["s"])
        noted(first, note)
    for suffix in ("", EXECUTORS):
        first = len(out)
        _growth(tiers, "single" + suffix, "large" + suffix, add)
        noted(first, EXECUTORS_NOTE if suffix else "")
    for f in tiers.get("fleet", {}).get("workloads", []):
        runs = f["runs"]
        if "cow" in runs.get("nothing changed", {}):
            idle = runs["nothing changed"]["cow"]["s"]
            add(f"{f['name']}: a run with nothing changed within 2 s of a bare Spark start", idle, idle <= 2, " s")
        if "cow" in runs.get("one changed", {}) and "one table alone" in runs:
            ratio = runs["one changed"]["cow"]["s"] / max(runs["one table alone"]["cow"]["s"], 0.01)
            add(f"{f['name']}: one table changed within 1.5x that table's run alone", ratio, ratio <= 1.5)
        if "script" in runs.get("all changed", {}):
            ratio = runs["all changed"]["script"]["s"] / max(runs["all changed"]["cow"]["s"], 0.01)
            add(f"{f['name']}: every table changed at least 3x faster than the script", ratio, ratio >= 3)
    return out


def _met(met: Optional[bool]) -> str:
    return "" if met is None else ("yes" if met else "**no**")


LABELS = {"script": "script", "script_tuned": "script, job's JVM settings"}


def markdown(results: Dict[str, Any]) -> str:
    tiers = results["tiers"]
    lines = [MARK_START, "", "Cold figures: seconds in a process of its own minus a bare Spark start of the "
             "same JVM settings (given per tier). The job runs with its own settings (short-run JVM options, "
             "a trained class archive, as the job image has them); OLake's script as it is run, on Spark's "
             "stock JVM, and (not a target) with the job's settings.", "",
             "| target | measured | met |", "|---|---|---|"]
    lines += [f"| {t['target']} | {t['value']} | {_met(t['met'])} |" for t in targets(tiers)]
    for tier, note in _table_tiers(tiers):
        t = tiers[tier]
        systems = [s for s in ("cow", "dv", "script", "script_tuned")
                   if any(s in w["incremental_s"] for w in t["workloads"])]
        jit = ("with the job's executor options (core/jvm.py; the script's on Java's defaults)"
               if t["settings"].get("executor_java_options") else "on Java's defaults")
        where = (f", data work in an executor JVM of {t['settings']['executor_memory']} {jit}, the driver with "
                 "the job's settings" if note else "")
        lines += ["", f"**{tier}** (`{t['command']}`{where}; bare Spark start {t['bare_s']:.1f} s, the script's "
                      f"stock JVM {t.get('script_bare_s', 0):.1f} s; tier took "
                      f"{t['total_s'] / 60:.0f} min). Median incremental run and full load, cold seconds; mirror "
                      "files rewritten per incremental run:", "",
                  "| workload | " + " | ".join(f"{LABELS.get(s, s)} run" for s in systems) + " | " +
                  " | ".join(f"{LABELS.get(s, s)} full load" for s in systems)
                  + " | plain copy | cow files rewritten |",
                  "|---|" + "---|" * (2 * len(systems) + 2)]
        for w in t["workloads"]:
            inc, full = w["incremental_s"], w["full_load"]
            cells = [f"{inc[s]:.1f}" if s in inc else "" for s in systems]
            cells += [f"{full[s]['s']:.1f}" if s in full else "" for s in systems]
            cells += [f"{full['copy']['s']:.1f}" if "copy" in full else "", f"{w['rewritten'].get('cow', '')}"]
            lines.append(f"| {w['name']} ({w['rows']:,} rows) | " + " | ".join(cells) + " |")
    if "fleet" in tiers:
        t = tiers["fleet"]
        groups: Dict[Tuple[str, float], List[str]] = {}  # namespaces measured by one command
        for w in t["workloads"]:
            groups.setdefault((w.get("command", t["command"]), w.get("bare_s", t["bare_s"])), []).append(
                str(w["tables"]))
        runs = "; ".join(f"{' and '.join(sizes)} tables: `{cmd}`, bare Spark start {bare:.1f} s"
                         for (cmd, bare), sizes in groups.items())
        lines += ["", f"**fleet** ({runs}). Cold seconds per run of a whole namespace:", "",
                  "| namespace | run | tables changed | this project (cow) | OLake's script |", "|---|---|---|---|---|"]
        for f in t["workloads"]:
            for label, r in f["runs"].items():
                cow = _cell(r["cow"]) if "cow" in r else ""
                script = f"{r['script']['s']:.1f}" if "script" in r else ""
                lines.append(f"| {f['tables']} tables of {f['rows']} rows | {label} | {r['changed']} | {cow} | "
                             f"{script} |")
    lines += ["", MARK_END]
    return "\n".join(lines)


def replace_section(section: str, start: str, end: str, doc: str = "BENCHMARKS.md") -> None:
    """Put `section` (which begins with `start` and ends with `end`) in place of the part of
    docs/<doc> between those markers."""
    path = os.path.join(ROOT, "docs", doc)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if start not in text or end not in text:
        raise SystemExit(f"bench: {path} lacks the {start} ... {end} markers")
    head, rest = text.split(start, 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + section + rest.split(end, 1)[1])


def merged_tier(tier: str, old: Optional[Dict[str, Any]], new: Dict[str, Any]) -> Dict[str, Any]:
    """A tier's new figures. A fleet run keeps the namespaces it did not measure (`--fleet 200`
    leaves the 40-table figures), each namespace with its own command and bare start."""
    if tier != "fleet":
        return new
    fresh = [dict(w, command=new["command"], bare_s=new["bare_s"]) for w in new["workloads"]]
    names = {w["name"] for w in fresh}
    kept = [dict({"command": old.get("command"), "bare_s": old.get("bare_s")}, **w)
            for w in (old["workloads"] if old else []) if w["name"] not in names]
    return dict(new, workloads=sorted(kept + fresh, key=lambda w: w["tables"]))


def write_doc(results: Dict[str, Any]) -> None:
    replace_section(markdown(results), MARK_START, MARK_END)


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        return child(argv[1:])
    args = parse_args(argv)
    command = "make bench" + (f" BENCH_ARGS=\"{' '.join(argv)}\"" if argv else "")
    stored: Dict[str, Any] = {"tiers": {}}
    if os.path.exists(RESULTS) and not args.quick:
        with open(RESULTS, encoding="utf-8") as f:
            stored = json.load(f)

    def keep(tier: str, value: Dict[str, Any]) -> None:
        value["command"] = command
        key = tier_key(tier, bool(args.executor_memory))
        stored["tiers"][key] = merged_tier(key, stored["tiers"].get(key), value)
        stored["targets"] = targets(stored["tiers"])
        if not args.no_doc and not args.quick:
            with open(RESULTS, "w", encoding="utf-8") as f:
                json.dump(stored, f, indent=2)
            write_doc(stored)

    work = tempfile.mkdtemp(prefix="olake-cow-bench-cold-")
    try:
        Bench(args, work).run(keep)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(markdown(stored))
    return 0


if __name__ == "__main__":
    sys.exit(main())
