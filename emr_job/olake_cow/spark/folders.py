"""What lies under a table's folders, through the table's own FileIO (S3FileIO, S3 Tables,
vended credentials; never a Hadoop file system): the folders Iceberg writes its files to, and
whether a location already holds files before a mirror is created there."""
from typing import Dict, Iterable, List, Optional

from ..core.identifiers import qualified
from ..core.identity import foreign_files, foreign_files_problem
from .catalog import IcebergCatalog, JavaObject, is_java_error


def lists_by_prefix(catalog: IcebergCatalog, io: JavaObject) -> bool:
    """Whether a FileIO can list files under a prefix (SupportsPrefixOperations)."""
    # Through the FileIO's own class loader: Iceberg's jar is not on the system class path.
    kind = catalog.jvm.java.lang.Class.forName("org.apache.iceberg.io.SupportsPrefixOperations", True,
                                               io.getClass().getClassLoader())
    return bool(kind.isInstance(io))


def file_folders(table: JavaObject) -> List[str]:
    """The folders the table's data and metadata files are written to (Iceberg's own layout, or
    the write.data.path / write.metadata.path the table sets)."""
    props, base = table.properties(), str(table.location()).rstrip("/")
    return [str(props.get(key) or f"{base}/{folder}").rstrip("/")
            for key, folder in (("write.data.path", "data"), ("write.metadata.path", "metadata"))]


def all_files(catalog: IcebergCatalog, ns: str, table: str) -> Dict[str, int]:
    """Every data and delete file any snapshot of the table references -> its size."""
    rows = catalog.session.sql(f"SELECT file_path, file_size_in_bytes FROM "
                               f"{qualified(catalog.catalog_name, ns, table)}.all_files").collect()
    return {r[0]: int(r[1]) for r in rows}


def foreign_problem(catalog: IcebergCatalog, ns: str, table: str, paths: Iterable[str], what: str) -> Optional[str]:
    """Why `what`, which deletes files the table's history references, is not done (None: every
    one of `paths` lies under the table's location: core/identity.py foreign_files)."""
    location = str(catalog.load(ns, table).location())
    foreign = foreign_files(paths, location)
    return foreign_files_problem(f"{ns}.{table}", location, foreign, what) if foreign else None


def holds_files(catalog: IcebergCatalog, io: JavaObject, location: str) -> bool:
    """Whether any file lies under `location` (through the FileIO; False when it cannot list)."""
    if not lists_by_prefix(catalog, io):
        return False
    try:
        return bool(io.listPrefix(location.rstrip("/") + "/").iterator().hasNext())
    except Exception as exc:
        if is_java_error(exc, "FileNotFoundException", "NotFoundException", "UncheckedIOException"):
            return False
        raise
