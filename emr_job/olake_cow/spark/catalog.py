"""Iceberg catalog access through its Java API (py4j): load a table and its metadata in one read,
list namespaces and tables, and commit table properties and a staged snapshot with the checkpoint
in one commit. A snapshot's files are in file_listing.py, a folder's in folders.py, the mirror's
DDL in mirror_ddl.py."""
import json
import logging
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..core.checkpoint import CHECKPOINT_PROPERTY
from ..core.errors import TableNotFoundError, namespace_missing
from ..core.identifiers import qualified, sql_string
from ..core.snapshots import MISSING, TableState, state_from_metadata

JavaObject = Any  # a py4j proxy of an Iceberg Java object
log = logging.getLogger("olake_cow")


def _java_class_name(exc: BaseException) -> str:
    java = getattr(exc, "java_exception", None)
    if java is None:
        return ""
    try:
        return str(java.getClass().getName())
    except Exception:  # noqa: BLE001 - py4j proxies may be gone
        return ""


def is_java_error(exc: BaseException, *simple_names: str) -> bool:
    name = _java_class_name(exc)
    return any(name.endswith("." + n) or name == n for n in simple_names)


def java_message(exc: BaseException) -> str:
    java = getattr(exc, "java_exception", None)
    try:
        return str(java.getMessage()) if java is not None else str(exc)
    except Exception:  # noqa: BLE001
        return str(exc)


