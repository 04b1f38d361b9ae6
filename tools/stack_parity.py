"""A newer Spark or Iceberg must not change what a mirror holds: one deterministic scenario, run on
each stack, and the mirrors it leaves compared.

    python tools/stack_parity.py --out FILE            (run in .venv, then in .venv-spark4)
    python tools/stack_parity.py --compare A B         (exit 1 and the differences if they differ)
    make stack-parity                                    (both runs and the comparison)

The scenario: every source mode x mirror format, on tables in OLake's three delete modes, one
partitioned by bucket(_olake_id), with updates, tombstones, inserts, a key written twice in one
commit, a user's DELETE (readonly), a column added, the migrator's switch to deletion vectors and
two incremental runs. What is compared, per mirror: its rows (read by pyiceberg, not by the Spark
that wrote them), its schema, format version, partition spec, sort order, and the job's own table
properties with snapshot ids left out. Files, snapshot ids and timestamps of commits may differ.
"""
import argparse
import json
import os
import random
import shutil
import sys
import tempfile
from typing import Any, Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CATALOG = "parity"
VARIANTS = [(m, f) for m in ("readonly", "truncate") for f in ("cow", "dv")]
TABLES = {"eq": ("equality", ()), "pos": ("position", ()), "dvs": ("dv", ()),
          "part": ("equality", ("bucket(4, _olake_id)",)), "mig": ("equality", ())}
# properties whose values name snapshots or runs: their keys are compared, not their values
VOLATILE = ("olake-cow.checkpoint", "olake-cow.data-checkpoint", "olake-cow.data-snapshot", "olake-cow.data-rows",
            "olake-cow.staged-snapshot", "olake-cow.source-table")


def rows(rng: random.Random, keys: List[int], op: str) -> List[Dict[str, Any]]:
    return [{"_olake_id": str(k), "_op_type": op, "v": rng.randint(0, 10_000), "s": f"s{rng.randint(0, 99)}"}
            for k in keys]


def scenario(writer, job, ns: str, mode: str, fmt: str, rng: random.Random) -> None:
    w = writer
    for name, (delete_mode, part) in TABLES.items():
        w.create_table(name, [("v", "int"), ("s", "string")], partition_by=part, delete_mode=delete_mode,
                       format_version=3 if name == "mig" else 2)
        w.backfill(name, rows(rng, list(range(200)), "r"), chunk=100)
    run = ["--destination-details", job, "--source-namespace", ns, "--source-mode", mode, "--mirror-format", fmt,
           "--quiet"]
    from olake_cow.cli import main

    for batch in range(3):
        for name in TABLES:
            keys = rng.sample(range(250), 30)
            twice = keys[0]
            w.commit(name, rows(rng, keys[:15], "u") + rows(rng, keys[15:25], "d") + rows(rng, [300 + batch], "c")
                     + rows(rng, [twice], "u"))
        if batch == 0:
            w.add_column("eq", "note", "string")
            if mode == "readonly":
                w.delete_where("pos", "v < 500", lambda r: r.get("v") is not None and r["v"] < 500)
        if batch == 1:
            w.switch_delete_mode("mig", "dv")
        if batch != 1 and main(run) != 0:
            raise SystemExit(f"stack_parity: the job failed on {ns}")


def describe(tables, ns: str, name: str) -> Dict[str, Any]:
    from pyiceberg.table import StaticTable

    state = tables.state(ns, name)
    table = StaticTable.from_metadata(state.metadata_location)
    meta = table.metadata
    props = {k: ("<set>" if k in VOLATILE else v) for k, v in sorted(meta.properties.items())
             if k.startswith("olake-cow.") or k.startswith("write.") or k == "format-version"}
    got = table.scan().to_arrow().to_pylist()
    return {
        "format_version": meta.format_version,
        "schema": [(f.field_id, f.name, str(f.field_type), f.required) for f in table.schema().fields],
        "partition_spec": [(f.name, str(f.transform)) for f in table.spec().fields],
        "sort_order": [str(f) for f in table.sort_order().fields],
        "properties": props,
        "rows": sorted(json.dumps(r, default=str, sort_keys=True) for r in got),
    }


def run(out: str) -> int:
    from pyspark import __version__ as spark_version

    from olake_cow.spark.catalog import IcebergCatalog
    from testkit.local import hadoop_destination, local_session, write_destination, writer_session
    from testkit.olake_writer import OlakeWriter

    work = tempfile.mkdtemp(prefix="olake-cow-parity-")
    try:
        destination = hadoop_destination(os.path.join(work, "warehouse"), CATALOG)
        job = write_destination(os.path.join(work, "destination.json"), destination)
        root, cfg = local_session(destination)
        tables = IcebergCatalog(writer_session(root, cfg), CATALOG)
        found: Dict[str, Any] = {"spark": spark_version, "mirrors": {}}
        for mode, fmt in VARIANTS:
            ns = f"p_{fmt}_{mode}"
            writer = OlakeWriter(writer_session(root, cfg), CATALOG, ns)
            scenario(writer, job, ns, mode, fmt, random.Random(20261128))
            for name in TABLES:
                found["mirrors"][f"{ns}.{name}"] = describe(tables, ns + "_cow", name + "_cow")
            print(f"stack_parity: Spark {spark_version}, {mode} {fmt}: {len(TABLES)} mirrors", flush=True)
        root.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(found, f, indent=1, sort_keys=True)
    return 0


def compare(a: str, b: str) -> int:
    with open(a, encoding="utf-8") as f:
        left = json.load(f)
    with open(b, encoding="utf-8") as f:
        right = json.load(f)
    problems = []
    for name in sorted(set(left["mirrors"]) | set(right["mirrors"])):
        one, two = left["mirrors"].get(name), right["mirrors"].get(name)
        if one is None or two is None:
            problems.append(f"{name}: only on one stack")
            continue
        for key in sorted(set(one) | set(two)):
            if one.get(key) != two.get(key):
                problems.append(f"{name}: {key} differs")
    count = len(left["mirrors"])
    rows = sum(len(m["rows"]) for m in left["mirrors"].values())
    if problems:
        print(f"stack_parity: Spark {left['spark']} and Spark {right['spark']} differ:\n  " + "\n  ".join(problems))
        return 1
    print(f"stack_parity: Spark {left['spark']} and Spark {right['spark']} left identical mirrors: {count} mirrors, "
          f"{rows} rows, schema, spec, sort order and properties")
    return 0


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="run the scenario on this Python's Spark and write what the mirrors hold here")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two --out files")
    args = p.parse_args(argv)
    if bool(args.out) == bool(args.compare):
        p.error("give --out or --compare")
    return run(args.out) if args.out else compare(*args.compare)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
