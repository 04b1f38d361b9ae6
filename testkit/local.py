"""Local Spark helpers shared by tests, the demo, benchmarks and the soak run."""
import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from olake_cow.core.config import DestinationConfig, parse_destination
from olake_cow.spark.session import build_session, table_session

from .model import diff, normalized


def hadoop_destination(warehouse: str, catalog: str = "olake_iceberg") -> Dict[str, Any]:
    return {"type": "ICEBERG", "writer": {"catalog_type": "hadoop", "catalog_name": catalog,
                                          "iceberg_s3_path": warehouse}}


def write_destination(path: str, destination: Dict[str, Any]) -> str:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(destination, f)
    return path


def local_session(destination: Dict[str, Any], extra: Optional[Dict[str, str]] = None):
    cfg = parse_destination(destination)
    conf = {"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "4"}
    conf.update(extra or {})
    root = build_session(cfg, "olake-cow-testkit", "local[2]", conf)
    return root, cfg


def writer_session(root, cfg: DestinationConfig):
    return table_session(root, cfg)


def read_rows(session, table_q: str, snapshot: Optional[int] = None) -> List[Dict[str, Any]]:
    sql = f"SELECT * FROM {table_q}" + (f" VERSION AS OF {snapshot}" if snapshot else "")
    return [r.asDict() for r in session.sql(sql).collect()]


def pyiceberg_rows(metadata_location: str) -> List[Dict[str, Any]]:
    """Read a table the way engines without equality-delete support do (raises on them)."""
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata_location)
    return table.scan().to_arrow().to_pylist()


def fresh_state(tables, namespace: str, table: str):
    """A table's current state, bypassing the catalog's cache of loaded tables (others commit)."""
    tables.catalog.invalidateTable(tables.ident(namespace, table))
    return tables.state(namespace, table)


def mirror_problems(session, table_q: str, state, expected_rows: Sequence[Dict[str, Any]],
                    fmt: str = "cow") -> Tuple[int, List[str]]:
    """Compare a mirror's current snapshot, read by Spark and by pyiceberg, with the expected rows
    over the mirror's columns; a cow mirror may hold no delete file, a dv mirror only deletion
    vectors. Returns (rows compared, problems found)."""
    from olake_cow.core.audit import forbidden_deletes
    from olake_cow.core.modes import MirrorFormat

    cols = [f.name for f in session.table(table_q).schema.fields]
    expected = normalized(expected_rows, cols)
    snap = state.snapshot(state.current_id)
    forbidden = forbidden_deletes(snap, MirrorFormat(fmt)) if snap is not None else []
    problems = [f"the mirror has delete files it must not hold ({', '.join(forbidden)})"] if forbidden else []
    compared = 0
    for engine, rows in (("spark", read_rows(session, table_q, state.current_id)),
                         ("pyiceberg", pyiceberg_rows(state.metadata_location))):
        actual = normalized(rows, cols)
        compared += len(actual)
        if actual != expected:
            problems.append(f"{engine}: {diff(actual, expected)}")
    return compared, problems