class IcebergCatalog:
    """One Spark session's Iceberg catalog, through Java: what Spark SQL cannot do atomically."""

    def __init__(self, session: Any, catalog: str, java_catalog: Optional[JavaObject] = None) -> None:
        self.session = session
        self.catalog_name = catalog
        self.jvm = session._jvm
        # Catalog plugins read the conf of the thread's active session, not of their owner.
        self.jvm.org.apache.spark.sql.SparkSession.setActiveSession(session._jsparkSession)
        if java_catalog is None:
            java_catalog = session._jsparkSession.sessionState().catalogManager().catalog(catalog).icebergCatalog()
        self.catalog = java_catalog
        self._idents: Dict[Tuple[str, str], JavaObject] = {}  # a run looks the same few tables up many times
        self._iceberg: Optional[JavaObject] = None

    def for_session(self, session: Any) -> "IcebergCatalog":
        """The same Iceberg catalog for another session of the run (a table's): each session's own
        would be made anew (its client, connection pool or file system), about 0.1-0.6 s a table
        that an unchanged table would pay for nothing. Iceberg's catalogs are thread-safe."""
        other = IcebergCatalog(session, self.catalog_name, self.catalog)
        other._iceberg = self._iceberg
        return other

    @property
    def iceberg(self) -> JavaObject:
        """The org.apache.iceberg package, resolved once: each step of `jvm.org.apache.iceberg` is a
        py4j round trip, and file listings use it per file."""
        if self._iceberg is None:
            self._iceberg = self.jvm.org.apache.iceberg
        return self._iceberg

    def _namespace(self, namespace: str) -> JavaObject:
        arr = self.session.sparkContext._gateway.new_array(self.jvm.java.lang.String, 1)
        arr[0] = namespace
        return self.iceberg.catalog.Namespace.of(arr)

    def ident(self, namespace: str, table: str) -> JavaObject:
        """The table's identifier (immutable on the Java side, so kept: four py4j calls each)."""
        found = self._idents.get((namespace, table))
        if found is None:
            found = self.iceberg.catalog.TableIdentifier.of(self._namespace(namespace), table)
            self._idents[(namespace, table)] = found
        return found

    def load(self, namespace: str, table: str) -> JavaObject:
        try:
            return self.catalog.loadTable(self.ident(namespace, table))
        except Exception as exc:  # py4j wraps the Java exception
            if is_java_error(exc, "NoSuchNamespaceException"):
                raise TableNotFoundError(f"table {namespace}.{table} does not exist: "
                                         f"{self.namespace_missing(namespace)}") from None
            if is_java_error(exc, "NoSuchTableException"):
                raise TableNotFoundError(f"table {namespace}.{table} does not exist") from None
            raise

    def state(self, namespace: str, table: str) -> TableState:
        try:
            t = self.load(namespace, table)
        except TableNotFoundError:
            return MISSING
        meta = t.operations().current()
        text = self.iceberg.TableMetadataParser.toJson(meta)
        return state_from_metadata(json.loads(text), str(meta.metadataFileLocation()))

    def served_by_nessie(self) -> bool:
        """Whether a REST catalog's server is Nessie (its config says so to every client)."""
        props = self.catalog.properties()
        return str(props.get("nessie.is-nessie-catalog") or "").lower() == "true"

    def namespace_exists(self, namespace: str) -> bool:
        return bool(self.catalog.namespaceExists(self._namespace(namespace)))

    def create_namespace(self, namespace: str) -> bool:
        """Create the namespace if it is missing; True when this call made it."""
        if self.namespace_exists(namespace):
            return False
        try:
            self.catalog.createNamespace(self._namespace(namespace))
            return True
        except Exception:
            # Tables of one run create it concurrently; some catalogs (JDBC) then fail with a
            # SQL error instead of AlreadyExistsException.
            if not self.namespace_exists(namespace):
                raise
            return False

    def drop_namespace_if_empty(self, namespace: str) -> bool:
        """Drop a namespace that holds no table (Iceberg's dropNamespace refuses a non-empty one
        in every catalog, so a table created meanwhile by another task keeps it)."""
        try:
            if self.list_tables(namespace):
                return False
            return bool(self.catalog.dropNamespace(self._namespace(namespace)))
        except Exception as exc:  # noqa: BLE001 - a namespace left in place is reported, not fatal
            log.warning("could not remove the empty namespace %s: %s", namespace, java_message(exc))
            return False

    def list_tables(self, namespace: str) -> List[str]:
        if not self.namespace_exists(namespace):
            raise self.namespace_missing(namespace)
        return sorted(str(i.name()) for i in self.catalog.listTables(self._namespace(namespace)))

    def namespace_missing(self, namespace: str) -> TableNotFoundError:
        """errors.namespace_missing, with what the catalog says when asked for any namespace."""
        try:
            self.catalog.listNamespaces()
        except Exception as exc:  # noqa: BLE001 - what the catalog says is the message
            return namespace_missing(namespace, self.catalog_name, java_message(exc))
        return namespace_missing(namespace, self.catalog_name)

    def drop(self, namespace: str, table: str) -> None:
        """Drop the table and purge its files (mirror_table.py checks first that they are its own)."""
        self.catalog.dropTable(self.ident(namespace, table), True)

    # --- commits ------------------------------------------------------------------------------
    def set_checkpoint(self, namespace: str, table: str, value: str,
                       properties: Optional[Mapping[str, str]] = None) -> None:
        """Move the checkpoint (and set `properties`) in one commit."""
        self.set_properties(namespace, table, {CHECKPOINT_PROPERTY: value, **(properties or {})})

    def set_property(self, namespace: str, table: str, key: str, value: str) -> None:
        self.set_properties(namespace, table, {key: value})

    def set_properties(self, namespace: str, table: str, values: Mapping[str, str]) -> None:
        t = self.load(namespace, table)
        update = t.updateProperties()
        for key, value in values.items():
            update = update.set(key, value)
        update.commit()

    def set_properties_sql(self, namespace: str, table: str, values: Mapping[str, str]) -> None:
        """Through Spark SQL, which also upgrades the format version when it is among them."""
        pairs = ", ".join(f"{sql_string(k)}={sql_string(v)}" for k, v in values.items())
        self.session.sql(f"ALTER TABLE {qualified(self.catalog_name, namespace, table)} SET TBLPROPERTIES ({pairs})")

