"""Is there anything for a mirror run to do? Answered from catalog metadata without Spark, with the
job's own planner and maintenance rules, so the Lambda and the job cannot disagree about "up to
date" or "due".

Glue: GetTable gives each table's current metadata location; the metadata JSON in S3 gives the
source's snapshots and the mirror's checkpoint. Other catalogs: unknown (None), so the caller
starts the run, whose idle path commits nothing.
"""
import gzip
import json
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

from botocore.exceptions import ClientError

from olake_cow.core import planner
from olake_cow.core.changesource import for_mode
from olake_cow.core.config import DestinationConfig
from olake_cow.core.errors import SourceModeError, aws_error_code
from olake_cow.core.identity import ownership, source_problem
from olake_cow.core.maintenance import MaintenanceOptions, maintenance_due
from olake_cow.core.modes import MirrorFormat, SourceMode, built_format, resolve_mode
from olake_cow.core.snapshots import MISSING, TableState, state_from_metadata
from olake_cow.core.uris import split_s3

from .decide import TableCheck

if TYPE_CHECKING:
    from mypy_boto3_glue import GlueClient
    from mypy_boto3_s3 import S3Client


def read_json_s3(s3: "S3Client", uri: str) -> Dict[str, Any]:
    bucket, key = split_s3(uri)
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    if body[:2] == b"\x1f\x8b":  # write.metadata.compression-codec=gzip
        body = gzip.decompress(body)
    return json.loads(body)


def is_truncate_boundary(meta: Dict[str, Any]) -> bool:
    """The metadata's current snapshot is a change-set boundary the job truncated (truncate mode)."""
    state = state_from_metadata(meta)
    snap = state.snapshot(state.current_id)
    return bool(snap and snap.is_boundary)


class GlueFreshness:
    def __init__(self, glue: "GlueClient", s3: "S3Client", cfg: DestinationConfig, cow_suffix: str,
                 source_mode: Optional[SourceMode] = None) -> None:
        self.glue, self.s3, self.cfg, self.suffix = glue, s3, cfg, cow_suffix
        self.source_mode = source_mode
        self.catalog_id = cfg.get("glue_catalog_id")

    def _ids(self) -> Dict[str, Any]:
        return {"CatalogId": self.catalog_id} if self.catalog_id else {}

    def _state(self, database: str, table: str) -> TableState:
        try:
            t = self.glue.get_table(DatabaseName=database, Name=table, **self._ids())["Table"]
        except ClientError as exc:
            if aws_error_code(exc) == "EntityNotFoundException":
                return MISSING
            raise
        location = (t.get("Parameters") or {}).get("metadata_location")
        if not location:
            raise ValueError(f"Glue table {database}.{table} has no metadata_location: not an Iceberg table")
        return state_from_metadata(read_json_s3(self.s3, location), location)

    def tables(self, database: str) -> List[str]:
        names = []
        for page in self.glue.get_paginator("get_tables").paginate(DatabaseName=database, **self._ids()):
            for t in page.get("TableList", []):
                if str((t.get("Parameters") or {}).get("table_type", "")).upper() == "ICEBERG":
                    names.append(t["Name"])
        return sorted(names)

    def check(self, namespace: str, tables: Optional[Sequence[str]], maintenance: MaintenanceOptions,
              now_ms: int) -> Dict[str, TableCheck]:
        """Per table: why it needs a merge, and which requested maintenance is due."""
        out: Dict[str, TableCheck] = {}
        for name in (list(tables) if tables else self.tables(namespace)):
            source = self._state(namespace, name)
            mirror = self._state(namespace + self.suffix, name + "_cow")
            refused = _refusal(source, mirror, namespace, name, namespace + self.suffix)
            if refused:
                out[name] = TableCheck(refused=refused)
                continue
            try:
                mode = resolve_mode(source, mirror, self.source_mode)
            except SourceModeError:
                out[name] = TableCheck(merge="source mode conflict")  # the run reports it
                continue
            step = planner.plan_next(source, mirror, mode)
            due: List[str] = []
            if maintenance.requested and source.exists:
                due = maintenance_due(maintenance, source, mirror, for_mode(mode).expiry_floor(source, mirror),
                                      now_ms, built_format(mirror) == MirrorFormat.DV)
            out[name] = TableCheck(type(step).__name__.lower() if planner.has_work(step) else None, tuple(due))
        return out


def _refusal(source: TableState, mirror: TableState, namespace: str, name: str, cow_namespace: str) -> Optional[str]:
    """Why the job would skip or refuse the table (identity.py), so no run is started for it."""
    if not source.exists:
        return None
    problem = source_problem(source, f"table {namespace}.{name}")
    if problem is not None:
        return problem.reason
    owner = ownership(mirror, f"{namespace}.{name}", f"{cow_namespace}.{name}_cow")
    return None if owner.writable else owner.reason


def freshness_for(cfg: DestinationConfig, glue: "GlueClient", s3: "S3Client", cow_suffix: str,
                  source_mode: Optional[SourceMode] = None) -> Optional[GlueFreshness]:
    return GlueFreshness(glue, s3, cfg, cow_suffix, source_mode) if cfg.catalog_type == "glue" else None
