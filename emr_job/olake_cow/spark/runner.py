"""Runs the tables of a namespace, `parallelism` at a time; one table's failure never stops the
others. Each table is a TableJob (table_job.py)."""
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any, List

from ..core.config import DestinationConfig
from ..core.failure import fail_table
from ..core.identifiers import MIRROR_SUFFIX
from ..core.identity import Owner, ownership
from ..core.options import JobOptions
from ..core.summary import TableResult
from .catalog import IcebergCatalog
from .table_job import TableJob

log = logging.getLogger("olake_cow")


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
    """The job's mirrors in the mirror namespace whose source table is gone (for a run of the whole
    namespace): left as they are (in truncate mode one may be the only copy of its data), and named."""
    if not catalog.namespace_exists(opts.cow_namespace):
        return []
    present, found = set(tables), []
    for name in catalog.list_tables(opts.cow_namespace):
        source = name[:-len(MIRROR_SUFFIX)]
        if not name.endswith(MIRROR_SUFFIX) or source in present:
            continue
        owner = ownership(catalog.state(opts.cow_namespace, name), f"{opts.source_namespace}.{source}", name)
        if owner.owner in (Owner.OURS, Owner.LEGACY):
            found.append(f"{opts.source_namespace}.{source} no longer exists; its mirror {opts.cow_namespace}.{name} "
                         "was left as it is (it may hold the only copy of that data): drop it once it is not needed")
    for line in found:
        log.warning("%s", line)
    return found
