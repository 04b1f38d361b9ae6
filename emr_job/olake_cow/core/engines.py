"""Which engine serves a table, from the destination and the tables' metadata alone. Pure: the
job's python engine (python_engine/table_run.py) and the trigger's express lane (routing a table
to the merge function or to EMR) ask the same questions, so they cannot disagree."""
from typing import Optional
from urllib.parse import parse_qsl, urlsplit

from .budget import Budget, first_build, over_budget
from .config import CatalogType, DestinationConfig
from .errors import MirrorFormatError
from .formats import FORMATS
from .identity import layout_change
from .modes import MirrorFormat, SourceMode, resolve_format
from .planner import TableAsk, plan_table
from .snapshots import TableState
from .steps import Merge

# The catalogs the python engine opens (pyiceberg): Hive and the file-system catalog stay on Spark.
PYTHON_CATALOGS = (CatalogType.GLUE, CatalogType.JDBC, CatalogType.REST)
# The way out when a user asked for the python engine (`--engine python`) and it cannot serve.
SPARK_WAY = "run it with --engine spark (or auto)"
# JDBC URL parameters the python engine passes on to PostgreSQL's client (python_engine/catalog.py).
JDBC_PARAMS = ("user", "password", "sslmode", "ssl", "ApplicationName")


def engine_refusal(cfg: DestinationConfig) -> Optional[str]:
    """Why the Python engine cannot run against this destination (None: it can); a user who asked
    for it is told SPARK_WAY too."""
    if cfg.catalog_type not in PYTHON_CATALOGS:
        return (f"the python engine serves glue, jdbc and rest catalogs; catalog {cfg.catalog_name!r} is "
                f"{cfg.catalog_type}")
    if cfg.catalog_type != CatalogType.JDBC:
        return None
    url = str(cfg.get("jdbc_url") or "")
    kind = jdbc_kind(url)
    if kind != "postgresql":
        return (f"the python engine reads jdbc catalogs on PostgreSQL; {cfg.catalog_name!r} is on "
                f"{kind or 'an unknown database'}")
    unknown = sorted(set(dict(parse_qsl(urlsplit(url[len("jdbc:"):]).query))) - set(JDBC_PARAMS))
    if unknown:
        # Another meaning in libpq, or none (currentSchema would point it at other tables): refused.
        return (f"the python engine does not translate the JDBC URL parameter {unknown[0]!r} of catalog "
                f"{cfg.catalog_name!r} to PostgreSQL's client")
    return None


def jdbc_kind(url: str) -> str:
    """The database of a JDBC URL (`jdbc:postgresql://...` -> "postgresql"; "" when not a JDBC URL)."""
    parts = url.split(":")
    return parts[1].lower() if len(parts) > 2 and parts[0].lower() == "jdbc" else ""


def python_refusal(source: TableState, mirror: TableState, mode: SourceMode, fmt: MirrorFormat, upgrade: bool,
                   ask: TableAsk) -> Optional[str]:
    """Why this table's run is the Spark engine's whatever its size (None: the python engine may
    run it). `mode` and `fmt` as resolve_mode and resolve_format give them."""
    if mode != SourceMode.READONLY:
        return "truncate mode commits to OLake's table: the Spark engine runs it"
    if not FORMATS[fmt].python_engine or upgrade:
        return "no maintained Python library writes Iceberg deletion vectors yet: dv mirrors run on Spark"
    for state in (source, mirror):
        if state.struct_collection:
            # pyiceberg 0.12's Arrow projection (every read and write) rebuilds such a column from
            # its offsets alone: a null list or map would become an empty one.
            return (f"pyiceberg 0.12 turns a null list or map of structs into an empty one (column "
                    f"{state.struct_collection}): the Spark engine runs tables with such columns")
    remade = layout_change(source, mirror)
    if remade:
        return f"the mirror's table is made anew ({remade}): the Spark engine drops and creates mirrors"
    return None


def rebuilds(source: TableState, mirror: TableState, ask: TableAsk) -> bool:
    """Whether the next step rebuilds the rows of a mirror that holds some (a readonly source)."""
    step = plan_table(source, mirror, SourceMode.READONLY, ask)
    return isinstance(step, Merge) and step.rebuild and not first_build(mirror)


def lane_refusal(source: TableState, mirror: TableState, mode: SourceMode, requested_format: Optional[MirrorFormat],
                 ask: TableAsk, budget: Budget) -> Optional[str]:
    """Why a table's pending merge goes to the Spark engine (None: the python engine's budget
    holds it), from metadata as the trigger reads it; `mode` as resolve_mode gave it. The python
    engine checks the same again on the tables as it loads them, and hands over what this does not
    read (a schema, spec or order pyiceberg cannot apply)."""
    try:
        fmt, upgrade = resolve_format(mirror, requested_format)
    except MirrorFormatError as exc:
        return f"the run reports a conflict: {exc}"
    return python_refusal(source, mirror, mode, fmt, upgrade, ask) or over_budget(
        source, mirror, budget, rebuilds(source, mirror, ask))
