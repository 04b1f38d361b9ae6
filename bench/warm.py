"""`make bench`: mirror runs on OLake-shaped tables, measured inside one local Spark session.

Workloads: `_olake_id` as OLake writes it (the plain decimal string of an integer key, or the hex MD5
of a composite key), changes concentrated on the newest keys or spread uniformly, two table sizes
with the job's default file size and one smaller file size. On each workload, from the same CDC
batches on identical copies of the source:
  cow       the job, readonly mode, copy-on-write mirror (the default)
  dv        the job, readonly mode, deletion-vector mirror (format version 3)
  truncate  the job, truncate mode, copy-on-write mirror
  script    OLake's published MOR-to-COW script (`--script PATH`: its blog text or a .py copy;
            read at run time, see bench/baseline.py), optional
and a plain copy of the resolved source as the floor of a full load. Per run: time in the job (the
Spark session is up, as on EMR after start-up), files and bytes read and rewritten.

Writes docs/bench.json, docs/bench.png and the results section of docs/bench-warm.md.

    .venv/bin/python bench/warm.py --script ../shared/seeds/000_3cdcd90d80e3b70c.txt
    .venv/bin/python bench/warm.py --quick            # small sizes: checks the harness
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
import zlib
from typing import Any, Dict, List, Optional

os.environ.setdefault("OLAKE_COW_DRIVER_MEMORY", "6g")

from bench import ROOT
from bench.cold import COLUMNS, md5_key, replace_section, source_frame
from olake_cow.cli import main as job_main
from olake_cow.core.identifiers import qualified
from testkit.local import hadoop_destination, local_session, write_destination, writer_session
from testkit.olake_writer import OlakeWriter

CATALOG = "bench"
SYSTEMS = ("cow", "dv", "truncate", "script")
MARKER_START, MARKER_END = "<!-- bench:results -->", "<!-- /bench:results -->"


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows of the smaller table (default 1M)")
    p.add_argument("--scale", type=int, default=4,
                   help="the larger table is this many times bigger (default 4; 1 = no larger table)")
    p.add_argument("--changes", type=int, default=5_000, help="keys changed per CDC cycle, at every size (default "
                                                              "5,000 = 0.5%% of 1M)")
    p.add_argument("--recent", type=int, default=100_000,
                   help="'recent' changes pick keys among this many newest keys (default 100,000)")
    p.add_argument("--keys", default="decimal,md5", help="key formats: decimal, md5 (default both)")
    p.add_argument("--skews", default="recent,uniform", help="change distributions (default both)")
    p.add_argument("--small-file-mb", type=int, default=8,
                   help="the smaller mirror file size, measured on the smaller table (default 8; 0 = skip)")
    p.add_argument("--cycles", type=int, default=3, help="CDC cycles per workload (default 3)")
    p.add_argument("--systems", default="cow,dv,truncate,script", help="what to measure (default all)")
    p.add_argument("--script", metavar="PATH",
                   help="OLake's published script: the blog text (shared/seeds/000_...txt) or a .py copy")
    p.add_argument("--quick", action="store_true", help="small sizes: checks the harness, not the targets")
    p.add_argument("--out", default=os.path.join(ROOT, "docs"), help="folder for bench.json and bench.png")
    p.add_argument("--no-doc", action="store_true", help="do not rewrite docs/bench-warm.md")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.changes, args.recent, args.cycles = 20_000, 200, 2_000, 2
    args.systems = [s for s in args.systems.split(",") if s and (s != "script" or args.script)]
    bad = set(args.systems) - set(SYSTEMS)
    if bad:
        p.error(f"--systems: unknown {sorted(bad)}; choose from {', '.join(SYSTEMS)}")
    return args


class Workload:
    """Identical OLake-like sources (one per system that needs its own), the same CDC batches on each."""

    def __init__(self, bench: "Bench", name: str, key: str, skew: str, rows: int, file_mb: Optional[int]):
        self.bench, self.name, self.key, self.skew, self.rows, self.file_mb = bench, name, key, skew, rows, file_mb
        self.rng = random.Random(zlib.crc32(name.encode()))  # the same batches on every run of the bench
        self.next_id = rows
        # readonly cow and dv read one source; truncate mode and the script each truncate their own copy.
        self.sources = {"shared": f"{name}_src"}
        if "truncate" in bench.args.systems:
            self.sources["truncate"] = f"{name}_trunc"
        if "script" in bench.args.systems:
            self.sources["script"] = f"{name}_script"
        self.writers = {k: OlakeWriter(writer_session(bench.root, bench.cfg), CATALOG, ns)
                        for k, ns in self.sources.items()}

    def key_of(self, i: int) -> str:
        return str(i) if self.key == "decimal" else md5_key(i)

    def backfill(self) -> None:
        df = source_frame(self.bench.spark, self.rows, self.key)
        for writer in self.writers.values():
            writer.create_table("orders", COLUMNS)
            df.writeTo(qualified(CATALOG, writer.namespace, "orders")).append()

    def cdc_batch(self) -> int:
        """One OLake CDC commit of `--changes` keys on every copy: 60% updates, 10% tombstones,
        10% pure deletes, 20% inserts of new keys."""
        args = self.bench.args
        size = self.next_id
        lo = max(0, size - args.recent) if self.skew == "recent" else 0
        ids = self.rng.sample(range(lo, size), min(args.changes, size - lo))
        rows, pure = [], []
        for n, i in enumerate(ids):
            kind = n % 10
            if kind < 6:
                rows.append(self._row(self.key_of(i), "u", i))
            elif kind < 7:
                rows.append({"_olake_id": self.key_of(i), "_op_type": "d"})
            elif kind < 8:
                pure.append(self.key_of(i))
            else:
                rows.append(self._row(self.key_of(self.next_id), "c", self.next_id))
                self.next_id += 1
        for writer in self.writers.values():
            writer.commit("orders", rows, pure_deletes=pure)
        return len(ids)

    def _row(self, key: str, op: str, i: int) -> Dict[str, Any]:
        import datetime as dt

        r = self.rng
        return {"_olake_id": key, "_op_type": op, "v": r.randint(0, 999), "amount": r.random() * 1e4,
                "status": "updated", "note": f"changed {r.getrandbits(96):024x}", "qty": i,
                "created": dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc),
                "customer": f"{r.getrandbits(64):016x}", "address": f"{r.getrandbits(96):024x} street"}

    # --- running the systems -------------------------------------------------------------------
    def run(self, system: str) -> Dict[str, Any]:
        if system == "script":
            return self.bench.script_run(self.sources["script"])
        ns = self.sources["truncate" if system == "truncate" else "shared"]
        mode = "truncate" if system == "truncate" else "readonly"
        args = ["--cow-namespace", f"{ns}_{system}", "--source-mode", mode,
                "--mirror-format", "dv" if system == "dv" else "cow"]
        if self.file_mb:
            args += ["--target-file-size-mb", str(self.file_mb)]
        return self.bench.job(ns, *args)

    def verify(self, system: str) -> Dict[str, Any]:
        ns = self.sources["shared"]
        return self.bench.job(ns, "--cow-namespace", f"{ns}_{system}", "--verify")


class Bench:
    def __init__(self, args: argparse.Namespace, work: str) -> None:
        self.args, self.work = args, work
        # A file: URI, so that the script's CREATE TABLE ... LOCATION (qualified by Spark) matches the
        # location the file-system catalog expects.
        self.warehouse = "file:" + os.path.join(work, "warehouse")
        self.dest = hadoop_destination(self.warehouse, CATALOG)
        self.dest_path = write_destination(os.path.join(work, "destination.json"), self.dest)
        extra = {"spark.sql.shuffle.partitions": "8", "spark.default.parallelism": "4"}
        self.root, self.cfg = local_session(self.dest, extra)
        self.spark = writer_session(self.root, self.cfg)
        self.results: Dict[str, Any] = {"settings": {k: v for k, v in vars(args).items() if k != "out"},
                                        "workloads": []}

    # --- measurements -------------------------------------------------------------------------
    def job(self, ns: str, *args: str) -> Dict[str, Any]:
        path = os.path.join(self.work, f"summary-{time.monotonic_ns()}.json")
        t0 = time.monotonic()
        code = job_main(["--destination-details", self.dest_path, "--source-namespace", ns, "--quiet",
                         "--summary-out", path, *args])
        wall = time.monotonic() - t0
        with open(path, encoding="utf-8") as f:
            summary = json.load(f)
        [t] = summary["tables"]
        if code != 0:
            raise SystemExit(f"bench: the job failed on {ns} {args}: {json.dumps(t)[:2000]}")
        return {"job_s": round(t["duration_s"], 2), "wall_s": round(wall, 2),
                "rows_changed": t["rows_upserted"] + t["rows_deleted"],
                "files_read": t["files_read"], "bytes_read": t["bytes_read"], "files_rewritten": t["files_rewritten"],
                "files_written": t["files_written"], "bytes_written": t["bytes_written"],
                "timings_s": t["timings_s"], "verify": t.get("verify")}

    def script_run(self, ns: str) -> Dict[str, Any]:
        """One run of the published script on one table, with its I/O read from the snapshots."""
        from bench.baseline import load
        from olake_cow.spark.catalog import IcebergCatalog

        cow_ns = f"{ns}_script"
        # Its own session: the script leaves `spark.wap.id` set (to "") on the session it is given.
        module = load(self.args.script, writer_session(self.root, self.cfg), CATALOG, ns, cow_ns,
                      f"{self.warehouse}/{cow_ns}")
        module.ensure_namespace_exists(CATALOG, cow_ns)
        tables = IcebergCatalog(self.spark, CATALOG)
        before = tables.state(cow_ns, "orders_cow")
        t0 = time.monotonic()
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):
            module.run_compaction_cycle_for_table(f"{CATALOG}.{ns}.orders")
        secs = time.monotonic() - t0
        source, after = tables.state(ns, "orders"), tables.state(cow_ns, "orders_cow")
        boundary = source.snapshot(source.current_id)
        change = source.snapshot(boundary.parent_id) if boundary else None
        new = [s for s in after.snapshots if s.snapshot_id not in {b.snapshot_id for b in before.snapshots}]
        out = {"job_s": round(secs, 2), "wall_s": round(secs, 2), "rows_changed": None,
               "files_read": 0, "bytes_read": 0, "files_rewritten": 0, "files_written": 0, "bytes_written": 0}
        if change is not None:
            out["files_read"] += change.summary_int("total-data-files") + change.summary_int("total-delete-files")
            out["bytes_read"] += change.summary_int("total-files-size")
        for s in new:
            out["files_rewritten"] += s.summary_int("deleted-data-files")
            out["files_read"] += s.summary_int("deleted-data-files")
            out["bytes_read"] += s.summary_int("removed-files-size")
            out["files_written"] += s.summary_int("added-data-files")
            out["bytes_written"] += s.summary_int("added-files-size")
        return out

    def plain_copy(self, ns: str) -> float:
        """The floor for a full load: read the resolved source, write it to a new table."""
        self.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{ns}_baseline")
        target = qualified(CATALOG, f"{ns}_baseline", "orders_plain_copy")
        t0 = time.monotonic()
        self.spark.sql(f"CREATE TABLE {target} USING iceberg AS SELECT * FROM {qualified(CATALOG, ns, 'orders')}")
        return round(time.monotonic() - t0, 2)

    # --- scenarios ----------------------------------------------------------------------------
    def workload(self, key: str, skew: str, rows: int, file_mb: Optional[int]) -> Dict[str, Any]:
        name = f"{key}_{skew}_{rows}" + (f"_{file_mb}mb" if file_mb else "")
        print(f"-- {name}: {rows:,} rows, {key} keys, {skew} changes, "
              f"{file_mb or 'default'} MB files", flush=True)
        w = Workload(self, name, key, skew, rows, file_mb)
        w.backfill()
        out: Dict[str, Any] = {"name": name, "key": key, "skew": skew, "rows": rows, "file_mb": file_mb or 128,
                               "changes": self.args.changes, "full_load": {},
                               "cycles": {s: [] for s in self.args.systems}}
        out["plain_copy_s"] = self.plain_copy(w.sources["shared"])
        for system in self.args.systems:
            out["full_load"][system] = w.run(system)
        print("   full load " + ", ".join(f"{s} {out['full_load'][s]['job_s']} s" for s in self.args.systems)
              + f"; plain copy {out['plain_copy_s']} s", flush=True)
        for c in range(self.args.cycles):
            w.cdc_batch()
            for system in self.args.systems:
                out["cycles"][system].append(w.run(system))
            print(f"   cycle {c + 1}: " + ", ".join(f"{s} {out['cycles'][s][-1]['job_s']} s"
                                                   for s in self.args.systems), flush=True)
        out["incremental_s"] = {s: round(statistics.median(r["job_s"] for r in runs), 2)
                                for s, runs in out["cycles"].items()}
        out["verified"] = {s: w.verify(s)["verify"] for s in ("cow", "dv") if s in self.args.systems}
        bad = {s: v for s, v in out["verified"].items() if not (v or {}).get("ok")}
        if bad:
            raise SystemExit(f"bench: a mirror differs from its source on {name}: {bad}")
        return out

    def warm_up(self) -> None:
        w = Workload(self, "warmup", "decimal", "recent", 2000, None)
        w.backfill()
        for system in self.args.systems:
            w.run(system)
        w.cdc_batch()
        for system in self.args.systems:
            w.run(system)

    def run(self) -> Dict[str, Any]:
        t0 = time.monotonic()
        self.warm_up()
        a = self.args
        small, large = a.rows, a.rows * a.scale
        for key in a.keys.split(","):
            for skew in a.skews.split(","):
                sizes = [(small, None)] + ([(large, None)] if large > small else []) + \
                    ([(small, a.small_file_mb)] if a.small_file_mb else [])
                for rows, mb in sizes:
                    self.results["workloads"].append(self.workload(key, skew, rows, mb))
        self.results["total_s"] = round(time.monotonic() - t0, 1)
        self.results["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(),
                                   "spark": self.spark.version, "master": self.spark.sparkContext.master}
        return self.results


# --- targets and reports ------------------------------------------------------------------------
def targets(r: Dict[str, Any]) -> List[Dict[str, Any]]:
    ws = r["workloads"]
    small = r["settings"]["rows"]
    out: List[Dict[str, Any]] = []
    at_small = [w for w in ws if w["rows"] == small and w["file_mb"] == 128]
    if "script" in r["settings"]["systems"]:
        for w in [w for w in ws if w["rows"] == small]:
            inc = w["incremental_s"]
            if "dv" in inc:
                ratio = inc["script"] / inc["dv"]
                out.append({"target": f"dv at least 3x faster than the script: {w['name']}", "value": f"{ratio:.2f}x",
                            "met": ratio >= 3})
        for w in ws:
            inc = w["incremental_s"]
            if "cow" in inc:
                ratio = inc["script"] / inc["cow"]
                need = 2.0 if (w["key"], w["skew"]) == ("decimal", "recent") else 1.0
                out.append({"target": f"cow {'at least 2x faster than' if need > 1 else 'no slower than'} the script: "
                                      f"{w['name']}", "value": f"{ratio:.2f}x", "met": ratio >= need})
    for w in at_small:
        big = [b for b in ws if (b["key"], b["skew"], b["file_mb"]) == (w["key"], w["skew"], 128)
               and b["rows"] > w["rows"]]
        if big and "dv" in w["incremental_s"]:
            growth = big[0]["incremental_s"]["dv"] / w["incremental_s"]["dv"]
            out.append({"target": f"dv time from {w['rows']:,} to {big[0]['rows']:,} rows at most 1.5x: "
                                  f"{w['key']} {w['skew']}", "value": f"{growth:.2f}x", "met": growth <= 1.5})
        if "cow" in w["full_load"]:
            ratio = w["full_load"]["cow"]["job_s"] / w["plain_copy_s"]
            out.append({"target": f"full load within 1.3x of a plain copy: {w['name']}", "value": f"{ratio:.2f}x",
                        "met": ratio <= 1.3})
    return out


def markdown(r: Dict[str, Any], command: str) -> str:
    systems = r["settings"]["systems"]
    lines = [MARKER_START, "", f"Command: `{command}` ({r['machine']['cpus']} CPUs, Spark {r['machine']['spark']}, "
             f"`{r['machine']['master']}`; total {r['total_s']:.0f} s).", "", "| target | measured | met |",
             "|---|---|---|"]
    lines += [f"| {t['target']} | {t['value']} | {'yes' if t['met'] else '**no**'} |" for t in targets(r)]
    lines += ["", "Median incremental run (time in the job, seconds), and the full load:", "",
              "| workload | " + " | ".join(systems) + " | full load cow | plain copy |",
              "|---|" + "---|" * (len(systems) + 2)]
    for w in r["workloads"]:
        lines.append(f"| {w['name']} | " + " | ".join(f"{w['incremental_s'][s]:.2f}" for s in systems)
                     + f" | {w['full_load'].get('cow', {}).get('job_s', 0):.2f} | {w['plain_copy_s']:.2f} |")
    lines += ["", "I/O per incremental run (median over the cycles): files read / MB read / mirror files "
              "rewritten:", "",
              "| workload | " + " | ".join(systems) + " |", "|---|" + "---|" * len(systems)]
    for w in r["workloads"]:
        cells = []
        for s in systems:
            runs = w["cycles"][s]
            cells.append(f"{statistics.median(c['files_read'] for c in runs):.0f} / "
                         f"{statistics.median(c['bytes_read'] for c in runs) / 1e6:.1f} / "
                         f"{statistics.median(c['files_rewritten'] for c in runs):.0f}")
        lines.append(f"| {w['name']} | " + " | ".join(cells) + " |")
    lines += ["", "![benchmark chart](bench.png)", "", MARKER_END]
    return "\n".join(lines)


def chart(r: Dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ws, systems = r["workloads"], r["settings"]["systems"]
    fig, ax = plt.subplots(figsize=(max(8, len(ws) * 1.1), 4.5))
    width = 0.8 / len(systems)
    colors = {"cow": "#4477aa", "dv": "#228833", "truncate": "#ccbb44", "script": "#999999"}
    for n, s in enumerate(systems):
        ax.bar([i + n * width for i in range(len(ws))], [w["incremental_s"][s] for w in ws], width, label=s,
               color=colors[s])
    ax.set_xticks([i + width * (len(systems) - 1) / 2 for i in range(len(ws))])
    ax.set_xticklabels([w["name"].replace("_", "\n", 2) for w in ws], fontsize=7)
    ax.set_ylabel("median incremental run (s)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def write_doc(r: Dict[str, Any], command: str) -> None:
    replace_section(markdown(r, command), MARKER_START, MARKER_END, doc="bench-warm.md")


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    given = argv if argv is not None else sys.argv[1:]
    command = "make bench" + (f" BENCH_ARGS=\"{' '.join(given)}\"" if given else "")
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
