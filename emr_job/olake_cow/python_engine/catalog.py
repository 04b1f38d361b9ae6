"""The pyiceberg catalog of a destination, and whether the Python engine serves it."""
import hashlib
import json
import logging
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Tuple
from urllib.parse import parse_qsl, urlsplit

from ..core import identity
from ..core.config import CatalogType, DestinationConfig, catalog_properties, nessie_refusal
from ..core.engines import SPARK_WAY, engine_refusal
from ..core.errors import ConfigError, namespace_missing
from ..core.snapshots import MISSING, TableState, state_from_metadata

# The Iceberg (Java) property names of catalog_properties that mean the same to pyiceberg's FileIO.
_FILE_IO_KEYS = ("s3.endpoint", "s3.access-key-id", "s3.secret-access-key", "s3.session-token", "client.region")


# catalog_properties' REST settings pyiceberg's RestCatalog takes under the same names, and the
# SigV4 signing keys under its own.
_REST_KEYS = ("uri", "warehouse", "credential", "token", "oauth2-server-uri", "scope", "rest.sigv4-enabled",
              "rest.signing-name", "rest.signing-region")
_REST_SIGNING = {"rest.access-key-id": "client.access-key-id", "rest.secret-access-key": "client.secret-access-key",
                 "rest.session-token": "client.session-token"}


def _drop_v0_advice(record: logging.LogRecord) -> bool:
    """pyiceberg's SqlCatalog warns on every open of a catalog made by Iceberg's Java JdbcCatalog
    (its schema v0, as OLake's catalog is) and advises migrating it. The catalog is the user's and
    OLake writes to it: the job never migrates it, and drops the advice."""
    return not record.getMessage().startswith("SqlCatalog detected a v0 schema")


def sqlalchemy_url(cfg: DestinationConfig) -> str:
    """The SQLAlchemy URL of a jdbc catalog's database (user and password from the config)."""
    from sqlalchemy.engine import URL

    jdbc = str(cfg.get("jdbc_url"))
    parts = urlsplit(jdbc[len("jdbc:"):])
    query = dict(parse_qsl(parts.query))
    user = cfg.get("jdbc_username") or query.pop("user", None)
    password = cfg.get("jdbc_password") or query.pop("password", None)
    query.pop("user", None)
    query.pop("password", None)
    if query.pop("ssl", "").lower() == "true" and "sslmode" not in query:
        query["sslmode"] = "require"
    if "ApplicationName" in query:
        query["application_name"] = query.pop("ApplicationName")
    url = URL.create("postgresql+psycopg2", username=user, password=password, host=parts.hostname,
                     port=parts.port, database=parts.path.lstrip("/") or None, query=query)
    return url.render_as_string(hide_password=False)


def open_catalog(cfg: DestinationConfig) -> Any:
    """pyiceberg's catalog for the destination (ConfigError when the engine does not serve it)."""
    why = engine_refusal(cfg)
    if why is not None:
        raise ConfigError(f"{why}: {SPARK_WAY}")
    pub, sec = catalog_properties(cfg)
    props: Dict[str, str] = {k: v for k, v in {**pub, **sec}.items() if k in _FILE_IO_KEYS}
    if "client.region" in props:
        props["s3.region"] = props["client.region"]
    if cfg.catalog_type == CatalogType.REST:
        return _rest(cfg, pub, sec, props)
    if cfg.catalog_type == CatalogType.GLUE:
        from pyiceberg.catalog.glue import GlueCatalog

        glue: Any = GlueCatalog  # its keyword arguments are typed as a client; they are properties here
        return glue(cfg.catalog_name, **props, **_glue(cfg))
    from pyiceberg.catalog.sql import SqlCatalog

    logging.getLogger("pyiceberg.catalog.sql").addFilter(_drop_v0_advice)  # added once, however often called
    return SqlCatalog(cfg.catalog_name, uri=sqlalchemy_url(cfg), warehouse=cfg.warehouse, **props)


@contextmanager
def opened_catalog(cfg: DestinationConfig) -> Iterator[Any]:
    """open_catalog, closed on the way out: a SQL catalog's pooled connections are closed, which a
    long-lived process (the merge function's Lambda, a test run) would otherwise keep open across
    runs until PostgreSQL refuses new clients."""
    catalog = open_catalog(cfg)
    try:
        yield catalog
    finally:
        engine = getattr(catalog, "engine", None)  # SqlCatalog's SQLAlchemy engine
        if engine is not None:
            engine.dispose()


