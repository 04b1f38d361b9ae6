"""The mirror table itself: creating it, and making it follow its source (schema, partition spec,
sort order) before each merge. Spark/Iceberg adapter."""
import logging
from typing import Optional

from ..core.errors import ForeignMirrorError, SchemaEvolutionError
from ..core.formats import FORMATS
from ..core.identifiers import MIRROR_SUFFIX
from ..core.identity import source_namespace_problem
from ..core.mirror_props import kept_properties, new_mirror_properties
from ..core.modes import DeleteMode, MirrorFormat, SourceMode
from ..core.snapshots import TableState
from .catalog import IcebergCatalog
from .folders import ground, ground_problem_of
from .mirror_ddl import MirrorDDL

log = logging.getLogger("olake_cow")


class MirrorTable:
    """The mirror as a table: created on the first build (or when the source was recreated in a way
    it cannot follow), evolved before every merge, its properties kept (mode, file size)."""

    def __init__(self, catalog: IcebergCatalog, source_ns: str, source: str, ns: str, name: str,
                 location: Optional[str], mode: SourceMode, fmt: MirrorFormat,
                 target_file_mb: Optional[int], delete_mode: DeleteMode) -> None:
        self.catalog, self.ddl = catalog, MirrorDDL(catalog)
        self.source_ns, self.source, self.ns, self.name = source_ns, source, ns, name
        self.location, self.mode, self.fmt, self.target_file_mb = location, mode, fmt, target_file_mb
        self.delete_mode = delete_mode

    def prepare(self, mirror: TableState, rebuild: bool, recreate: bool = False) -> bool:
        """Create or evolve the mirror before a merge. Returns True when it was (re)created, so the
        merge must build its whole content. `recreate` (a readonly rebuild of a mirror whose columns
        or format version someone changed): drop it and create it anew."""
        if mirror.exists and recreate and self.mode == SourceMode.READONLY:
            log.info("[%s] the mirror's table was changed by someone else: creating it anew", self.source)
            self._drop()
            mirror = TableState(exists=False)
        if mirror.exists:
            try:
                for what in self.ddl.evolve_mirror(self.source_ns, self.source, self.ns, self.name):
                    log.info("[%s] mirror follows the source's %s", self.source, what)
            except SchemaEvolutionError:
                if not rebuild:
                    raise
                log.info("[%s] the source's schema cannot be applied to the mirror: recreating it", self.source)
                self._drop()
                mirror = TableState(exists=False)
        if not mirror.exists:
            self.create()
            return True
        self._keep_properties(mirror)
        return False

    def _drop(self) -> None:
        """Drop the mirror and purge its files; refused (ForeignMirrorError, nothing dropped) while its
        ground is not its own (core/identity.py ground_problem): the purge would delete another's files."""
        problem = ground_problem_of(self.catalog, ground(self.catalog, self.ns, self.name),
                                    "dropping it to create it anew", (self.source_ns, self.source))
        if problem:
            raise ForeignMirrorError(problem)
        self.catalog.drop(self.ns, self.name)

    def create(self) -> None:
        made_namespace = self.catalog.create_namespace(self.ns)
        props = new_mirror_properties(self.fmt, self.mode, f"{self.source_ns}.{self.source}", self.delete_mode,
                                      self.target_file_mb)
        try:
            if not made_namespace:
                self._refuse_source_namespace()
            self.ddl.create_mirror(self.source_ns, self.source, self.ns, self.name, self.location, props)
        except ForeignMirrorError:
            if made_namespace:  # a refused mirror leaves no namespace of its own behind
                self.catalog.drop_namespace_if_empty(self.ns)
            raise
        log.info("[%s] created mirror %s.%s (%s mode, %s format)", self.source, self.ns, self.name,
                 self.mode.value, self.fmt.value)

    def _refuse_source_namespace(self) -> None:
        """A mirror namespace holds mirrors: one that holds an OLake table (a `_olake_id` column, no
        olake-cow marker) is a source namespace, and no mirror is created there. Only tables not
        named like a mirror are loaded, so a mirror namespace costs a listing."""
        for name in self.catalog.list_tables(self.ns):
            if name.endswith(MIRROR_SUFFIX):
                continue
            problem = source_namespace_problem(self.catalog.state(self.ns, name), self.ns, name,
                                               f"{self.source_ns}.{self.source}")
            if problem is not None:
                raise ForeignMirrorError(problem)

    def upgrade_to_dv(self) -> None:
        """A cow mirror becomes format version 3 with merge-on-read modes (cannot be undone)."""
        self.catalog.set_properties_sql(self.ns, self.name, FORMATS[MirrorFormat.DV].table_properties())
        log.info("[%s] upgraded mirror %s.%s to format version 3 (dv)", self.source, self.ns, self.name)

    def _keep_properties(self, mirror: TableState) -> None:
        changed = kept_properties(mirror, self.mode, f"{self.source_ns}.{self.source}", self.target_file_mb,
                                  self.source)
        if changed:
            self.catalog.set_properties(self.ns, self.name, changed)
