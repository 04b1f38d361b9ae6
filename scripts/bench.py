"""`make bench`: OLake-like workloads written with the project's writer, the job run on them, and
two baselines measured in the same Spark session (a plain copy of the resolved source, the floor
for a full load; a full rebuild of the mirror, what a naive job does on every cycle).

Writes docs/bench.json, docs/bench.png and the results section of docs/BENCHMARKS.md.

    .venv/bin/python scripts/bench.py                 # the documented run (about 15 minutes on 2 cores)
    .venv/bin/python scripts/bench.py --quick         # small sizes, a smoke test of the harness
"""
import argparse
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "emr_job"), ROOT]
os.environ.setdefault("OLAKE_COW_DRIVER_MEMORY", "6g")

from testkit.local import hadoop_destination, local_session, write_destination, writer_session  # noqa: E402
from testkit.olake_writer import OlakeWriter  # noqa: E402

from olake_cow.cli import main as job_main  # noqa: E402
from olake_cow.identifiers import qualified  # noqa: E402

CATALOG = "bench"
COLUMNS = [("v", "int"), ("amount", "double"), ("status", "string"), ("note", "string"), ("qty", "bigint"),
           ("created", "timestamp"), ("customer", "string"), ("address", "string")]
MARKER_START, MARKER_END = "<!-- bench:results -->", "<!-- /bench:results -->"


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows of the main table (default 1M)")
    p.add_argument("--scale", type=int, default=4, help="the larger table is this many times bigger (default 4)")
    p.add_argument("--change-fraction", type=float, default=0.005,
                   help="keys changed per CDC cycle, as a fraction of --rows (default 0.005)")
    p.add_argument("--skew", choices=("recent", "uniform"), default="recent",
                   help="which keys change: among the newest (10 x changes) keys, as in order tables, "
                        "or any (default recent)")
    p.add_argument("--target-file-size-mb", type=int, default=8,
                   help="the mirror's file size (default 8: the 1M-row table is ~90 MB, so it has the file "
                        "count of a 1.4 GB table with the job's default 128 MB files)")
    p.add_argument("--cycles", type=int, default=3, help="CDC cycles per table (default 3)")
    p.add_argument("--tables", type=int, default=50, help="tables in the many-tables case (default 50)")
    p.add_argument("--table-rows", type=int, default=10_000, help="rows per table there (default 10k)")
    p.add_argument("--parallelism", type=int, default=8, help="tables at once in the many-tables case")
    p.add_argument("--quick", action="store_true", help="small sizes: checks the harness, not the targets")
    p.add_argument("--out", default=os.path.join(ROOT, "docs"), help="folder for bench.json and bench.png")
    p.add_argument("--no-doc", action="store_true", help="do not rewrite docs/BENCHMARKS.md")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.tables, args.table_rows, args.cycles = 20_000, 6, 500, 2
    return args


