"""Test data and runs shared by the Spark tests: OLake-shaped rows, a small table made the way
OLake's first sync makes it, and a run's summary entry."""
import json
import uuid
from typing import Any, Dict, List, Sequence


def rows(a: int, b: int, op: str = "r", v: int = 0, **cols: Any) -> List[Dict[str, Any]]:
    """Rows for keys a..b-1 (`_olake_id` the decimal string of the key, as OLake writes an integer
    key): `v` = key + v, `s` = "s<key>", plus `cols`."""
    return [{"_olake_id": str(i), "_op_type": op, "v": i + v, "s": f"s{i}", **cols} for i in range(a, b)]


def make(lake: Any, table: str = "t", partition_by: Sequence[str] = (), n: int = 20) -> None:
    """OLake's first sync of `table` (v int, s string): keys 0..n-1."""
    lake.writer.create_table(table, [("v", "int"), ("s", "string")], partition_by=partition_by)
    lake.writer.backfill(table, rows(0, n))


def summary_of(lake: Any, *args: str, table: str = "t") -> Dict[str, Any]:
    """The summary entry of `table` after a run with `args`, which must succeed."""
    path = f"{lake.dest_path}.summary-{uuid.uuid4().hex[:8]}.json"
    code = lake.run("--summary-out", path, *args)
    with open(path, encoding="utf-8") as f:
        summary = json.load(f)
    assert code == 0, summary
    return next(t for t in summary["tables"] if t["table"] == table)


def first_build(lake: Any, delete_mode: str = "equality", partition_by: Sequence[str] = (), n: int = 60,
                engine: str = "auto") -> None:
    """OLake's first sync of t (v int, s string; keys 0..n-1), mirrored by a run with `--engine`
    (auto: the python engine builds a mirror its budget holds on the catalogs it serves)."""
    lake.writer.create_table("t", [("v", "int"), ("s", "string")], partition_by=partition_by,
                             delete_mode=delete_mode)
    lake.writer.backfill("t", [{"_olake_id": str(i), "v": i, "s": f"r{i}"} for i in range(n)])
    code, entry = lake.run_summary("--engine", engine)
    assert code == 0 and entry["status"] == "merged", entry
    assert entry["engine"] == ("python" if engine == "auto" else engine), entry
    lake.assert_mirror_matches("t", engines=["pyiceberg"])


def olake_changes(lake: Any, base: int, delete_mode: str = "equality") -> None:
    """Updates, inserts, tombstones, deletes by key (equality mode: Flink's shape) and a user's DELETE."""
    pure = [str(base + 3)] if delete_mode == "equality" else []
    tomb = [] if pure else [{"_olake_id": str(base + 3), "_op_type": "d"}]
    lake.writer.commit("t", [{"_olake_id": str(base + 1), "_op_type": "u", "v": 1000 + base},
                             {"_olake_id": str(base + 200), "_op_type": "c", "v": 7, "s": "new"},
                             {"_olake_id": str(base + 2), "_op_type": "d"}, *tomb], pure_deletes=pure)
    lake.writer.commit("t", [{"_olake_id": str(base + 1), "_op_type": "u", "v": 2000 + base},
                             {"_olake_id": str(base + 4), "_op_type": "u", "v": -1, "s": None}])
    lake.writer.delete_where("t", f"v = {base + 5}", lambda r: r.get("v") == base + 5)
