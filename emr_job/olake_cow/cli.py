"""Command line of the mirror job (see README, "Command line"; `--help`)."""
import argparse
import gc
import logging
import os
import re
import sys
import time
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any, Dict, List, NoReturn, Optional, Sequence, Tuple

from . import __version__
from .core.budget import DEFAULT_PYTHON_MAX_MB, MB, Budget
from .core.config import (
    S3_BUCKET,
    CatalogType,
    DestinationConfig,
    check_location,
    nessie_refusal,
    parse_destination,
    redact,
    refused_by_catalog,
)
from .core.engines import SPARK_WAY, engine_refusal
from .core.errors import BAD_INPUT_ERRORS, ConfigError, EngineError, OlakeCowError, aws_error_code, with_type
from .core.failure import error_text
from .core.filesize import MAX_FILE_SIZE_MB
from .core.formats import FORMATS
from .core.identifiers import (
    MIRROR_NAMESPACE_SUFFIX,
    MIRROR_SUFFIX,
    check_for_catalog,
    check_source_namespace,
    validate_name,
)
from .core.identity import comparable_location
from .core.maintenance import MaintenanceOptions
from .core.modes import DeleteMode, Engine, SourceMode, parse_format, parse_mode
from .core.options import JobOptions
from .core.summary import TableResult, TableStatus, new_run_id, render
from .core.uris import split_s3
from .preflight import check_credentials, check_reachable, check_rest_catalog, check_summary_bucket

log = logging.getLogger("olake_cow")
MAX_PARALLELISM = 64  # tables at once; each holds a Spark thread and its py4j connection


class Exit(IntEnum):
    """The job's exit codes, the one place they are decided."""

    OK = 0  # every table merged, up to date, maintained (or planned, for --dry-run)
    TABLE_FAILED = 1  # a table failed (the others still ran), or the run itself failed
    BAD_INPUT = 2  # bad config, names or options, a missing namespace or table, a mode or format conflict


def exit_code(failures: Sequence[BaseException]) -> Exit:
    """The run's exit code from what went wrong (nothing: OK)."""
    if any(isinstance(e, BAD_INPUT_ERRORS) for e in failures):
        return Exit.BAD_INPUT
    return Exit.TABLE_FAILED if failures else Exit.OK


EPILOG = """exit codes:
  0  every table merged, was up to date, or was maintained (--dry-run: planned)
  1  a table failed (the others still ran) or the run failed; the summary says why
  2  bad input: config, names or options, a missing namespace or table, a source mode or
     mirror format the mirror was not built with; nothing was committed

examples:
  # mirror every table of a namespace, locally, from OLake's destination config
  python emr_job/main.py --destination-details destination.json --source-namespace sales
  # on EMR Serverless: the config from Secrets Manager, a summary in S3, maintenance after the merges
  spark-submit main.py --secret-id olake/destination --region us-east-1 --source-namespace sales \\
      --summary-out s3://bucket/olake-cow/summaries/sales/run.json --expire-mirror-older-than 168
"""


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line (the usage is in --help) and exit code 2, and an option
    that takes one value refused when given twice (argparse keeps the last one: `--source-namespace
    sales --source-namespace crm` would mirror crm without a word)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", None, _Once)
        self.register("action", "store", _Once)
        self.given: Dict[str, str] = {}

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self.given = {}
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> "NoReturn":
        self.exit(int(Exit.BAD_INPUT), f"{self.prog}: error: {message} (see --help)\n")


