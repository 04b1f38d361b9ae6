"""Engines other than Spark reading an Iceberg table from its metadata file alone, as a user's engine
would: pyiceberg (refuses equality deletes, like Databricks and Snowflake), DuckDB with its iceberg
extension, and iceberg-rust (pyiceberg-core's DataFusion provider). Each applies v3 deletion
vectors itself, so a dv mirror read by them checks more than Spark reading its own writes.

Every reader returns rows as pyarrow gives them (`Table.to_pylist()`), so one normalization
(testkit.model) compares them all. `io` holds the FileIO settings for tables on S3 (moto)."""
import importlib
import os
import pathlib
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional

Rows = List[Dict[str, Any]]
IO = Optional[Mapping[str, str]]


def pyiceberg_rows(metadata_location: str, io: IO = None) -> Rows:
    """Raises ValueError on a table with equality deletes, as engines without their support do."""
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata_location, properties=dict(io or {}))
    return _pyiceberg_nulls(table.scan().to_arrow()).to_pylist()


def _pyiceberg_nulls(table):
    """pyiceberg 0.12 reads a null list of structs as an empty list (Spark, DuckDB and iceberg-rust read
    null): those values are compared as null. Nothing else is changed."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for i, field in enumerate(table.schema):
        if pa.types.is_list(field.type) and pa.types.is_struct(field.type.value_type):
            column = table.column(i)
            empty = pc.equal(pc.list_value_length(column), 0)
            table = table.set_column(i, field, pc.if_else(empty, pa.scalar(None, field.type), column))
    return table


_DUCKDB = threading.local()


def _duckdb_connection(io: IO):
    """One connection per thread and S3 settings (loading the extensions took a quarter second a
    read). Iceberg's files never change once written, so nothing it caches can go stale."""
    key = tuple(sorted((io or {}).items()))
    cons = _DUCKDB.__dict__.setdefault("cons", {})
    if key not in cons:
        cons[key] = _new_duckdb_connection(io)
    return cons[key]


def _new_duckdb_connection(io: IO):
    import duckdb

    con = duckdb.connect()
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    names = ["avro", "iceberg"] + (["httpfs"] if io else [])
    for name in names:  # the extension files come from PyPI packages, never from the network
        module = importlib.import_module(f"duckdb_extension_{name}")
        version = con.execute("PRAGMA version").fetchone()[0]
        path = pathlib.Path(os.path.dirname(module.__file__)) / "extensions" / version / f"{name}.duckdb_extension"
        con.execute(f"LOAD '{path}'")
    if io:
        scheme, _, endpoint = io["s3.endpoint"].partition("://")
        con.execute(f"CREATE SECRET moto (TYPE s3, KEY_ID '{io['s3.access-key-id']}', "
                    f"SECRET '{io['s3.secret-access-key']}', ENDPOINT '{endpoint}', URL_STYLE 'path', "
                    f"USE_SSL {str(scheme == 'https').lower()}, REGION '{io.get('s3.region', 'us-east-1')}')")
    return con


def duckdb_rows(metadata_location: str, io: IO = None) -> Rows:
    quoted = metadata_location.replace("'", "''")
    return _duckdb_connection(io).execute(f"SELECT * FROM iceberg_scan('{quoted}')").fetch_arrow_table().to_pylist()


def rust_rows(metadata_location: str, io: IO = None) -> Rows:
    """iceberg-rust needs a URI with a scheme (file://, s3://), not a bare path."""
    from datafusion import SessionContext
    from pyiceberg_core.datafusion import IcebergDataFusionTable

    if metadata_location.startswith("/"):
        metadata_location = "file://" + metadata_location
    ctx = SessionContext()
    ctx.register_table("t", IcebergDataFusionTable(identifier=["mirror", "t"], metadata_location=metadata_location,
                                                   file_io_properties=dict(io or {})))
    return ctx.sql("SELECT * FROM t").to_arrow_table().to_pylist()


READERS: Dict[str, Callable[[str, IO], Rows]] = {
    "pyiceberg": pyiceberg_rows,
    "duckdb": duckdb_rows,
    "iceberg-rust": rust_rows,
}
