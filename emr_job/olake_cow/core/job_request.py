"""What the trigger asks one mirror run for, as one typed record, and the job's command line built
from it in one place (pure). The job parses that command line with its own parser (cli.py); a
test sends every field through both."""
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from .maintenance import MaintenanceOptions
from .modes import DeleteMode, Engine, MirrorFormat, SourceMode

# EMR Serverless job run states that end a run (the trigger's end events, run-now's wait).
FINAL_STATES = ("SUCCESS", "FAILED", "CANCELLED")


@dataclass(frozen=True)
class JobRequest:
    secret_id: str
    source_namespace: str
    cow_namespace: str
    summary_out: str
    delete_mode: DeleteMode = DeleteMode.KEEP
    parallelism: int = 4
    cow_base_location: Optional[str] = None
    tables: Optional[Tuple[str, ...]] = None  # None: every table of the namespace
    region: Optional[str] = None
    source_mode: Optional[SourceMode] = None  # None: each mirror keeps its own
    mirror_format: Optional[MirrorFormat] = None  # None: each mirror keeps its own
    verify: bool = False
    maintenance: MaintenanceOptions = field(default_factory=MaintenanceOptions)
    engine: Optional[Engine] = None  # None: the job's default (auto); EMR runs are Spark's (jobs.py)


def job_argv(req: JobRequest) -> List[str]:
    """The job's command-line arguments for `req` (entryPointArguments of StartJobRun)."""
    args = ["--secret-id", req.secret_id, "--source-namespace", req.source_namespace,
            "--cow-namespace", req.cow_namespace, "--summary-out", req.summary_out,
            "--delete-mode", str(req.delete_mode), "--parallelism", str(req.parallelism)]
    optional = (("--cow-base-location", req.cow_base_location),
                ("--tables", ",".join(sorted(req.tables)) if req.tables is not None else None),
                ("--region", req.region),
                ("--source-mode", req.source_mode.value if req.source_mode else None),
                ("--mirror-format", req.mirror_format.value if req.mirror_format else None),
                ("--engine", req.engine.value if req.engine else None))
    for flag, value in optional:
        if value:
            args += [flag, value]
    if req.verify:
        args.append("--verify")
    return args + req.maintenance.cli_args()
