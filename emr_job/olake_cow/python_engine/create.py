"""A new mirror on pyiceberg, made as the Spark engine makes one (spark/mirror_table.py): like its
source (schema, partition spec, sort order; by _olake_id when the source has none), with the
properties every engine gives a new mirror, never in a source namespace, inside a source's folders
or where files already lie. Created empty, in a commit of its own: the first build's rows follow
in a second (merge.py build_cow), so a run killed between them leaves an empty mirror of its own
that the next run of either engine fills, not files that block the mirror's creation."""
from typing import Any, Optional

from ..core.errors import ForeignMirrorError
from ..core.identifiers import MIRROR_SUFFIX
from ..core.identity import location_problem, occupied_location_problem, source_namespace_problem
from ..core.mirror_props import new_mirror_properties
from ..core.modes import DeleteMode, MirrorFormat, SourceMode
from ..core.resolution import KEY
from .catalog import load


def create_mirror(catalog: Any, src: Any, ns: str, name: str, source_name: str, location: Optional[str],
                  fmt: MirrorFormat, mode: SourceMode, delete_mode: DeleteMode, target_file_mb: Optional[int]) -> None:
    """Create mirror `ns.name` of pyiceberg table `src` (ForeignMirrorError, nothing left behind,
    when it may not be made there)."""
    made_namespace = _create_namespace(catalog, ns)
    if not made_namespace:
        _refuse_source_namespace(catalog, ns, source_name)
    try:
        tx = catalog.create_table_transaction(
            (ns, name), schema=src.schema(), location=location, partition_spec=src.spec(),
            sort_order=wanted_order(src), properties=new_mirror_properties(fmt, mode, source_name, delete_mode,
                                                                     target_file_mb))
        where = tx.table_metadata.location
        full = f"{ns}.{name}"
        problem = location_problem(where, src.location(), full)
        if problem is None and _holds_files(tx._table.io, where):  # the staged table's FileIO
            problem = occupied_location_problem(full, where)
        if problem is not None:
            raise ForeignMirrorError(problem)
        tx.commit_transaction()
    except ForeignMirrorError:
        if made_namespace and not catalog.list_tables(ns):  # a refused mirror leaves no namespace behind
            catalog.drop_namespace(ns)
        raise


def _create_namespace(catalog: Any, ns: str) -> bool:
    """Whether this run made the namespace (False: it was there, or another run made it just now)."""
    from pyiceberg.exceptions import NamespaceAlreadyExistsError

    if catalog.namespace_exists(ns):
        return False
    try:
        catalog.create_namespace(ns)
    except NamespaceAlreadyExistsError:
        return False
    return True


def wanted_order(src: Any) -> Any:
    """The mirror's sort order: its source's, or by _olake_id when the source has none."""
    from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
    from pyiceberg.transforms import IdentityTransform

    order = src.sort_order()
    if not order.is_unsorted:
        return order
    key = src.schema().find_field(KEY)
    return SortOrder(SortField(source_id=key.field_id, transform=IdentityTransform(), direction=SortDirection.ASC,
                               null_order=NullOrder.NULLS_FIRST))


def _refuse_source_namespace(catalog: Any, ns: str, source_name: str) -> None:
    """A namespace holding an OLake table is a source namespace (identity.py): no mirror is made there.
    Only tables not named like a mirror are loaded."""
    for ident in catalog.list_tables(ns):
        table = ident[-1]
        if table.endswith(MIRROR_SUFFIX):
            continue
        problem = source_namespace_problem(load(catalog, ns, table)[1], ns, table, source_name)
        if problem is not None:
            raise ForeignMirrorError(problem)


def _holds_files(io: Any, location: str) -> bool:
    """Whether any file lies under `location`, through the table's FileIO (False when it cannot list)."""
    from pyarrow.fs import FileSelector, FileType

    fs_by_scheme = getattr(io, "fs_by_scheme", None)
    if fs_by_scheme is None:
        return False
    scheme, netloc, path = io.parse_location(location)
    fs = fs_by_scheme(scheme, netloc)
    found = fs.get_file_info(FileSelector(path.rstrip("/"), recursive=True, allow_not_found=True))
    return any(f.type == FileType.File for f in found)