class _Once(argparse._StoreAction):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: Optional[str] = None) -> None:
        given = getattr(parser, "given", {})
        if self.dest in given:
            parser.error(f"{self.option_strings[0]} given twice ({given[self.dest]!r}, then {values!r}): "
                         "give it once")
        given[self.dest] = values
        super().__call__(parser, namespace, values, option_string)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="olake-cow", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Keep mirrors of OLake's merge-on-read Iceberg tables that engines without equality-delete "
                    "support (Databricks, Snowflake, ...) read correctly: every update and delete applied.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--destination-details", metavar="PATH",
                     help="OLake destination JSON ({'type':'ICEBERG','writer':{...}} or the writer)")
    src.add_argument("--secret-id", metavar="ID", help="the same JSON, from AWS Secrets Manager")
    p.add_argument("--source-namespace", required=True, metavar="NS",
                   help="namespace holding OLake's tables")
    p.add_argument("--cow-namespace", metavar="NS", help="mirror namespace (default <source>_cow)")
    p.add_argument("--cow-base-location", metavar="URI",
                   help="mirror base location (default <warehouse>/<cow-namespace>)")
    p.add_argument("--tables", metavar="A,B", help="tables to mirror (default: all in the namespace)")
    p.add_argument("--summary-out", metavar="PATH|s3://...", help="write a JSON run summary here")
    p.add_argument("--source-mode", choices=("readonly", "truncate"),
                   help="readonly (default for new mirrors): only read OLake's table and merge what changed "
                        "between two of its snapshots; truncate: truncate OLake's table to close each change set, "
                        "so it only keeps the changes since the last run. An existing mirror keeps the mode it "
                        "was built with; asking for the other one is an error")
    p.add_argument("--mirror-format", choices=("cow", "dv"),
                   help="cow (default for new mirrors): copy-on-write, format version 2, no delete files, readable "
                        "by every engine; dv: format version 3 with deletion vectors, a merge's cost follows its "
                        "changes (Databricks 18+, Snowflake, Trino, DuckDB, pyiceberg 0.12 read it; Athena and "
                        "StarRocks do not). An existing mirror keeps its format")
    p.add_argument("--upgrade-mirror", action="store_true",
                   help="with --mirror-format dv: upgrade an existing cow mirror in place to format version 3 "
                        "(cannot be undone)")
    p.add_argument("--resume-from-source", action="store_true",
                   help="truncate mode, once, after OLake's snapshots were expired past the mirror's checkpoint: "
                        "merge what OLake's table still holds into the mirror (its rows are kept) instead of "
                        "stopping; changes OLake's table no longer holds are missed, and the summary says so")
    p.add_argument("--keep-mirror-changes", action="store_true",
                   help="truncate mode, once, after the job refused a mirror someone committed to: keep those "
                        "commits (a GDPR delete, say) as the mirror's content and merge on from them; only for "
                        "commits made on the job's last commit, still in the mirror's history (a rollback, a "
                        "column or format change stay refused)")
    p.add_argument("--delete-mode", choices=[m.value for m in DeleteMode], default=DeleteMode.KEEP.value,
                   help="keep tombstone rows (_op_type='d') as the source shows them, or remove "
                        "their keys (hard); default keep")
    p.add_argument("--engine", choices=[e.value for e in Engine], default=Engine.AUTO.value,
                   help="auto (default): the python engine where it serves, Spark for the rest (the summary's "
                        "engine_reason says why); python: Arrow and pyiceberg, no JVM: readonly cow mirrors on "
                        "glue, jdbc (PostgreSQL) and rest catalogs (README, Engines), anything else refused; "
                        "spark: every table on Spark (EMR runs started by the trigger)")
    p.add_argument("--python-max-mb", type=int, default=DEFAULT_PYTHON_MAX_MB, metavar="MB",
                   help=f"the python engine's budget: the parquet MB a merge may read, from metadata (default "
                        f"{DEFAULT_PYTHON_MAX_MB}); over it a table goes to Spark (auto) or is refused (python)")
    p.add_argument("--hand-over", action="store_true",
                   help="with --engine python: report a table it leaves to Spark as handed_over (exit 0) instead "
                        "of refusing it; the express lane's merge function runs so, and the trigger starts an EMR "
                        "run for those tables")
    p.add_argument("--dry-run", action="store_true", help="print the plan per table; commit nothing")
    p.add_argument("--verify", action="store_true",
                   help="after the run, compare each mirror with its source resolved by Spark at the snapshot the "
                        "mirror holds (row count, missing and extra keys, differing rows); exit 1 on any "
                        "difference. Readonly mirrors only. A full scan of both tables")
    p.add_argument("--parallelism", type=int, default=4, metavar="N",
                   help="tables processed at once (default 4)")
    p.add_argument("--target-file-size-mb", type=int, metavar="MB",
                   help="mirror data file size (default 128 for new mirrors): a merge rewrites every file "
                        "holding a changed key, so smaller files make small change sets cheaper")
    p.add_argument("--spark-master", metavar="URL", help="local runs only (default local[*])")
    p.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                   help="extra Spark configuration (repeatable)")
    m = p.add_argument_group("maintenance (after the merges; off unless asked for)")
    m.add_argument("--expire-source-older-than", type=float, metavar="HOURS",
                   help="expire source snapshots older than this, never past the last merged boundary "
                        "(unmerged change sets are kept; a shorter retention is clamped)")
    m.add_argument("--expire-mirror-older-than", type=float, metavar="HOURS",
                   help="expire mirror snapshots older than this (the current one is always kept)")
    m.add_argument("--rewrite-manifests", action="store_true", help="rewrite the mirror's manifests")
    m.add_argument("--compact-files", action="store_true",
                   help="rewrite the mirror's small files, sorted by its sort order within partitions (and files "
                        "whose deletion vectors delete at least --fold-ratio of their rows)")
    m.add_argument("--fold-deletes", action="store_true",
                   help="dv mirrors: rewrite the data files whose deletion vectors delete at least --fold-ratio of "
                        "their rows, so reads stay fast")
    m.add_argument("--fold-ratio", type=float, metavar="RATIO",
                   help="the share of a data file's rows its deletion vector must delete for the file to be "
                        "rewritten (default 0.2)")
    m.add_argument("--remove-orphans-older-than", type=float, metavar="HOURS",
                   help="remove files of both tables that no snapshot references, older than this "
                        "(use at least the longest write you expect; 72 is a safe choice)")
    m.add_argument("--orphans-dry-run", action="store_true", help="list orphan files, remove nothing")
    m.add_argument("--maintenance-only", action="store_true", help="skip the merges; only maintain")
    p.add_argument("--region", metavar="REGION", help="AWS region for --secret-id / S3 summary")
    p.add_argument("--quiet", action="store_true", help="only warnings and errors")
    return p