def _rest(cfg: DestinationConfig, pub: Dict[str, str], sec: Dict[str, str], props: Dict[str, str]) -> Any:
    """pyiceberg's REST catalog with the destination's auth (OAuth2 client credentials, a bearer
    token or SigV4); Nessie's server is refused as the Spark engine refuses it."""
    from pyiceberg.catalog.rest import RestCatalog

    class _Catalog(RestCatalog):
        def _config_headers(self, session: Any) -> None:
            """pyiceberg 0.12 asks every server for vended credentials; Iceberg's Java client only
            when its properties say so (rest_vended_credentials). Asked, a server may vend keys the
            destination did not want, and SeaweedFS then leaves out the table's S3 endpoint."""
            super()._config_headers(session)
            if "header.X-Iceberg-Access-Delegation" not in self.properties:
                session.headers.pop("X-Iceberg-Access-Delegation", None)

        def _init_sigv4(self, session: Any) -> None:
            """pyiceberg 0.12 sends a request body's SHA-256 only for empty bodies; servers that check
            SigV4 as S3 does (signing name s3) refuse every POST without it. Iceberg's Java client
            sends it on each request: so do we (the header is part of what is signed)."""
            super()._init_sigv4(session)
            adapter = session.get_adapter(self.uri)
            sign = adapter.add_headers

            def add_headers(request: Any, **kwargs: Any) -> None:
                if request.body:
                    body = request.body if isinstance(request.body, bytes) else str(request.body).encode("utf-8")
                    request.headers["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
                sign(request, **kwargs)

            adapter.add_headers = add_headers

    both = {**pub, **sec}
    rest = {k: v for k, v in both.items() if k in _REST_KEYS or k.startswith("header.")}
    rest.update({_REST_SIGNING[k]: v for k, v in both.items() if k in _REST_SIGNING})
    catalog = _Catalog(cfg.catalog_name, **props, **rest)
    if str(catalog.properties.get("nessie.is-nessie-catalog") or "").lower() == "true":
        raise nessie_refusal(cfg.catalog_name, "its server's config says nessie.is-nessie-catalog")
    return catalog


def _glue(cfg: DestinationConfig) -> Dict[str, str]:
    """pyiceberg's Glue client settings (no static keys: boto3's default chain, as on Lambda)."""
    w = cfg.writer
    out = {"warehouse": cfg.warehouse}
    for key, prop in (("glue_endpoint", "glue.endpoint"), ("glue_catalog_id", "glue.id"),
                      ("aws_access_key", "glue.access-key-id"), ("aws_secret_key", "glue.secret-access-key"),
                      ("aws_session_token", "glue.session-token")):
        if w.get(key):
            out[prop] = str(w[key])
    region = w.get("glue_region") or w.get("aws_region")
    if region:
        out["glue.region"] = str(region)
    return out



def source_tables(catalog: Any, namespace: str) -> List[str]:
    """The tables of a source namespace (a missing one refused as the Spark engine refuses it: some
    servers list no tables for it)."""
    require_namespace(catalog, namespace)
    return sorted(t[-1] for t in catalog.list_tables(namespace))


def require_namespace(catalog: Any, namespace: str) -> None:
    """errors.namespace_missing, with what the catalog says when asked for any namespace."""
    if catalog.namespace_exists(namespace):
        return
    try:
        catalog.list_namespaces()
    except Exception as exc:  # noqa: BLE001 - what the catalog says is the message
        raise namespace_missing(namespace, catalog.name, str(exc).splitlines()[0] if str(exc) else repr(exc)) from None
    raise namespace_missing(namespace, catalog.name)


def load(catalog: Any, namespace: str, table: str) -> Tuple[Any, TableState]:
    """(pyiceberg table or None, its state as the core reads it)."""
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    try:
        t = catalog.load_table((namespace, table))
    except (NoSuchTableError, NoSuchNamespaceError):
        return None, MISSING
    # The metadata file itself: pyiceberg 0.12 parses format-version 3 metadata (a dv source) but
    # refuses to serialize it, so state_of cannot serve a source.
    with t.io.new_input(t.metadata_location).open() as f:
        meta = json.loads(f.read())
    return t, state_from_metadata(meta, t.metadata_location)


def dropped_sources(catalog: Any, source_ns: str, cow_ns: str, tables: List[str]) -> List[str]:
    """core/identity.dropped_sources on pyiceberg's catalog."""
    if not catalog.namespace_exists(cow_ns):
        return []
    return identity.dropped_sources(source_ns, cow_ns, tables, [t[-1] for t in catalog.list_tables(cow_ns)],
                                    lambda name: load(catalog, cow_ns, name)[1])