class Bench:
    def __init__(self, args: argparse.Namespace, work: str) -> None:
        self.args, self.work = args, work
        self.dest = hadoop_destination(os.path.join(work, "warehouse"), CATALOG)
        self.dest_path = write_destination(os.path.join(work, "destination.json"), self.dest)
        extra = {"spark.sql.shuffle.partitions": "8", "spark.default.parallelism": "4"}
        self.root, self.cfg = local_session(self.dest, extra)
        self.spark = writer_session(self.root, self.cfg)
        self.rng = random.Random(42)
        self.results: Dict[str, Any] = {"settings": {k: v for k, v in vars(args).items() if k != "out"}}

    # --- workload -----------------------------------------------------------------------------
    def source(self, ns: str, table: str, rows: int) -> OlakeWriter:
        """An OLake table after its full refresh: `rows` rows in append-only commits."""
        writer = OlakeWriter(writer_session(self.root, self.cfg), CATALOG, ns)
        writer.create_table(table, COLUMNS)
        from pyspark.sql import functions as F

        h = F.sha2(F.col("id").cast("string"), 256)  # row content that compresses like real data
        df = self.spark.range(rows).select(
            F.format_string("k%010d", F.col("id")).alias("_olake_id"),
            (F.rand(1) * 1000).cast("int").alias("v"),
            (F.rand(2) * 10000).alias("amount"),
            F.element_at(F.array(*[F.lit(s) for s in ("new", "paid", "shipped", "done")]),
                         (F.col("id") % 4 + 1).cast("int")).alias("status"),
            F.concat(F.lit("note "), F.substring(h, 1, 24)).alias("note"),
            (F.rand(3) * 1e9).cast("bigint").alias("qty"),
            F.timestamp_seconds(F.lit(1_700_000_000) + F.col("id")).alias("created"),
            F.substring(h, 25, 16).alias("customer"),
            F.concat(F.substring(h, 41, 24), F.lit(" street")).alias("address"),
            F.lit("r").alias("_op_type"),
            F.current_timestamp().alias("_olake_timestamp"),
            F.timestamp_seconds(F.lit(0)).alias("_cdc_timestamp"))
        df.writeTo(qualified(CATALOG, ns, table)).append()
        writer.next_key = rows  # type: ignore[attr-defined]
        writer.size = rows  # type: ignore[attr-defined]
        return writer

    def cdc_batch(self, writer: OlakeWriter, table: str, changes: int) -> int:
        """One OLake CDC commit touching `changes` keys: updates, inserts, tombstones, pure deletes."""
        size = writer.size  # type: ignore[attr-defined]
        # recent: among the newest 10x `changes` keys, whatever the table's size (open orders)
        lo = max(0, size - 10 * changes) if self.args.skew == "recent" else 0
        keys = self.rng.sample(range(lo, size), min(changes, size - lo))
        rows, pure = [], []
        for i, k in enumerate(keys):
            key = f"k{k:010d}"
            kind = i % 10
            if kind < 6:
                rows.append(self._row(key, "u", k))
            elif kind < 7:
                rows.append({"_olake_id": key, "_op_type": "d"})
            elif kind < 8:
                pure.append(key)
            else:  # inserts of new keys (the newest, as an order table grows)
                n = writer.next_key  # type: ignore[attr-defined]
                writer.next_key = n + 1  # type: ignore[attr-defined]
                rows.append(self._row(f"k{n:010d}", "c", n))
        writer.commit(table, rows, pure_deletes=pure)
        return len(keys)

    def _row(self, key: str, op: str, k: int) -> Dict[str, Any]:
        import datetime as dt

        return {"_olake_id": key, "_op_type": op, "v": self.rng.randint(0, 999), "amount": self.rng.random() * 1e4,
                "status": "updated", "note": f"changed {self.rng.getrandbits(96):024x}", "qty": k,
                "created": dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc),
                "customer": f"{self.rng.getrandbits(64):016x}", "address": f"{self.rng.getrandbits(96):024x} street"}

    # --- measurements -------------------------------------------------------------------------
    def job(self, ns: str, *args: str) -> Dict[str, Any]:
        path = os.path.join(self.work, f"summary-{time.monotonic_ns()}.json")
        t0 = time.monotonic()
        code = job_main(["--destination-details", self.dest_path, "--source-namespace", ns, "--quiet",
                         "--summary-out", path, "--target-file-size-mb", str(self.args.target_file_size_mb), *args])
        wall = time.monotonic() - t0
        with open(path, encoding="utf-8") as f:
            summary = json.load(f)
        if code != 0:
            raise SystemExit(f"bench: the job failed on {ns}: {json.dumps(summary['tables'])[:2000]}")
        tables = summary["tables"]
        return {
            "wall_s": round(wall, 2),
            "job_s": round(sum(t["duration_s"] for t in tables), 2) if len(tables) == 1 else round(wall, 2),
            "rows_changed": sum(t["rows_inserted"] + t["rows_updated"] + t["rows_deleted"] for t in tables),
            "files_read": sum(t.get("files_read", 0) for t in tables),
            "bytes_read": sum(t.get("bytes_read", 0) for t in tables),
            "files_written": sum(t["files_written"] for t in tables),
            "bytes_written": sum(t["bytes_written"] for t in tables),
            "timings_s": _sum_timings(tables),
        }

    def timed(self, sql: str) -> float:
        t0 = time.monotonic()
        self.spark.sql(sql).collect()
        return round(time.monotonic() - t0, 2)

    def plain_copy(self, ns: str, table: str) -> float:
        """The floor for a full load: read the resolved source, write it to a new table."""
        self.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{ns}_baseline")
        target = qualified(CATALOG, f"{ns}_baseline", f"{table}_plain_copy")
        return self.timed(f"CREATE TABLE {target} USING iceberg AS SELECT * FROM {qualified(CATALOG, ns, table)}")

    def full_rebuild(self, ns: str, table: str) -> float:
        """What a naive job does each cycle: rewrite the whole resolved table (here from the
        mirror, which is cheaper than resolving the source's deletes, so a generous baseline)."""
        mirror = qualified(CATALOG, f"{ns}_cow", f"{table}_cow")
        target = qualified(CATALOG, f"{ns}_baseline", f"{table}_rebuild")
        self.spark.sql(f"CREATE TABLE IF NOT EXISTS {target} USING iceberg AS SELECT * FROM {mirror} LIMIT 0")
        self.spark.sql(f"ALTER TABLE {target} WRITE ORDERED BY _olake_id")
        return self.timed(f"INSERT OVERWRITE {target} SELECT * FROM {mirror}")

    # --- scenarios ----------------------------------------------------------------------------
    def warm_up(self) -> None:
        w = self.source("warmup", "w", 1000)
        self.job("warmup")
        self.cdc_batch(w, "w", 10)
        self.job("warmup")
        self.plain_copy("warmup", "w")

    def single(self, name: str, rows: int) -> Dict[str, Any]:
        ns = f"single_{name}"
        print(f"-- {name}: {rows:,} rows", flush=True)
        writer = self.source(ns, "orders", rows)
        out: Dict[str, Any] = {"rows": rows, "plain_copy_s": self.plain_copy(ns, "orders")}
        out["full_load"] = self.job(ns)
        print(f"   full load {out['full_load']['job_s']} s, plain copy {out['plain_copy_s']} s", flush=True)
        changes = max(1, int(self.args.rows * self.args.change_fraction))  # the same count at every size
        out["changes_per_cycle"] = changes
        out["cycles"] = []
        for c in range(self.args.cycles):
            self.cdc_batch(writer, "orders", changes)
            run = self.job(ns)
            out["cycles"].append(run)
            print(f"   cycle {c + 1}: {run['job_s']} s, {run['rows_changed']} rows, "
                  f"{run['files_read']} files read, {run['files_written']} written", flush=True)
        out["incremental_s"] = round(statistics.median(c["job_s"] for c in out["cycles"]), 2)
        out["full_rebuild_s"] = round(statistics.median(self.full_rebuild(ns, "orders") for _ in range(2)), 2)
        print(f"   incremental {out['incremental_s']} s vs full rebuild {out['full_rebuild_s']} s", flush=True)
        return out

    def many(self) -> Dict[str, Any]:
        n, rows = self.args.tables, self.args.table_rows
        print(f"-- many tables: {n} x {rows:,} rows", flush=True)
        out: Dict[str, Any] = {"tables": n, "rows_per_table": rows, "parallelism": self.args.parallelism}
        for mode, par in (("sequential", 1), ("parallel", self.args.parallelism)):
            ns = f"many_{mode}"
            writers = [(self.source(ns, f"t{i:03d}", rows), f"t{i:03d}") for i in range(n)]
            full = self.job(ns, "--parallelism", str(par))
            for w, t in writers:
                self.cdc_batch(w, t, max(1, int(rows * 0.01)))
            inc = self.job(ns, "--parallelism", str(par))
            out[mode] = {"full_load_s": full["wall_s"], "incremental_s": inc["wall_s"]}
            print(f"   {mode} (parallelism {par}): full load {full['wall_s']} s, incremental {inc['wall_s']} s",
                  flush=True)
        return out

    def run(self) -> Dict[str, Any]:
        t0 = time.monotonic()
        self.warm_up()
        self.results["small"] = self.single("small", self.args.rows)
        self.results["large"] = self.single("large", self.args.rows * self.args.scale)
        self.results["many"] = self.many()
        self.results["total_s"] = round(time.monotonic() - t0, 1)
        self.results["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(),
                                   "spark": self.spark.version, "master": self.spark.sparkContext.master}
        return self.results


