"""The pyiceberg catalog of a destination, and whether the Python engine serves it."""
from typing import Any, Dict, Optional
from urllib.parse import parse_qsl, urlsplit

from ..core.config import CatalogType, DestinationConfig, catalog_properties
from ..core.errors import ConfigError

# The Iceberg (Java) property names of catalog_properties that mean the same to pyiceberg's FileIO.
_FILE_IO_KEYS = ("s3.endpoint", "s3.access-key-id", "s3.secret-access-key", "s3.session-token", "client.region")


def engine_refusal(cfg: DestinationConfig) -> Optional[str]:
    """Why the Python engine cannot run against this destination (None: it can)."""
    if cfg.catalog_type != CatalogType.JDBC:
        return (f"the python engine serves jdbc catalogs; catalog {cfg.catalog_name!r} is {cfg.catalog_type}: "
                "run it with --engine spark (or auto)")
    kind = _jdbc_kind(str(cfg.get("jdbc_url") or ""))
    if kind not in ("postgresql", "sqlite"):
        return (f"the python engine reads jdbc catalogs on PostgreSQL or SQLite; {cfg.catalog_name!r} is on "
                f"{kind or 'an unknown database'}: run it with --engine spark (or auto)")
    return None


def _jdbc_kind(url: str) -> str:
    parts = url.split(":")
    return parts[1].lower() if len(parts) > 2 and parts[0].lower() == "jdbc" else ""


def sqlalchemy_url(cfg: DestinationConfig) -> str:
    """The SQLAlchemy URL of a jdbc catalog's database (user and password from the config)."""
    from sqlalchemy.engine import URL

    jdbc = str(cfg.get("jdbc_url"))
    kind = _jdbc_kind(jdbc)
    if kind == "sqlite":
        return "sqlite:///" + jdbc.split(":", 2)[2].split("?")[0]
    parts = urlsplit(jdbc[len("jdbc:"):])
    query = dict(parse_qsl(parts.query))
    user = cfg.get("jdbc_username") or query.pop("user", None)
    password = cfg.get("jdbc_password") or query.pop("password", None)
    query.pop("user", None)
    query.pop("password", None)
    url = URL.create("postgresql+psycopg2", username=user, password=password, host=parts.hostname,
                     port=parts.port, database=parts.path.lstrip("/") or None, query=query)
    return url.render_as_string(hide_password=False)


def open_catalog(cfg: DestinationConfig) -> Any:
    """pyiceberg's catalog for the destination (ConfigError when the engine does not serve it)."""
    why = engine_refusal(cfg)
    if why is not None:
        raise ConfigError(why)
    from pyiceberg.catalog.sql import SqlCatalog

    pub, sec = catalog_properties(cfg)
    props: Dict[str, str] = {k: v for k, v in {**pub, **sec}.items() if k in _FILE_IO_KEYS}
    return SqlCatalog(cfg.catalog_name, uri=sqlalchemy_url(cfg), warehouse=cfg.warehouse, **props)