def load_config(args: argparse.Namespace) -> DestinationConfig:
    for flag, value in (("--destination-details", args.destination_details), ("--secret-id", args.secret_id)):
        if value is not None and not value.strip():
            raise ConfigError(f"{flag} is empty: give " + ("the path of OLake's destination JSON"
                                                           if flag == "--destination-details" else
                                                           "the name or ARN of the secret holding it"))
    if args.destination_details is not None:
        try:
            with open(args.destination_details, "rb") as f:
                raw = f.read()
        except OSError as exc:
            raise ConfigError(f"cannot read --destination-details {args.destination_details}: "
                              f"{exc.strerror}") from None
        return parse_destination(raw)
    return parse_destination(read_secret(args.secret_id, args.region))


def _secret_refusal(exc: Exception, secret_id: str, client: Any) -> str:
    """Why Secrets Manager refused the secret, naming the two causes a user can fix at once: an ARN of
    another region than the client's, and a secret scheduled for deletion."""
    code = aws_error_code(exc)
    region = str(client.meta.region_name)
    arn_region = secret_id.split(":")[3] if secret_id.startswith("arn:") and secret_id.count(":") >= 6 else ""
    if code == "ResourceNotFoundException" and arn_region and arn_region != region:
        return f"no such secret in {region}: the ARN names {arn_region}; pass --region {arn_region}"
    if code == "InvalidRequestException" and _scheduled_for_deletion(client, secret_id):
        return ("it is scheduled for deletion; restore it (aws secretsmanager restore-secret) or store the "
                "destination again (make secret)")
    return {"ResourceNotFoundException": f"no such secret in {region}",
            "AccessDeniedException": "access denied"}.get(code, code or "refused")


def _scheduled_for_deletion(client: Any, secret_id: str) -> bool:
    try:
        return bool(client.describe_secret(SecretId=secret_id).get("DeletedDate"))
    except Exception:  # noqa: BLE001 - only a better message is at stake
        return False


def read_secret(secret_id: str, region: Optional[str]) -> str:
    """The secret's text; ConfigError with one line that says what to fix (never the value)."""
    import boto3  # available on EMR; only needed for --secret-id
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

    try:
        client = boto3.client("secretsmanager", region_name=region or os.environ.get("AWS_REGION") or None)
        value = client.get_secret_value(SecretId=secret_id)
    except NoRegionError:
        raise ConfigError(f"--secret-id {secret_id}: no AWS region; pass --region or set AWS_REGION") from None
    except NoCredentialsError:
        raise ConfigError(f"--secret-id {secret_id}: no AWS credentials found") from None
    except ClientError as exc:
        raise ConfigError(f"cannot read secret {secret_id!r}: {_secret_refusal(exc, secret_id, client)}") from None
    except BotoCoreError as exc:  # botocore's messages name the endpoint or setting, never the value
        raise ConfigError(f"cannot read secret {secret_id!r}: {exc}") from None
    return value.get("SecretString") or value.get("SecretBinary") or ""


def check_summary_out(target: Optional[str], config_file: Optional[str] = None) -> None:
    """Before Spark starts: a summary the run could not write is bad input, not a failed run; so is
    one that would overwrite the run's own config file (credentials and all)."""
    if not target:
        return
    if config_file and "://" not in target and os.path.realpath(target) == os.path.realpath(config_file):
        raise ConfigError(f"--summary-out {target} is the --destination-details file: the summary would overwrite "
                          "the config; write it elsewhere")
    scheme = target.split("://", 1)[0] if "://" in target else ""
    if scheme and scheme != "s3":
        raise ConfigError(f"--summary-out {target!r}: write s3://bucket/path/summary.json or a local path "
                          f"({scheme}:// is not supported)")
    if target.startswith("s3://"):
        _check_s3_summary_out(target)
    else:
        _check_local_summary_out(target)


