"""`make demo`: a sample OLake-like table in a local warehouse, mirrored by the job.

Backfill, then CDC batches (updates, a tombstone delete, inserts, a pure equality delete and a
key written twice in one commit); run the job in its default (readonly) mode; show that pyiceberg
(which, like Databricks and Snowflake, cannot apply equality deletes) refuses the source but reads
the mirror, that the mirror equals the resolved source, and that the source was left exactly as it
was. Then one more CDC batch and an incremental run, and `--verify`. Last, the Python engine (no
JVM: Arrow and pyiceberg) on a jdbc catalog on a local PostgreSQL server, beside the file-system
one (the python engine does not commit to file-system catalogs): the Python engine builds the
mirror and merges the next sync, and four readers check it.
"""
import json
import os
import random
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

from olake_cow.cli import main as job  # noqa: E402
from olake_cow.core.identifiers import qualified  # noqa: E402
from olake_cow.spark.catalog import IcebergCatalog  # noqa: E402
from olake_cow.spark.session import local_iceberg_jar  # noqa: E402
from testkit import pg  # noqa: E402
from testkit.local import (  # noqa: E402
    hadoop_destination,
    local_session,
    pyiceberg_rows,
    read_rows,
    write_destination,
    writer_session,
)
from testkit.model import diff, normalized  # noqa: E402
from testkit.olake_writer import OlakeWriter  # noqa: E402
from testkit.readers import duckdb_rows, rust_rows  # noqa: E402

WORK = os.path.join(ROOT, ".demo")
CATALOG, NS, TABLE = "olake_iceberg", "postgres_shop_public", "orders"
SQL_CATALOG = "olake_jdbc"


def say(msg: str) -> None:
    print(f"\n== {msg}", flush=True)


def check(root, writer, tables, catalog: str = CATALOG) -> bool:
    """The mirror read by Spark and by three engines that are not Spark, each against the resolved
    source computed from what the writer committed."""
    mirror = qualified(catalog, NS + "_cow", TABLE + "_cow")
    cols = [f.name for f in root.table(mirror).schema.fields]
    expected = normalized(writer.model(TABLE).expected("keep"), cols)
    mir = tables.state(NS + "_cow", TABLE + "_cow")
    reads = {"Spark": read_rows(root, mirror), "pyiceberg": pyiceberg_rows(mir.metadata_location),
             "DuckDB": duckdb_rows(mir.metadata_location), "iceberg-rust": rust_rows(mir.metadata_location)}
    ok = True
    for engine, rows in reads.items():
        actual = normalized(rows, cols)
        same = actual == expected
        ok = ok and same
        print(f"   {engine:<13} reads {len(actual)} mirror rows; resolved source: {len(expected)} -> "
              f"{'EQUAL' if same else 'DIFFERENT'}")
        if not same:
            print("   " + diff(actual, expected))
    return ok


def source_fingerprint(root, tables):
    state = tables.state(NS, TABLE)
    rows = root.table(qualified(CATALOG, NS, TABLE)).count()
    return state.metadata_location, [s.snapshot_id for s in state.snapshots], rows


def source_unchanged(root, tables, before) -> bool:
    same = source_fingerprint(root, tables) == before
    print(f"   OLake's table untouched by the job (same metadata file, {len(before[1])} snapshots, "
          f"{before[2]} rows): {'YES' if same else 'NO'}")
    return same


