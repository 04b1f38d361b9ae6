"""Train a class data sharing archive for the job's driver JVM (core/jvm.py).

A new driver JVM spends most of a short run loading, parsing and verifying Spark's and Iceberg's
classes for its first queries. This runs the job's usual work once (first builds and incremental
merges of a small OLake-shaped lake, cow and dv mirrors, an unpartitioned and a partitioned
table, equality deletes and deletion vectors in the source) in one JVM started with
-XX:ArchiveClassesAtExit, and waits for that JVM to write the archive. Later JVMs started with
-XX:SharedArchiveFile (OLAKE_COW_CLASS_ARCHIVE locally; the job image's archive on EMR) map those
classes instead. An archive only fits the Java build and class path it was trained with; any
other JVM warns and runs without it.

    .venv/bin/python infra/image/class_archive.py /tmp/driver.jsa
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PID = "driver-jvm-pid="  # how the training run tells which JVM writes the archive
WAIT_S = 300  # the JVM writes the archive when it exits: about 20-40 s


def _workload(work: str, light: bool = False) -> None:
    """The training run's work, in this process's one JVM (`light`: one table, one format, one merge:
    an archive that fits this JVM all the same, for the test that checks how a run uses one)."""
    from olake_cow.cli import main as job
    from testkit.local import hadoop_destination, local_session, write_destination, writer_session
    from testkit.olake_writer import OlakeWriter

    dest = hadoop_destination("file:" + os.path.join(work, "warehouse"), "olake_iceberg")
    path = write_destination(os.path.join(work, "destination.json"), dest)
    root, cfg = local_session(dest)
    writer = OlakeWriter(writer_session(root, cfg), "olake_iceberg", "train")
    cols = [("v", "int"), ("status", "string"), ("created", "timestamp")]
    tables: Dict[str, Dict[str, Any]] = {"orders": {}, "orders_dv": {"delete_mode": "dv"},
                                         "orders_part": {"partition_by": ["bucket(4, _olake_id)"]}}
    if light:
        tables = {"orders": {}}
    for table, kw in tables.items():
        writer.create_table(table, cols, **kw)
        writer.backfill(table, [{"_olake_id": str(i), "v": i, "status": "new", "created": writer.tick()}
                                for i in range(300)])

    def run(*extra: str) -> None:
        for fmt in ("cow",) if light else ("cow", "dv"):
            code = job(["--destination-details", path, "--source-namespace", "train", "--quiet",
                        "--cow-namespace", f"train_{fmt}", "--mirror-format", fmt, *extra])
            if code != 0:
                raise SystemExit(f"class_archive: the training run failed ({code})")

    run()
    for cycle in range(1 if light else 2):
        for table in tables:
            base = 40 * cycle
            writer.commit(table, [{"_olake_id": str(base + i), "_op_type": "u", "v": -i, "status": "paid",
                                   "created": writer.tick()} for i in range(20)]
                          + [{"_olake_id": str(base + 25), "_op_type": "d"},
                             {"_olake_id": str(1000 + cycle), "_op_type": "c", "v": 1, "status": "new",
                              "created": writer.tick()}],
                          pure_deletes=[] if "delete_mode" in tables[table] else [str(base + 30)])
        run()
    if not light:
        run("--verify")
    print(f"{PID}{int(root._jvm.java.lang.ProcessHandle.current().pid())}", flush=True)


def train(out: str, quiet: bool = True, light: bool = False) -> float:
    """Write a class archive to `out` (replaced if there); returns the seconds it took. `light`: a
    smaller workload (_workload)."""
    out = os.path.abspath(out)
    if os.path.exists(out):
        os.remove(out)
    work = tempfile.mkdtemp(prefix="olake-cow-class-archive-")
    t0 = time.monotonic()
    try:
        from olake_cow.spark.session import CLASS_ARCHIVE_ENV

        env = dict(os.environ, **{CLASS_ARCHIVE_ENV: out})
        child = [sys.executable, os.path.abspath(__file__), "--child", work, *(["--light"] if light else [])]
        done = subprocess.run(child, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"class_archive: the training run failed:\n{done.stderr[-3000:]}")
        pid = int([line for line in done.stdout.splitlines() if line.startswith(PID)][-1][len(PID):])
        deadline = time.monotonic() + WAIT_S
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:  # the JVM is writing it
            time.sleep(0.5)
        if not os.path.exists(out) or os.path.exists(f"/proc/{pid}"):
            raise SystemExit(f"class_archive: the driver JVM wrote no archive at {out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    took = time.monotonic() - t0
    if not quiet:
        print(f"class archive {out}: {os.path.getsize(out) / 2**20:.0f} MB in {took:.0f} s")
    return took


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        _workload(argv[1], light="--light" in argv[2:])
        return 0
    p = argparse.ArgumentParser(prog="class_archive", description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="where to write the archive (a path without spaces)")
    args = p.parse_args(argv)
    from olake_cow.core.jvm import class_archive_option

    try:
        class_archive_option(args.out, exists=False)  # the one check of an archive path
    except ValueError as exc:
        p.error(str(exc))
    train(args.out, quiet=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