def _check_s3_summary_out(target: str) -> None:
    bucket, key = split_s3(target)
    if not bucket or not key or key.endswith("/"):
        raise ConfigError(f"--summary-out {target!r} must name an object: s3://bucket/path/summary.json")
    if not S3_BUCKET.match(bucket):
        raise ConfigError(f"--summary-out {target!r}: {bucket!r} is not an S3 bucket name (lowercase letters, "
                          "digits, dots and hyphens)")
    if any(c.isspace() for c in key):
        raise ConfigError(f"--summary-out {target!r} contains a space")


def check_summary_place(target: Optional[str], cfg: DestinationConfig, job: JobOptions) -> None:
    """A summary never lands among tables' files: inside the warehouse (where OLake's tables and
    the hadoop catalog's metadata live) or the mirrors' base location, a file named like a table's
    next metadata file would make that table unreadable."""
    if not target:
        return
    places = [cfg.warehouse, job.cow_base_location or ""]
    here = _comparable(target if "://" in target or target.startswith("file:") else os.path.abspath(target))
    for place in places:
        folder = _comparable(place).rstrip("/") + "/" if place else ""
        if ("://" in folder or folder.startswith("/")) and here.startswith(folder):
            raise ConfigError(f"--summary-out {target} lies inside {place}, where tables keep their files: "
                              "write the summary outside the warehouse and the mirrors' location")


def check_local_namespace(cfg: DestinationConfig, job: JobOptions, tables: Optional[List[str]]) -> None:
    """The file-system catalog's namespace and tables are folders: one that is not there, or holds
    no table, is refused before Spark starts (the other catalogs answer once the run's catalog is up)."""
    if cfg.catalog_type != CatalogType.HADOOP:
        return
    warehouse = comparable_location(cfg.warehouse)
    ns = job.source_namespace
    folder = next((f for f in (os.path.join(warehouse, ns), os.path.join(warehouse, *ns.split(".")))
                   if os.path.isdir(f)), None)
    if folder is None:
        raise ConfigError(f"namespace {ns!r} does not exist in catalog {cfg.catalog_name!r} (no folder "
                          f"{os.path.join(warehouse, ns)})")
    held = [t for t in os.listdir(folder) if os.path.isdir(os.path.join(folder, t, "metadata"))]
    missing = [t for t in tables or () if t not in held]
    if missing:
        raise ConfigError(f"table {ns}.{missing[0]} does not exist in catalog {cfg.catalog_name!r}")
    if not held:
        raise ConfigError(f"namespace {ns!r} holds no tables: nothing to mirror")


def _comparable(location: str) -> str:
    """One spelling per place (core/identity.py), local paths with their links resolved."""
    spelled = comparable_location(location)
    return os.path.realpath(spelled) if spelled.startswith("/") else spelled


def _check_local_summary_out(target: str) -> None:
    parent = os.path.dirname(os.path.abspath(target))
    existing = parent
    while not os.path.exists(existing):  # nothing is created before the run: the nearest folder that exists
        existing = os.path.dirname(existing)
    if os.path.isdir(target) or not os.path.isdir(existing) or not os.access(existing, os.W_OK):
        raise ConfigError(f"--summary-out {target} is not a writable file path")
    whole = len(os.path.abspath(target).encode()) + len(".tmp")
    if whole >= os.pathconf(existing, "PC_PATH_MAX"):
        raise ConfigError(f"--summary-out {target[:60]}...: the path is longer than the file system allows "
                          f"({whole - 4} bytes; at most {os.pathconf(existing, 'PC_PATH_MAX') - 5})")
    if any(len(part.encode()) > os.pathconf(existing, "PC_NAME_MAX") for part in parent.split(os.sep)):
        raise ConfigError(f"--summary-out {target[:60]}...: a folder name is longer than the file system allows")
    parent = existing
    # written through a `.tmp` beside it: the longer name must fit the file system too
    longest = len(os.path.basename(target).encode()) + len(".tmp")
    if longest > os.pathconf(parent, "PC_NAME_MAX"):
        raise ConfigError(f"--summary-out {target[:60]}...: the file name is longer than the file system allows "
                          f"({longest - 4} bytes; at most {os.pathconf(parent, 'PC_NAME_MAX') - 4})")


@dataclass(frozen=True)
class RunSettings:
    """Everything a run needs, checked before Spark starts."""

    cfg: DestinationConfig
    job: JobOptions
    tables: Optional[List[str]]  # None: every table of the source namespace
    spark_conf: Dict[str, str]
    master: Optional[str]
    summary_out: Optional[str]
    engine: Engine  # --engine (its default is the parser's)
    budget: Budget = field(default_factory=Budget)
    hand_over: bool = False  # --hand-over


