"""What lies under a table's folders, through the table's own FileIO (S3FileIO, S3 Tables,
vended credentials; never a Hadoop file system): the folders Iceberg writes its files to, and
whether a location already holds files before a mirror is created there."""
from typing import Dict, Iterable, Optional, Tuple

from ..core.identifiers import qualified
from ..core.identity import Ground, gc_disabled, ground_problem, table_folders
from .catalog import IcebergCatalog, JavaObject, is_java_error


def lists_by_prefix(catalog: IcebergCatalog, io: JavaObject) -> bool:
    """Whether a FileIO can list files under a prefix (SupportsPrefixOperations)."""
    # Through the FileIO's own class loader: Iceberg's jar is not on the system class path.
    kind = catalog.jvm.java.lang.Class.forName("org.apache.iceberg.io.SupportsPrefixOperations", True,
                                               io.getClass().getClassLoader())
    return bool(kind.isInstance(io))


def all_files(catalog: IcebergCatalog, ns: str, table: str) -> Dict[str, int]:
    """Every data and delete file any snapshot of the table references -> its size."""
    rows = catalog.session.sql(f"SELECT file_path, file_size_in_bytes FROM "
                               f"{qualified(catalog.catalog_name, ns, table)}.all_files").collect()
    return {r[0]: int(r[1]) for r in rows}


def ground(catalog: IcebergCatalog, ns: str, table: str, files: Optional[Iterable[str]] = None,
           loaded: Optional[JavaObject] = None) -> Ground:
    """Where the table keeps its files (core/identity.py Ground); `files`: its all_files and
    `loaded`: the table, if the caller has them."""
    t = catalog.load(ns, table) if loaded is None else loaded
    held = all_files(catalog, ns, table) if files is None else files
    location, properties = str(t.location()), dict(t.properties())
    return Ground(f"{ns}.{table}", location, table_folders(location, properties), tuple(held),
                  gc_disabled(properties))


def ground_problem_of(catalog: IcebergCatalog, mine: Ground, what: str,
                      other: Optional[Tuple[str, str]]) -> Optional[str]:
    """Why `what`, which deletes files of table `mine`, is not done (None: its ground is its own,
    and not that of `other`, the other table of its pair, if it exists): core/identity.py ground_problem."""
    theirs = ground(catalog, *other) if other is not None else None
    return ground_problem(mine, what, theirs)


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
