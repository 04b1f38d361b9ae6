"""Local Spark helpers shared by tests, the demo, benchmarks and the soak run."""
import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from olake_cow.core.config import DestinationConfig, parse_destination
from olake_cow.spark.session import build_session, local_jar_folder, table_session

from .model import diff, normalized
from .readers import READERS, pyiceberg_rows  # noqa: F401 - pyiceberg_rows: the demo's and tests' reader
from .servers import BARE_LOCAL_FS, BARE_LOCAL_FS_DIR


def bare_local_fs() -> Tuple[List[str], Dict[str, str]]:
    """(class path, Spark settings) that put file:// paths on the bare local file system (see
    testkit.servers.BARE_LOCAL_FS); nothing when its jar is not there (make test-stack fetches it)."""
    jar = os.path.join(local_jar_folder(), BARE_LOCAL_FS_DIR, BARE_LOCAL_FS.file)
    if not os.path.exists(jar):
        return [], {}
    return [jar], {"spark.hadoop.fs.file.impl": "com.globalmentor.apache.hadoop.fs.BareLocalFileSystem"}


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


def fresh_state(tables, namespace: str, table: str):
    """A table's current state, bypassing the catalog's cache of loaded tables (others commit)."""
    tables.catalog.invalidateTable(tables.ident(namespace, table))
    return tables.state(namespace, table)


def mirror_problems(session, table_q: str, state, expected_rows: Sequence[Dict[str, Any]],
                    fmt: str = "cow", engines: Optional[Sequence[str]] = None,
                    io: Optional[Dict[str, str]] = None) -> Tuple[int, List[str]]:
    """Compare a mirror's current snapshot, read by Spark and by each independent reader
    (testkit.readers: pyiceberg, DuckDB, iceberg-rust), with the expected rows over the mirror's
    columns; a cow mirror may hold no delete file, a dv mirror only deletion vectors. Returns (rows
    compared, problems found)."""
    from olake_cow.core.audit import forbidden_deletes
    from olake_cow.core.modes import MirrorFormat

    cols = [f.name for f in session.table(table_q).schema.fields]
    expected = normalized(expected_rows, cols)
    snap = state.snapshot(state.current_id)
    forbidden = forbidden_deletes(snap, MirrorFormat(fmt)) if snap is not None else []
    problems = [f"the mirror has delete files it must not hold ({', '.join(forbidden)})"] if forbidden else []
    compared = 0
    reads = [("spark", lambda: read_rows(session, table_q, state.current_id))]
    reads += [(name, lambda name=name: READERS[name](state.metadata_location, io))
              for name in (READERS if engines is None else engines)]
    for engine, read in reads:
        try:
            actual = normalized(read(), cols)
        except Exception as exc:  # noqa: BLE001 - a reader that cannot read the mirror is a finding
            problems.append(f"{engine}: cannot read the mirror: {type(exc).__name__}: {str(exc)[:300]}")
            continue
        compared += len(actual)
        if actual != expected:
            problems.append(f"{engine}: {diff(actual, expected)}")
    return compared, problems


def spec_string(catalog, namespace: str, table: str) -> str:
    """A table's partition spec as 'transform(column)' terms, comparable across tables."""
    from olake_cow.spark.mirror_ddl import spec_terms

    return ",".join(f"{transform}({column})" for transform, column in spec_terms(catalog.load(namespace, table)))