def _namespaces(args: argparse.Namespace, catalog_type: CatalogType) -> Tuple[str, str]:
    """(source namespace, mirror namespace), checked."""
    src = check_for_catalog(catalog_type, "source namespace", validate_name("source namespace", args.source_namespace))
    if args.cow_namespace is None:  # given a mirror namespace of its own, a source may end with _cow
        check_source_namespace(src)  # (a table there that is a mirror is refused: identity.source_problem)
    if args.cow_namespace is not None and not args.cow_namespace.strip():
        raise ConfigError("--cow-namespace is empty: omit it for the default <source>_cow, or name the mirror "
                          "namespace")
    cow = args.cow_namespace or src + MIRROR_NAMESPACE_SUFFIX
    cow = check_for_catalog(catalog_type, "cow namespace", validate_name("cow namespace", cow))
    if cow == src:
        raise ConfigError("--cow-namespace must differ from --source-namespace")
    return src, cow


def _base_location(given: Optional[str], cfg: DestinationConfig, cow: str) -> Optional[str]:
    """Where new mirrors go (None: the catalog chooses)."""
    base = given.rstrip("/") if given else None
    default_base = f"{cfg.warehouse}/{cow}"
    if cfg.catalog_type == CatalogType.HADOOP:
        if base and base != default_base:
            raise ConfigError(f"the hadoop catalog places tables itself; --cow-base-location must be "
                              f"{default_base} or omitted")
        return None
    if base is None:
        # A REST warehouse name (no URI, no path): let the catalog choose locations.
        if cfg.catalog_type == CatalogType.REST and not ("://" in cfg.warehouse or cfg.warehouse.startswith("/")):
            return None
        base = default_base
    if "://" not in base and not base.startswith("/"):
        raise ConfigError(f"--cow-base-location {base!r} must be a URI (s3://...) or absolute path")
    if given:  # as given (a namespace's own name may hold a space)
        check_location("--cow-base-location", base)
    return base


def _tables(text: Optional[str], catalog_type: CatalogType) -> Optional[List[str]]:
    if text is None:
        return None
    tables = [t.strip() for t in text.split(",") if t.strip()]
    if not tables:
        raise ConfigError("--tables is empty")
    for t in tables:
        check_for_catalog(catalog_type, "table", validate_name("table", t), MIRROR_SUFFIX)
    twice = sorted({t for t in tables if tables.count(t) > 1})
    if twice:
        raise ConfigError(f"--tables names {', '.join(repr(t) for t in twice)} more than once")
    return tables


def _check_ranges(args: argparse.Namespace) -> None:
    if not 1 <= args.parallelism <= MAX_PARALLELISM:
        raise ConfigError(f"--parallelism must be from 1 to {MAX_PARALLELISM}, got {args.parallelism}")
    if args.target_file_size_mb is not None and not 1 <= args.target_file_size_mb <= MAX_FILE_SIZE_MB:
        # Stored on the mirror as write.target-file-size-bytes: a value Java's long cannot hold would
        # break every later run of the mirror, with or without this flag.
        raise ConfigError(f"--target-file-size-mb must be from 1 to {MAX_FILE_SIZE_MB} (MB), got "
                          f"{args.target_file_size_mb}")
    upgrades = sorted(r.upgrades_to.value for r in FORMATS.values() if r.upgrades_to)
    if args.upgrade_mirror and args.mirror_format not in upgrades:
        raise ConfigError(f"--upgrade-mirror needs --mirror-format {' or '.join(upgrades)}")


# Spark masters a local run can start (EMR Serverless sets its own): a bogus one is a Java stack trace.
_SPARK_MASTER = re.compile(r"^(local(\[(\*|[1-9][0-9]*)(,[0-9]+)?\])?|local-cluster\[[0-9]+,[0-9]+,[0-9]+\]"
                           r"|spark://[^\s/]+(:[0-9]+)?(,[^\s/]+(:[0-9]+)?)*|yarn|k8s://\S+)$")


def _spark_conf(items: Sequence[str], catalog_name: str) -> Dict[str, str]:
    from .spark.session import ICEBERG_EXTENSIONS

    extra = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--spark-conf {item!r} is not KEY=VALUE")
        key = key.strip()
        if key == f"spark.sql.catalog.{catalog_name}" or key.startswith(f"spark.sql.catalog.{catalog_name}."):
            raise ConfigError(f"--spark-conf {key}: the catalog {catalog_name!r} is set from the destination config; "
                              "change it there (a second setting here would point the run at another catalog)")
        if key == "spark.sql.extensions" and ICEBERG_EXTENSIONS not in value:
            raise ConfigError(f"--spark-conf spark.sql.extensions={value!r} leaves out {ICEBERG_EXTENSIONS}, which "
                              "every run needs (its procedures and MERGE): add yours after a comma")
        if key == "spark.master" and not _SPARK_MASTER.match(value.strip()):
            raise ConfigError(f"--spark-conf spark.master={value!r} is not a Spark master (local[*], local[N], "
                              "spark://host:port, yarn, k8s://...)")
        extra[key] = value
    return extra


