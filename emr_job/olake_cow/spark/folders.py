"""What lies under a table's folders, through the table's own FileIO (S3FileIO, S3 Tables,
vended credentials; never a Hadoop file system): the folders Iceberg writes its files to, and
whether a location already holds files before a mirror is created there."""
from typing import List

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
