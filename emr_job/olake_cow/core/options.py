"""The options of one run of the job, validated and frozen (cli.py builds them)."""
from dataclasses import dataclass, field
from typing import Optional

from .maintenance import MaintenanceOptions
from .modes import DeleteMode, MirrorFormat, SourceMode
from .planner import TableAsk


@dataclass(frozen=True)
class JobOptions:
    source_namespace: str
    cow_namespace: str
    cow_base_location: Optional[str]  # None: the catalog's default location (hadoop catalogs)
    delete_mode: DeleteMode = DeleteMode.KEEP
    dry_run: bool = False
    parallelism: int = 4
    run_id: str = ""
    maintenance: MaintenanceOptions = field(default_factory=MaintenanceOptions)
    target_file_mb: Optional[int] = None  # None: DEFAULT_TARGET_FILE_MB for new mirrors, keep for others
    source_mode: Optional[SourceMode] = None  # None: the mirror's own; readonly for new mirrors
    mirror_format: Optional[MirrorFormat] = None  # None: the mirror's own; cow for new mirrors
    upgrade_mirror: bool = False  # allow --mirror-format dv to upgrade an existing cow mirror in place
    verify: bool = False
    resume_from_source: bool = False  # truncate mode: merge what the source still holds past expired change sets
    keep_mirror_changes: bool = False  # truncate mode: keep someone's commits on the job's last publish

    def mirror_location(self, mirror: str) -> Optional[str]:
        """Where a new mirror table is created (None: where the catalog puts it), whichever engine creates it."""
        return f"{self.cow_base_location}/{mirror}" if self.cow_base_location else None

    @property
    def ask(self) -> TableAsk:
        """What the run asks of every table beyond its mode (planner.py)."""
        return TableAsk(self.delete_mode, self.resume_from_source, self.keep_mirror_changes)