def _check_master(master: Optional[str]) -> None:
    if master is not None and not _SPARK_MASTER.match(master.strip()):
        raise ConfigError(f"--spark-master {master!r} is not a Spark master (local[*], local[N], "
                          "local-cluster[N,C,MB], spark://host:port)")


def job_options(args: argparse.Namespace, cfg: DestinationConfig) -> Tuple[JobOptions, Optional[List[str]]]:
    """(the job's options, the tables asked for) from the parsed command line: what the trigger's
    request becomes (core/job_request.py), checked without touching anything."""
    src, cow = _namespaces(args, cfg.catalog_type)
    base = _base_location(args.cow_base_location, cfg, cow)
    tables = _tables(args.tables, cfg.catalog_type)
    _check_ranges(args)
    maintenance = MaintenanceOptions(args.expire_source_older_than, args.expire_mirror_older_than,
                                     args.rewrite_manifests, args.compact_files, args.remove_orphans_older_than,
                                     args.orphans_dry_run, args.maintenance_only, args.fold_deletes,
                                     args.fold_ratio).validate()
    asked = parse_format(args.mirror_format)
    if args.fold_deletes and asked is not None and not FORMATS[asked].folds_deletes:
        raise ConfigError("--fold-deletes folds deletion vectors, which only dv mirrors have: with --mirror-format "
                          f"{asked.value} it would do nothing (use --compact-files)")
    if args.keep_mirror_changes and parse_mode(args.source_mode) == SourceMode.READONLY:
        raise ConfigError("--keep-mirror-changes keeps changes to a truncate mirror, the only complete copy; a "
                          "readonly mirror equals OLake's table and is rebuilt from it")
    job = JobOptions(src, cow, base, DeleteMode(args.delete_mode), args.dry_run, args.parallelism, "", maintenance,
                     args.target_file_size_mb, source_mode=parse_mode(args.source_mode),
                     mirror_format=parse_format(args.mirror_format), upgrade_mirror=args.upgrade_mirror,
                     verify=args.verify, resume_from_source=args.resume_from_source,
                     keep_mirror_changes=args.keep_mirror_changes)
    return job, tables


MAX_PYTHON_MB = 10_240  # the most memory a Lambda has


def check_engine(args: argparse.Namespace, cfg: DestinationConfig, job: JobOptions) -> None:
    """`--engine python` asked for what it does not serve: one line before anything is read."""
    if not 0 <= args.python_max_mb <= MAX_PYTHON_MB:  # 0: every merge goes to Spark
        raise ConfigError(f"--python-max-mb must be from 0 to {MAX_PYTHON_MB}, got {args.python_max_mb}")
    if args.engine != Engine.PYTHON:
        if args.hand_over:
            raise ConfigError(f"--hand-over is for --engine python (the express lane), not --engine {args.engine}")
        return
    fmt = job.mirror_format
    asked = [flag for flag, on in (("--source-mode truncate", job.source_mode == SourceMode.TRUNCATE),
                                    (f"--mirror-format {fmt and fmt.value}",
                                     fmt is not None and not FORMATS[fmt].python_engine),
                                    ("--verify", job.verify),
                                    ("maintenance", job.maintenance.requested or job.maintenance.only)) if on]
    why = python_unavailable(cfg) or (f"the python engine does not serve {asked[0]}" if asked else None)
    if why:
        raise EngineError(f"{why}: {SPARK_WAY}")


def python_unavailable(cfg: DestinationConfig) -> Optional[str]:
    """Why the python engine cannot run here at all (None: it can): the destination's catalog, or a
    process without its libraries (the job's EMR package carries no pyiceberg)."""
    from importlib.util import find_spec

    missing = [m for m in ("pyiceberg", "pyarrow") if find_spec(m) is None]
    return engine_refusal(cfg) or (f"{missing[0]} is not installed here, and the python engine needs it"
                                   if missing else None)