def _sum_timings(tables: List[Dict[str, Any]]) -> Dict[str, float]:
    out: Dict[str, float] = {}
    for t in tables:
        for k, v in (t.get("timings_s") or {}).items():
            out[k] = round(out.get(k, 0.0) + v, 3)
    return out


def targets(r: Dict[str, Any]) -> List[Dict[str, Any]]:
    small, large, many = r["small"], r["large"], r["many"]
    full_ratio = small["full_load"]["job_s"] / small["plain_copy_s"]
    inc_ratio = small["incremental_s"] / small["full_rebuild_s"]
    growth = large["incremental_s"] / small["incremental_s"]
    speedup = many["sequential"]["incremental_s"] / many["parallel"]["incremental_s"]
    full_speedup = many["sequential"]["full_load_s"] / many["parallel"]["full_load_s"]
    return [
        {"target": "full load within 1.3x of a plain copy", "value": f"{full_ratio:.2f}x",
         "met": full_ratio <= 1.3},
        {"target": "incremental run (0.5% keys, recent) at most 30% of a full rebuild", "value": f"{inc_ratio:.0%}",
         "met": inc_ratio <= 0.3},
        {"target": f"{r['settings']['scale']}x the rows, same changes: time grows at most 1.5x",
         "value": f"{growth:.2f}x", "met": growth <= 1.5},
        {"target": f"{many['tables']} tables: at least 3x faster than one at a time (incremental)",
         "value": f"{speedup:.2f}x", "met": speedup >= 3},
        {"target": f"{many['tables']} tables: full load, parallel vs one at a time (reported)",
         "value": f"{full_speedup:.2f}x", "met": None},
    ]


