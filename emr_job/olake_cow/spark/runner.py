"""Runs the tables of a namespace, `parallelism` at a time; one table's failure never stops the
others. Each table is a TableJob (table_job.py)."""
from concurrent.futures import ThreadPoolExecutor
from typing import Any, List

from ..core import identity
from ..core.config import DestinationConfig
from ..core.failure import fail_table
from ..core.identifiers import MIRROR_SUFFIX
from ..core.options import JobOptions
from ..core.summary import TableResult
from .catalog import IcebergCatalog
from .table_job import TableJob


def run_tables(root_session: Any, cfg: DestinationConfig, opts: JobOptions, tables: List[str],
               catalog: IcebergCatalog) -> List[TableResult]:
    """Every table's result; `catalog` is the run's, shared by its tables."""
    secrets = cfg.secret_values()

    def one(table: str) -> TableResult:
        try:
            job = TableJob(root_session, catalog, cfg, opts, table)
        except Exception as exc:  # noqa: BLE001 - reported per table (a name the catalog cannot take)
            res = TableResult(table=table, mirror=f"{opts.cow_namespace}.{table}{MIRROR_SUFFIX}")
            return fail_table(res, exc, secrets, cfg)
        try:
            res = job.run()
        except Exception as exc:  # noqa: BLE001 - reported per table
            res = fail_table(job.result, exc, secrets, cfg)
        return res

    workers = max(1, min(opts.parallelism, len(tables)))
    if workers == 1:
        return [one(t) for t in tables]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="olake-cow") as pool:
        return list(pool.map(one, tables))


def dropped_sources(catalog: IcebergCatalog, opts: JobOptions, tables: List[str]) -> List[str]:
    """core/identity.dropped_sources on the Spark engine's catalog."""
    if not catalog.namespace_exists(opts.cow_namespace):
        return []
    return identity.dropped_sources(opts.source_namespace, opts.cow_namespace, tables,
                                    catalog.list_tables(opts.cow_namespace),
                                    lambda name: catalog.state(opts.cow_namespace, name))
