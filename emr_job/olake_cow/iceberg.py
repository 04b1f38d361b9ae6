"""Thin adapter over Iceberg's Java API (through py4j) for what Spark SQL cannot do atomically:
loading metadata in one read, the marked truncate, fast-forward publishing, table creation."""
import json
from typing import Dict, List, Optional

from .checkpoint import CHECKPOINT_PROPERTY
from .errors import TableNotFoundError
from .snapshots import BOUNDARY_KEY, MISSING, TableState, state_from_metadata

COW_PROPERTIES = {
    "format-version": "2",
    "write.delete.mode": "copy-on-write",
    "write.update.mode": "copy-on-write",
    "write.merge.mode": "copy-on-write",
    "write.wap.enabled": "true",
}
TARGET_FILE_SIZE = "write.target-file-size-bytes"
DEFAULT_TARGET_FILE_MB = 128  # smaller than Iceberg's 512: a merge rewrites whole files


def target_file_size(mb: int) -> str:
    """The TARGET_FILE_SIZE property value for `mb` megabytes."""
    return str(mb * 1024 * 1024)


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


class IcebergTables:
    """Java catalog access for one Spark session and catalog."""

    def __init__(self, session, catalog: str) -> None:
        self.session = session
        self.catalog_name = catalog
        self.jvm = session._jvm
        # Catalog plugins read the conf of the thread's active session, not of their owner.
        self.jvm.org.apache.spark.sql.SparkSession.setActiveSession(session._jsparkSession)
        spark_catalog = session._jsparkSession.sessionState().catalogManager().catalog(catalog)
        self.catalog = spark_catalog.icebergCatalog()

    def _namespace(self, namespace: str):
        arr = self.session.sparkContext._gateway.new_array(self.jvm.java.lang.String, 1)
        arr[0] = namespace
        return self.jvm.org.apache.iceberg.catalog.Namespace.of(arr)

    def ident(self, namespace: str, table: str):
        return self.jvm.org.apache.iceberg.catalog.TableIdentifier.of(self._namespace(namespace), table)

    def load(self, namespace: str, table: str):
        try:
            return self.catalog.loadTable(self.ident(namespace, table))
        except Exception as exc:  # py4j wraps the Java exception
            if is_java_error(exc, "NoSuchTableException", "NoSuchNamespaceException"):
                raise TableNotFoundError(f"table {namespace}.{table} does not exist") from None
            raise

    def state(self, namespace: str, table: str) -> TableState:
        try:
            t = self.load(namespace, table)
        except TableNotFoundError:
            return MISSING
        meta = t.operations().current()
        text = self.jvm.org.apache.iceberg.TableMetadataParser.toJson(meta)
        return state_from_metadata(json.loads(text), str(meta.metadataFileLocation()))

    def namespace_exists(self, namespace: str) -> bool:
        return bool(self.catalog.namespaceExists(self._namespace(namespace)))

    def create_namespace(self, namespace: str) -> None:
        if not self.namespace_exists(namespace):
            try:
                self.catalog.createNamespace(self._namespace(namespace))
            except Exception:
                # Tables of one run create it concurrently; some catalogs (JDBC) then fail with a
                # SQL error instead of AlreadyExistsException.
                if not self.namespace_exists(namespace):
                    raise

    def list_tables(self, namespace: str) -> List[str]:
        if not self.namespace_exists(namespace):
            raise TableNotFoundError(f"namespace {namespace!r} does not exist in catalog "
                                     f"{self.catalog_name!r}")
        return sorted(str(i.name()) for i in self.catalog.listTables(self._namespace(namespace)))

    def truncate(self, namespace: str, table: str, run_id: str) -> int:
        """Delete every file of the current snapshot, marking the snapshot as a boundary. On a
        concurrent commit Iceberg retries on the new base, so the parent always holds exactly
        what was removed."""
        t = self.load(namespace, table)
        always = self.jvm.org.apache.iceberg.expressions.Expressions.alwaysTrue()
        t.newDelete().deleteFromRowFilter(always).set(BOUNDARY_KEY, run_id).commit()
        t.refresh()
        return int(t.currentSnapshot().snapshotId())

    def publish(self, namespace: str, table: str, staged_id: int) -> int:
        """Fast-forward (or, for appends, cherry-pick) a staged snapshot; returns the new current id."""
        t = self.load(namespace, table)
        t.manageSnapshots().cherrypick(staged_id).commit()
        t.refresh()
        return int(t.currentSnapshot().snapshotId())

    def set_checkpoint(self, namespace: str, table: str, value: str) -> None:
        self.set_property(namespace, table, CHECKPOINT_PROPERTY, value)

    def set_property(self, namespace: str, table: str, key: str, value: str) -> None:
        t = self.load(namespace, table)
        t.updateProperties().set(key, value).commit()

    def create_mirror(self, source_ns: str, source: str, ns: str, table: str,
                      location: Optional[str], properties: Dict[str, str]) -> None:
        """Create the mirror with the source's current schema, partition spec and sort order
        (sorted by `_olake_id` when the source has none), and copy-on-write modes."""
        src = self.load(source_ns, source)
        schema = src.schema()
        order = src.sortOrder()
        if order.isUnsorted():
            order = self.jvm.org.apache.iceberg.SortOrder.builderFor(schema).asc("_olake_id").build()
        props = self.jvm.java.util.HashMap()
        for k, v in {**COW_PROPERTIES, **properties}.items():
            props.put(k, v)
        builder = (self.catalog.buildTable(self.ident(ns, table), schema)
                   .withPartitionSpec(src.spec()).withSortOrder(order).withProperties(props))
        if location:
            builder = builder.withLocation(location)
        builder.create()

    def drop(self, namespace: str, table: str) -> None:
        self.catalog.dropTable(self.ident(namespace, table), True)

    def spec_string(self, namespace: str, table: str) -> str:
        """Partition spec as 'transform(column)' terms, comparable across tables."""
        t = self.load(namespace, table)
        schema = t.schema()
        terms = []
        for f in t.spec().fields():
            terms.append(f"{f.transform().toString()}({schema.findColumnName(f.sourceId())})")
        return ",".join(terms)
