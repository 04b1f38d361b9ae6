"""Local Spark helpers shared by tests, the demo, benchmarks and the soak run."""
import json
import os
from typing import Any, Dict, List, Optional

from olake_cow.config import DestinationConfig, parse_destination
from olake_cow.spark_session import build_session, table_session


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