def main() -> int:
    shutil.rmtree(WORK, ignore_errors=True)
    dest = hadoop_destination("file://" + os.path.join(WORK, "warehouse"), CATALOG)
    dest_path = write_destination(os.path.join(WORK, "destination.json"), dest)
    say("starting local Spark with the Iceberg runtime")
    root, cfg = local_session(dest, {"spark.jars": f"{local_iceberg_jar()},{pg.JDBC_JAR}",
                                     "spark.driver.extraClassPath": pg.JDBC_JAR})
    writer = OlakeWriter(writer_session(root, cfg), CATALOG, NS)
    tables = IcebergCatalog(root, CATALOG)
    rng = random.Random(7)

    say(f"OLake backfill: {NS}.{TABLE}, 2,000 rows, partitioned by bucket(4, _olake_id)")
    writer.create_table(TABLE, [("customer", "string"), ("amount", "int"), ("status", "string")],
                        partition_by=["bucket(4, _olake_id)"])
    writer.backfill(TABLE, [{"_olake_id": str(i), "customer": f"c{i % 97}", "amount": i,
                             "status": "new"} for i in range(2000)], chunk=1000)
    say("OLake CDC: 3 commits (updates, tombstone deletes, inserts, a pure equality delete, "
        "a key written twice in one commit)")
    next_id = 2000
    for _ in range(3):
        keys = rng.sample(range(next_id), 60)
        rows = [{"_olake_id": str(k), "_op_type": "u", "customer": f"c{k % 97}",
                 "amount": rng.randint(1, 999), "status": "paid"} for k in keys[:40]]
        rows += [{"_olake_id": str(k), "_op_type": "d"} for k in keys[40:50]]
        rows += [{"_olake_id": str(next_id + i), "_op_type": "c", "customer": "new",
                  "amount": i, "status": "new"} for i in range(20)]
        rows.append({"_olake_id": str(next_id), "_op_type": "u", "customer": "new",
                     "amount": 1, "status": "paid"})
        next_id += 20
        writer.commit(TABLE, rows, pure_deletes=[str(k) for k in keys[50:55]])
    src = tables.state(NS, TABLE)
    print(f"   source: {src.snapshot(src.current_id).summary.get('total-data-files')} data files, "
          f"{src.snapshot(src.current_id).summary.get('total-delete-files')} delete files")

    try:
        pyiceberg_rows(src.metadata_location)
        print("   pyiceberg read the source?! (expected a refusal)")
    except ValueError as exc:
        print(f"   pyiceberg (like Databricks/Snowflake) refuses the source: {exc}")

    say("dry run of the mirror job")
    args = ["--destination-details", dest_path, "--source-namespace", NS, "--quiet"]
    job(args + ["--dry-run"])
    say("mirror job, default (readonly) mode: the first run builds the mirror")
    before = source_fingerprint(root, tables)
    rc = job(args + ["--summary-out", os.path.join(WORK, "summary-1.json")])
    ok = rc == 0 and check(root, writer, tables) and source_unchanged(root, tables, before)
    say("a second run with nothing new commits nothing")
    before = (tables.state(NS, TABLE).current_id, tables.state(NS + "_cow", TABLE + "_cow").current_id)
    rc2 = job(args)
    after = (tables.state(NS, TABLE).current_id, tables.state(NS + "_cow", TABLE + "_cow").current_id)
    print(f"   snapshots unchanged: {before == after}")
    ok = ok and rc2 == 0 and before == after

    say("one more CDC commit, then an incremental run")
    writer.commit(TABLE, [{"_olake_id": "5", "_op_type": "u", "customer": "c5", "amount": 5555,
                           "status": "refunded"},
                          {"_olake_id": "6", "_op_type": "d"},
                          {"_olake_id": "new-1", "_op_type": "c", "customer": "x", "amount": 1,
                           "status": "new"}])
    try:
        pyiceberg_rows(tables.state(NS, TABLE).metadata_location)
    except ValueError as exc:
        print(f"   pyiceberg refuses the source again: {exc}")
    before = source_fingerprint(root, tables)
    rc3 = job(args + ["--summary-out", os.path.join(WORK, "summary-2.json")])
    ok = ok and rc3 == 0 and check(root, writer, tables) and source_unchanged(root, tables, before)
    say("--verify: compare the mirror with the source resolved by Spark at the snapshot it holds (a full scan)")
    rc4 = job(args + ["--verify", "--summary-out", os.path.join(WORK, "summary-3.json")])
    print(f"   verify exit code {rc4} ({'mirror equals the source' if rc4 == 0 else 'differences found'})")
    ok = ok and rc4 == 0 and python_engine(root)
    say("result: " + ("OK - the mirror equals the resolved source" if ok else "FAILED"))
    print(f"   warehouse: {os.path.join(WORK, 'warehouse')}; summaries in {WORK}")
    return 0 if ok else 1


def python_engine(root) -> bool:
    """The Python engine on a jdbc catalog on PostgreSQL: it builds the mirror, then merges a sync."""
    say("the Python engine (Arrow and pyiceberg, no JVM) on a jdbc catalog on a local PostgreSQL server")
    why = pg.available()
    if why:
        print(f"   skipped: {why} (make demo installs it when run as root)")
        return True
    server = pg.PostgresServer().start()
    try:
        return _python_engine(root, server)
    finally:
        server.stop()


def _python_engine(root, server) -> bool:
    from olake_cow.core.config import parse_destination
    from testkit.local import writer_session as session_for

    dest = {"type": "ICEBERG", "writer": {"catalog_type": "jdbc", "catalog_name": SQL_CATALOG,
                                          "jdbc_url": server.jdbc_url, "jdbc_username": "iceberg",
                                          "jdbc_password": "pg-Secret-123",
                                          "iceberg_s3_path": "file://" + os.path.join(WORK, "jdbc-warehouse")}}
    cfg = parse_destination(dest)
    dest_path = write_destination(os.path.join(WORK, "destination-jdbc.json"), dest)
    writer = OlakeWriter(session_for(root, cfg), SQL_CATALOG, NS)
    tables = IcebergCatalog(session_for(root, cfg), SQL_CATALOG)
    writer.create_table(TABLE, [("customer", "string"), ("amount", "int"), ("status", "string")])
    writer.backfill(TABLE, [{"_olake_id": str(i), "customer": f"c{i % 97}", "amount": i, "status": "new"}
                            for i in range(2000)])
    args = ["--destination-details", dest_path, "--source-namespace", NS, "--quiet"]
    ok = True
    for step, engine in (("first build", "python"), ("next sync", "python")):
        if step == "next sync":
            writer.commit(TABLE, [{"_olake_id": str(k), "_op_type": "u", "customer": "c", "amount": k,
                                   "status": "paid"} for k in range(0, 2000, 40)]
                          + [{"_olake_id": "7", "_op_type": "d"}, {"_olake_id": "n1", "_op_type": "c", "amount": 1}],
                          pure_deletes=["11"])
        summary = os.path.join(WORK, f"summary-python-{step.replace(' ', '-')}.json")
        started = time.monotonic()
        rc = job(args + ["--engine", engine, "--summary-out", summary])
        took = time.monotonic() - started
        with open(summary, encoding="utf-8") as f:
            [entry] = json.load(f)["tables"]
        print(f"   {step} with --engine {engine}: ran on {entry['engine']} in {took:.2f} s"
              + (f" ({entry['engine_reason']})" if entry["engine_reason"] else ""))
        ok = ok and rc == 0 and check(writer.spark, writer, tables, SQL_CATALOG)  # its catalog configured
    return ok


if __name__ == "__main__":
    sys.exit(main())
