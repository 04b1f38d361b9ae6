"""The trigger's one Glue adapter: which databases and tables the catalog holds, and each Iceberg
table's current metadata (GetTable's metadata_location, read from S3). The run's start checks and
the freshness check (freshness.py) both read the catalog through it. Other catalogs are not read
from the Lambda: the run decides there.
"""
import gzip
import json
import logging
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from botocore.exceptions import ClientError

from olake_cow.core.config import CatalogType, DestinationConfig
from olake_cow.core.errors import aws_error_code
from olake_cow.core.snapshots import MISSING, TableState, state_from_metadata
from olake_cow.core.uris import split_s3

from .decide import AllTables, Skip, Tables

if TYPE_CHECKING:
    from mypy_boto3_glue import GlueClient
    from mypy_boto3_s3 import S3Client

log = logging.getLogger("olake_trigger")
NOT_FOUND = "EntityNotFoundException"


def read_json_s3(s3: "S3Client", uri: str) -> Dict[str, Any]:
    bucket, key = split_s3(uri)
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    if body[:2] == b"\x1f\x8b":  # write.metadata.compression-codec=gzip
        body = gzip.decompress(body)
    return json.loads(body)


class GlueTables:
    """Built once per start: GetTable answers are kept for its length, so the catalog check, the
    dry run and the freshness check read each table once."""

    def __init__(self, glue: "GlueClient", s3: "S3Client", catalog_id: Optional[str] = None) -> None:
        self.glue, self.s3 = glue, s3
        self.ids: Dict[str, Any] = {"CatalogId": catalog_id} if catalog_id else {}
        self._tables: Dict[Tuple[str, str], Optional[Dict[str, Any]]] = {}

    def _table(self, database: str, table: str) -> Optional[Dict[str, Any]]:
        """GetTable's table (None: not in the catalog)."""
        key = (database, table)
        if key not in self._tables:
            try:
                self._tables[key] = dict(self.glue.get_table(DatabaseName=database, Name=table, **self.ids)["Table"])
            except ClientError as exc:
                if aws_error_code(exc) != NOT_FOUND:
                    raise
                self._tables[key] = None
        return self._tables[key]

    @classmethod
    def of(cls, cfg: DestinationConfig, glue: "GlueClient", s3: "S3Client") -> Optional["GlueTables"]:
        """The adapter for a Glue destination; None for other catalogs."""
        return cls(glue, s3, cfg.get("glue_catalog_id")) if cfg.catalog_type == CatalogType.GLUE else None

    def has_table(self, database: str, table: str) -> bool:
        return self._table(database, table) is not None

    def state(self, database: str, table: str) -> TableState:
        """The table's current Iceberg metadata (MISSING when the catalog does not hold it)."""
        t = self._table(database, table)
        if t is None:
            return MISSING
        location = (t.get("Parameters") or {}).get("metadata_location")
        if not location:
            raise ValueError(f"Glue table {database}.{table} has no metadata_location: not an Iceberg table")
        return state_from_metadata(read_json_s3(self.s3, location), location)

    def iceberg_tables(self, database: str) -> List[str]:
        names = []
        for page in self.glue.get_paginator("get_tables").paginate(DatabaseName=database, **self.ids):
            for t in page.get("TableList", []):
                if _is_iceberg(t):
                    names.append(t["Name"])
        return sorted(names)

    def missing(self, namespace: str, names: Sequence[str]) -> Optional[str]:
        """Why a run for these tables can only fail (the namespace or a named table is not in the
        catalog), or None (also when Glue cannot be read: the job checks it)."""
        try:
            self.glue.get_database(Name=namespace, **self.ids)
            missing = [t for t in names if not self.has_table(namespace, t)]
        except ClientError as exc:
            if aws_error_code(exc) == NOT_FOUND:
                return f"namespace {namespace!r} is not in the Glue catalog: nothing to mirror"
            log.warning("cannot check %s in Glue (%s); the job checks it", namespace, aws_error_code(exc))
            return None
        if missing:
            return f"table(s) {', '.join(missing)} not in the Glue database {namespace!r}: nothing to mirror"
        other = [t for t in names if not _is_iceberg(self._table(namespace, t))]
        if other:
            return (f"table(s) {', '.join(other)} in the Glue database {namespace!r} are not Iceberg tables, so not "
                    "OLake's: nothing to mirror")
        return None

    def held(self, namespace: str, tables: Union[AllTables, Tables, Skip]) -> Union[AllTables, Tables, Skip]:
        """`tables` without those a commit named that the catalog does not hold (a dropped table)."""
        if not isinstance(tables, Tables):
            return tables
        try:
            kept = tuple(t for t in tables.names if self.has_table(namespace, t))
        except ClientError:
            return tables
        if kept != tables.names:
            log.warning("namespace %s: not in Glue, left out: %s", namespace,
                        ", ".join(sorted(set(tables.names) - set(kept))))
        return Tables(kept) if kept else Skip("no pending table is in the Glue catalog")


def _is_iceberg(table: Optional[Dict[str, Any]]) -> bool:
    """A Glue table Iceberg's GlueCatalog made (table_type ICEBERG), as the job's catalog loads them."""
    return table is not None and str((table.get("Parameters") or {}).get("table_type", "")).upper() == "ICEBERG"