def resolve_options(args: argparse.Namespace, cfg: DestinationConfig) -> RunSettings:
    """The run's settings from the command line and the destination config, every input checked
    before Spark starts (ConfigError naming what is wrong)."""
    job, tables = job_options(args, cfg)
    check_engine(args, cfg, job)
    extra = _spark_conf(args.spark_conf, cfg.catalog_name)
    _check_master(args.spark_master)
    check_summary_out(args.summary_out, args.destination_details)
    check_summary_place(args.summary_out, cfg, job)
    if args.engine != Engine.PYTHON:  # the merge function (lambda/olake_merge) has no pyspark
        from .spark.session import launch_conf, under_spark_submit

        launch_conf(cfg, not under_spark_submit(), args.spark_master, extra)  # JDBC driver, runtime jar
    check_credentials(cfg)
    check_rest_catalog(cfg)
    check_reachable(cfg)
    check_summary_bucket(args.summary_out, args.region)
    check_local_namespace(cfg, job, tables)
    return RunSettings(cfg, job, tables, extra, args.spark_master, args.summary_out, Engine(args.engine),
                       Budget(args.python_max_mb * MB, first_builds=not args.hand_over), args.hand_over)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    return int(run(args)[0])


def run(args: argparse.Namespace) -> Tuple[Exit, Optional[Dict[str, Any]]]:
    """(the exit code, the run's summary; None when the input was refused before the run)."""
    secrets: List[str] = []
    try:
        cfg = load_config(args)
        secrets = cfg.secret_values()
        settings = resolve_options(args, cfg)
    except OlakeCowError as exc:
        print(f"olake-cow: error: {redact(str(exc), secrets)}", file=sys.stderr)
        return exit_code([exc]), None
    return _run(settings)


def _run(s: RunSettings) -> Tuple[Exit, Dict[str, Any]]:
    from .core.summary import RunStatus

    cfg, secrets = s.cfg, s.cfg.secret_values()
    job = replace(s.job, run_id=new_run_id())
    started = time.time()
    summary: Dict[str, Any] = {
        "run_id": job.run_id, "started_at": _iso(started), "catalog": cfg.public_view(), "version": __version__,
        "source_namespace": job.source_namespace, "cow_namespace": job.cow_namespace,
        "delete_mode": str(job.delete_mode),
        "dry_run": job.dry_run, "tables": [], "dropped_sources": [], "status": RunStatus.FAILED.value, "error": None,
    }
    failures: List[BaseException] = []
    try:
        whole = python_unavailable(cfg) if s.engine == Engine.AUTO else None  # --engine python: checked
        if whole:
            log.info("run %s: the Spark engine runs every table: %s", job.run_id, whole)
        results, handed = _python_first(s, job, summary) if s.engine != Engine.SPARK and not whole else ([], None)
        if handed is None or handed:  # None: every asked table goes to Spark
            results += _on_spark(s, job, handed, summary, whole)
        summary["tables"] = [r.to_dict() for r in results]
        failures = [r.failure or OlakeCowError(r.error or r.status.value) for r in results if not r.ok]
        summary["status"] = (RunStatus.FAILED if failures else RunStatus.SUCCEEDED).value
    except Exception as exc:  # noqa: BLE001 - the summary must still be written
        exc = refused_by_catalog(with_type(exc), cfg) or exc
        summary["error"] = redact(error_text(exc), secrets)
        failures = [exc]
    summary["finished_at"] = _iso(time.time())
    summary["duration_s"] = round(time.time() - started, 3)
    if summary["error"]:
        print(f"olake-cow: error: {summary['error']}", file=sys.stderr)
    _print_table(summary)
    code = exit_code(failures)
    if s.summary_out:
        try:
            write_summary(summary, s.summary_out)
        except Exception as exc:  # noqa: BLE001 - reported, and the run counts as failed
            print(f"olake-cow: cannot write summary to {s.summary_out}: {redact(error_text(exc), secrets)}",
                  file=sys.stderr)
            code = max(code, Exit.TABLE_FAILED)
    return code, summary


def _python_first(s: RunSettings, job: JobOptions,
                  summary: Dict[str, Any]) -> Tuple[List[TableResult], Optional[Dict[str, str]]]:
    """(results of the tables the python engine ran, {table: why} of those left to Spark; None: all
    of them). With --engine python a table it hands over fails with the reason (exit 2). A run of the
    whole namespace that Spark will not join names the sources dropped (as _on_spark does)."""
    from .python_engine.catalog import dropped_sources, opened_catalog, require_namespace, source_tables
    from .python_engine.table_run import run_python_tables

    with opened_catalog(s.cfg) as catalog:
        if s.tables is not None:
            require_namespace(catalog, job.source_namespace)
        tables = s.tables if s.tables is not None else source_tables(catalog, job.source_namespace)
        log.info("run %s: %d table(s) in %s -> %s on the python engine%s", job.run_id, len(tables),
                 job.source_namespace, job.cow_namespace, " (dry run)" if job.dry_run else "")
        results, handed = run_python_tables(catalog, s.cfg, job, tables, s.budget)
        if s.tables is None and (s.engine == Engine.PYTHON or not handed):
            summary["dropped_sources"] = dropped_sources(catalog, job.source_namespace, job.cow_namespace, tables)
    for table, reason in handed:
        log.info("[%s] %s", table, reason if s.engine == Engine.AUTO else f"refused: {reason}")
    if s.engine == Engine.PYTHON:
        for table, reason in handed:
            res = TableResult(table=table, mirror=f"{job.cow_namespace}.{table}{MIRROR_SUFFIX}",
                              engine=Engine.PYTHON.value, engine_reason=reason)
            if s.hand_over:
                res.status = TableStatus.HANDED_OVER
            else:
                res.fail(EngineError(reason), f"the python engine leaves this table to Spark: {reason}; {SPARK_WAY}")
            results.append(res)
        return results, {}
    return results, dict(handed)