def markdown(r: Dict[str, Any], command: str) -> str:
    s, big, m = r["small"], r["large"], r["many"]
    lines = [MARKER_START, "", f"Command: `{command}` ({r['machine']['cpus']} CPUs, Spark {r['machine']['spark']}, "
             f"`{r['machine']['master']}`; total {r['total_s']:.0f} s).", "",
             "| target | measured | met |", "|---|---|---|"]
    for t in targets(r):
        met = "n/a" if t["met"] is None else ("yes" if t["met"] else "**no**")
        lines.append(f"| {t['target']} | {t['value']} | {met} |")
    lines += ["", "| run | rows | time in job (s) | wall (s) | rows changed | files read | MB read | files written "
              "| MB written |", "|---|---|---|---|---|---|---|---|---|"]
    for name, case in (("small", s), ("large", big)):
        base = [(f"{name}: plain copy (baseline)", case["rows"], case["plain_copy_s"], None),
                (f"{name}: full load (job)", case["rows"], None, case["full_load"])]
        base += [(f"{name}: incremental cycle {i + 1}", case["rows"], None, c) for i, c in enumerate(case["cycles"])]
        base += [(f"{name}: full rebuild (baseline)", case["rows"], case["full_rebuild_s"], None)]
        for label, rows, secs, run in base:
            if run is None:
                lines.append(f"| {label} | {rows:,} | {secs:.2f} | | | | | | |")
            else:
                lines.append(f"| {label} | {rows:,} | {run['job_s']:.2f} | {run['wall_s']:.2f} "
                             f"| {run['rows_changed']:,} | {run['files_read']} | {run['bytes_read'] / 1e6:.1f} "
                             f"| {run['files_written']} "
                             f"| {run['bytes_written'] / 1e6:.1f} |")
    lines += ["", f"Many tables ({m['tables']} x {m['rows_per_table']:,} rows), wall time of one job run:", "",
              "| mode | full load (s) | incremental (s) |", "|---|---|---|",
              f"| one table at a time (`--parallelism 1`) | {m['sequential']['full_load_s']:.1f} "
              f"| {m['sequential']['incremental_s']:.1f} |",
              f"| `--parallelism {m['parallelism']}` | {m['parallel']['full_load_s']:.1f} "
              f"| {m['parallel']['incremental_s']:.1f} |", "",
              "Where the time goes (median incremental cycle, seconds): " + ", ".join(
                  f"{k} {v:.2f}" for k, v in s["cycles"][len(s["cycles"]) // 2]["timings_s"].items()) + ".",
              "", "![benchmark chart](bench.png)", "", MARKER_END]
    return "\n".join(lines)


def chart(r: Dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    s, big = r["small"], r["large"]
    labels = ["plain copy", "full load", "full rebuild", "incremental"]
    for ax, case, title in ((axes[0], s, f"{s['rows']:,} rows"), (axes[1], big, f"{big['rows']:,} rows")):
        vals = [case["plain_copy_s"], case["full_load"]["job_s"], case["full_rebuild_s"], case["incremental_s"]]
        ax.bar(labels, vals, color=["#999999", "#4477aa", "#999999", "#228833"])
        ax.set_title(title)
        ax.set_ylabel("seconds")
        ax.tick_params(axis="x", labelrotation=20)
    m = r["many"]
    axes[2].bar(["one at a time", f"parallelism {m['parallelism']}"],
                [m["sequential"]["incremental_s"], m["parallel"]["incremental_s"]], color=["#999999", "#228833"])
    axes[2].set_title(f"{m['tables']} tables, incremental")
    axes[2].set_ylabel("seconds")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def write_doc(r: Dict[str, Any], command: str) -> None:
    path = os.path.join(ROOT, "docs", "BENCHMARKS.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if MARKER_START not in text or MARKER_END not in text:
        raise SystemExit(f"bench: {path} lacks the {MARKER_START} ... {MARKER_END} markers")
    head, rest = text.split(MARKER_START, 1)
    tail = rest.split(MARKER_END, 1)[1]
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + markdown(r, command) + tail)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    command = "make bench" + (f" BENCH_ARGS=\"{' '.join(argv or sys.argv[1:])}\"" if (argv or sys.argv[1:]) else "")
    work = tempfile.mkdtemp(prefix="olake-cow-bench-")
    try:
        results = Bench(args, work).run()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["command"] = command
    results["targets"] = targets(results)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
    chart(results, os.path.join(args.out, "bench.png"))
    print(markdown(results, command))
    if not args.no_doc and not args.quick:
        write_doc(results, command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
