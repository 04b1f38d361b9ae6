"""`make bench-engines`: a small sync on each engine as a whole process (interpreter start, imports,
catalog, the merge), as a Lambda or EMR run pays it. A 1M-row source in a jdbc catalog (PostgreSQL,
started here), its mirror's first build timed on each engine (the python engine's is the mirror the
syncs merge into, Spark's goes to a namespace of its own), then CDC commits of --changes keys (60%
updates, 10% tombstones, 10% pure deletes, 20% inserts), each merged by a new process of one
engine, the engines alternating on the same mirror. Keys: OLake's plain decimal strings and MD5
hex; spread over the whole table or clustered among the newest 50,000 keys; unpartitioned and
bucket(16, _olake_id). Every mirror is checked
against the source resolved by Spark after the last run. OLake's published script on the same
sizes is in docs/bench-cold.json (make bench): its cycle figures are printed beside.

    .venv/bin/python bench/engines.py            # 1M rows, 5,000 changes, 3 syncs per engine
    .venv/bin/python bench/engines.py --quick    # 20k rows: checks the harness
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

from bench import ROOT, compile_job
from bench.cold import COLUMNS, md5_key, source_frame

CATALOG = "engines"


def run_job(dest: str, ns: str, engine: str, out: str, *extra: str) -> Dict[str, Any]:
    """One whole process of the job; its wall time, peak RSS (the Python process: a Spark run's JVM is
    a child process of its own) and summary entry."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "emr_job"), ROOT]))
    started = time.monotonic()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, os.path.join(ROOT, "emr_job", "main.py"),
                           "--destination-details", dest, "--source-namespace", ns, "--engine", engine, "--quiet",
                           "--summary-out", out, *extra], env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{engine} run failed: {done.stderr[-2000:]}")
    with open(out, encoding="utf-8") as f:
        [entry] = json.load(f)["tables"]
    assert entry["engine"] == engine, entry
    rss_mb = int(done.stderr.strip().splitlines()[-1]) / 1024
    return {"wall_s": round(wall, 2), "peak_rss_mb": round(rss_mb), "work_s": round(
        entry["timings_s"]["reading_changes"] + entry["timings_s"]["merging"], 3), "upserted": entry["rows_upserted"],
        "deleted": entry["rows_deleted"], "files_rewritten": entry["files_rewritten"],
        "files_written": entry["files_written"]}


RECENT = 50_000  # a clustered sync changes keys among the newest this many


def batch(writer: Any, table: str, key: str, size: int, changes: int, rng: random.Random, partitioned: bool,
          clustered: bool = False) -> int:
    ids = rng.sample(range(max(0, size - RECENT) if clustered else 0, size), changes)
    rows, pure = [], []
    for n, i in enumerate(ids):
        k = str(i) if key == "decimal" else md5_key(i)
        kind = n % 10
        if kind < 6:
            rows.append({"_olake_id": k, "_op_type": "u", "v": rng.randint(0, 999), "status": "updated"})
        elif kind < 7 or (kind < 8 and partitioned):
            rows.append({"_olake_id": k, "_op_type": "d"})
        elif kind < 8:
            pure.append(k)
        else:
            new = str(size) if key == "decimal" else md5_key(size)
            rows.append({"_olake_id": new, "_op_type": "c", "v": 1, "status": "new"})
            size += 1
    writer.commit(table, rows, pure_deletes=pure)
    return size


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--changes", type=int, default=5_000)
    p.add_argument("--syncs", type=int, default=3, help="syncs per engine and workload")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "bench-engines.json"))
    a = p.parse_args(argv)
    if a.quick:
        a.rows, a.changes, a.syncs = 20_000, 500, 1
    from olake_cow.core.identifiers import qualified
    from testkit.local import local_session, writer_session
    from testkit.olake_writer import OlakeWriter
    from testkit.pg import PostgresServer

    compile_job()
    tmp = tempfile.mkdtemp(prefix="olake-cow-engines-")
    pg = PostgresServer().start()
    try:
        dest_obj = {"type": "ICEBERG", "writer": {
            "catalog_type": "jdbc", "catalog_name": CATALOG, "jdbc_url": pg.jdbc_url, "jdbc_username": "iceberg",
            "jdbc_password": "pg-Secret-123", "iceberg_s3_path": "file://" + os.path.join(tmp, "wh")}}
        dest = os.path.join(tmp, "destination.json")
        with open(dest, "w", encoding="utf-8") as f:
            json.dump(dest_obj, f)
        from olake_cow.spark.session import local_iceberg_jar
        from testkit.pg import JDBC_JAR

        root, cfg = local_session(dest_obj, {"spark.jars": ",".join([local_iceberg_jar(), JDBC_JAR]),
                                             "spark.driver.extraClassPath": JDBC_JAR})
        results: Dict[str, Any] = {"rows": a.rows, "changes": a.changes, "workloads": []}
        for key, partition_by, clustered in (("decimal", (), True), ("decimal", (), False), ("md5", (), False),
                                             ("decimal", ("bucket(16, _olake_id)",), False)):
            ns = f"{key}_{'bucket' if partition_by else 'plain'}_{'clustered' if clustered else 'spread'}"
            writer = OlakeWriter(writer_session(root, cfg), CATALOG, ns)
            writer.create_table("t", COLUMNS, partition_by=partition_by)
            df = source_frame(writer.spark, a.rows, key)
            (df.sortWithinPartitions("_olake_id") if not partition_by else df).writeTo(
                qualified(CATALOG, ns, "t")).append()
            full_load = {"spark": run_job(dest, ns, "spark", os.path.join(tmp, f"{ns}-load-spark.json"),
                                          "--cow-namespace", f"{ns}_sparkload"),
                         "python": run_job(dest, ns, "python", os.path.join(tmp, f"{ns}-load-python.json"))}
            print(ns, "full load", full_load, flush=True)
            rng, size = random.Random(ns), a.rows
            runs: Dict[str, List[Dict[str, Any]]] = {"spark": [], "python": []}
            for i in range(2 * a.syncs):
                engine = ("python", "spark")[i % 2]
                size = batch(writer, "t", key, size, a.changes, rng, bool(partition_by), clustered)
                runs[engine].append(run_job(dest, ns, engine, os.path.join(tmp, f"{ns}-{i}.json")))
                print(ns, engine, runs[engine][-1], flush=True)
            mirror = writer.spark.table(qualified(CATALOG, ns + "_cow", "t_cow")).count()
            resolved = writer.spark.table(qualified(CATALOG, ns, "t")).count()
            assert mirror == resolved, (ns, mirror, resolved)
            assert full_load["spark"]["upserted"] == full_load["python"]["upserted"] == a.rows, full_load
            results["workloads"].append({"name": ns, "key": key, "partition_by": list(partition_by),
                                         "clustered": clustered, "runs": runs, "full_load": full_load,
                                         "median_wall_s": {e: statistics.median(r["wall_s"] for r in v)
                                                           for e, v in runs.items()}})
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1, sort_keys=True)
        for w in results["workloads"]:
            print(w["name"], w["median_wall_s"], "full load:", {e: r["wall_s"] for e, r in w["full_load"].items()})
    finally:
        pg.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