def short_process() -> None:
    """For the job's own process (main.py), one per run: pyarrow imports NumPy whenever it is
    installed, 0.13 s of a python-engine run that never uses it (the express lane's function ships
    without it); and the cyclic garbage collector's passes over the objects of ~700 imported modules
    cost about 0.1 s of a 1.4 s sync, where a python-engine run makes little cyclic garbage (a 1M-row
    first build peaks at 700-717 MB either way: docs/BENCHMARKS.md). main.py turns the collector off
    before its first import. Both are back before Spark starts (_on_spark)."""
    if "pyarrow" not in sys.modules:
        sys.modules.setdefault("numpy", None)  # type: ignore[arg-type]  # None: "import numpy" fails


def _before_spark() -> None:
    if sys.modules.get("numpy", False) is None:
        del sys.modules["numpy"]
    gc.enable()


def _on_spark(s: RunSettings, job: JobOptions, handed: Optional[Dict[str, str]], summary: Dict[str, Any],
              whole: Optional[str] = None) -> List[TableResult]:
    """The results of the tables the python engine `handed` over ({table: why}; None: the asked
    tables, for the reason `whole` under auto) on the Spark engine."""
    _before_spark()
    from .spark.catalog import IcebergCatalog
    from .spark.runner import dropped_sources, run_tables
    from .spark.session import build_session

    cfg = s.cfg
    session = build_session(cfg, f"olake-cow {job.source_namespace}", s.master, s.spark_conf)
    catalog = IcebergCatalog(session, cfg.catalog_name)  # the run's one, shared by its tables
    if cfg.catalog_type == CatalogType.REST and catalog.served_by_nessie():
        raise nessie_refusal(cfg.catalog_name, "its server's config says nessie.is-nessie-catalog")
    tables = list(handed) if handed is not None else s.tables
    if handed is None and tables is not None and not catalog.namespace_exists(job.source_namespace):
        raise catalog.namespace_missing(job.source_namespace)  # the python engine checked it before handing over
    names = tables if tables is not None else catalog.list_tables(job.source_namespace)
    log.info("run %s: %d table(s) in %s -> %s%s", job.run_id, len(names), job.source_namespace,
             job.cow_namespace, " (dry run)" if job.dry_run else "")
    results = run_tables(session, cfg, job, names, catalog)
    for r in results:
        r.engine_reason = (handed or {}).get(r.table, r.engine_reason or whole or "")
    if s.tables is None:  # against every source of the namespace, not only those handed over
        present = names if handed is None else catalog.list_tables(job.source_namespace)
        summary["dropped_sources"] = dropped_sources(catalog, job, present)
    return results


def _print_table(summary: Dict[str, Any]) -> None:
    rows = summary["tables"]
    if not rows:
        return
    print(f"{'table':<28} {'status':<13} {'mode':<8} {'merges':>6} {'upserted':>9} {'deleted':>8} "
          f"{'files':>6} {'secs':>7}  error")
    for r in rows:
        print(f"{r['table'][:28]:<28} {r['status']:<13} {r['source_mode'] or '-':<8} {r['merges']:>6} "
              f"{r['rows_upserted']:>9} {r['rows_deleted']:>8} {r['files_written']:>6} "
              f"{r['duration_s']:>7.1f}  {r['error'] or ''}")
        for line in r.get("plan") or []:
            print(f"    plan: {line}")


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def write_summary(summary: Dict[str, Any], target: str) -> None:
    text = render(summary)
    if target.startswith("s3://"):
        import boto3  # provided on EMR; only needed for S3 targets

        bucket, key = split_s3(target)
        boto3.client("s3").put_object(Bucket=bucket, Key=key, Body=text.encode("utf-8"),
                                      ContentType="application/json")
        return
    parent = os.path.dirname(os.path.abspath(target))
    os.makedirs(parent, exist_ok=True)
    tmp = target + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, target)
