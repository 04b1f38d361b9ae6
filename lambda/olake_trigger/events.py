"""Classifies the events the trigger accepts into small records. Pure: no AWS calls.

Accepted:
- S3 "Object Created" (via EventBridge) for `<warehouse>/<namespace>[.db]/<table>[-<uuid>]/metadata/*.metadata.json`
- EMR Serverless "Job Run State Change" (via EventBridge)
- the express lane's end: the merge function's asynchronous-invocation destination record
  (`requestContext`, `requestPayload` {"olake_cow_lane": ...}, `responsePayload`)
- a schedule: `{"trigger": "schedule", "namespaces": [...], "tables": {ns: [...]}, "window": "...", "force": false,
  "maintenance": {...}, "source_mode": "readonly", "mirror_format": "cow"}`, bare or as the `detail` of an
  EventBridge "Scheduled Event"
- the debounce timer this Lambda sets: `{"trigger": "debounce", "namespace": "..."}`
- direct invocation: `{"namespace": "...", "tables": [...], "dry_run": false, "force": false, "maintenance": {...},
  "source_mode": "readonly", "mirror_format": "cow", "verify": false}`
  ("maintenance": the job's maintenance options by name, e.g. `{"expire_source_hours": 24, "compact_files": true}`)
"""
import re
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Iterator, Mapping, Optional, Tuple, Union
from urllib.parse import unquote_plus

from olake_cow.core.config import CatalogType
from olake_cow.core.errors import OlakeCowError
from olake_cow.core.identifiers import MIRROR_SUFFIX, check_for_catalog, validate_name
from olake_cow.core.job_request import FINAL_STATES
from olake_cow.core.lane import LaneRequest, is_lane_payload, parse_lane_request
from olake_cow.core.maintenance import MaintenanceOptions, options_from_payload
from olake_cow.core.modes import MirrorFormat, SourceMode, parse_format, parse_mode

from .decide import AllTables, PendingTables, Tables, TableSelection
from .jobs import RunOptions
from .settings import Settings

# Some catalogs suffix table folders with a UUID: <table>-<uuid>.
_TABLE_DIR = re.compile(r"^(?P<table>.+?)(-[0-9a-f]{32}|-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12})?$")
_DIRECT_KEYS = {"namespace", "tables", "dry_run", "force", "trigger", "maintenance", "source_mode", "mirror_format",
                "verify"}
_SCHEDULE_KEYS = {"trigger", "namespaces", "tables", "window", "force", "maintenance", "source_mode", "mirror_format"}


class EventError(OlakeCowError):
    """The event is not one the trigger accepts; the message says what is wrong."""


@contextmanager
def _as_event_error() -> Iterator[None]:
    """The core's refusal (OlakeCowError) of a value in an event, as an EventError with its text."""
    try:
        yield
    except OlakeCowError as exc:
        raise EventError(str(exc)) from None


@dataclass(frozen=True)
class Commit:
    """A metadata commit of a source table (one per table per OLake sync)."""

    namespace: str
    table: str
    bucket: str
    key: str
    event_id: str


@dataclass(frozen=True)
class Ignored:
    reason: str


@dataclass(frozen=True)
class Refused:
    """A commit of a table no run could mirror (a name the catalog refuses): counted, never started."""

    namespace: str
    reason: str


@dataclass(frozen=True)
class RunRequest:
    """Start mirror runs for these namespaces, each on a selection of its tables, as `options` say
    (the one record that goes on to the job's request, jobs.job_request)."""

    targets: Tuple[Tuple[str, TableSelection], ...]
    window: str  # what makes a retried invocation recognisable (client token)
    options: RunOptions

    @property
    def trigger(self) -> str:  # schedule | direct | debounce
        return self.options.trigger


@dataclass(frozen=True)
class JobStateChange:
    application_id: str
    job_run_id: str
    state: str
    event_id: str

    @property
    def terminal(self) -> bool:
        return self.state in FINAL_STATES


@dataclass(frozen=True)
class LaneEnd:
    """The merge function's end: its asynchronous invocation's destination record (on success or
    on failure), carrying the request it was given and what it answered."""

    request: LaneRequest
    succeeded: bool  # condition "Success": the function returned
    response: Mapping[str, Any]  # its answer (on failure: Lambda's error record)
    invocations: int  # approximateInvokeCount (2: it was retried)


Event = Union[Commit, Ignored, Refused, RunRequest, JobStateChange, LaneEnd]


def classify(event: Any, settings: Settings, warehouse: Optional[str], request_id: str,
             catalog_type: Optional[CatalogType] = None) -> Event:
    """`catalog_type`: the destination's, whose name rules a commit's table must meet (None: no check)."""
    ev = _classify(event, settings, warehouse, request_id, catalog_type)
    if isinstance(ev, RunRequest) and ev.trigger == "schedule" and settings.source_expiry_hours is not None:
        # Source expiry writes OLake's tables: only the stack parameter SourceExpiryHours asks for it.
        maintenance = replace(ev.options.maintenance, expire_source_hours=settings.source_expiry_hours)
        ev = replace(ev, options=replace(ev.options, maintenance=maintenance))
    return ev


def _classify(event: Any, settings: Settings, warehouse: Optional[str], request_id: str,
              catalog_type: Optional[CatalogType]) -> Event:
    """`warehouse`: where table folders live (the config's warehouse), for mapping S3 keys."""
    if not isinstance(event, Mapping):
        raise EventError(f"the event must be a JSON object, got {type(event).__name__}")
    if "requestContext" in event and is_lane_payload(event.get("requestPayload")):
        return _lane_end(event)
    source, detail_type = event.get("source"), event.get("detail-type")
    if source == "aws.s3":
        if detail_type != "Object Created":
            return Ignored(f"S3 event {detail_type!r} is not an object creation")
        return _commit(event, settings, warehouse, catalog_type)
    if source == "aws.emr-serverless":
        if detail_type != "EMR Serverless Job Run State Change":
            return Ignored(f"EMR Serverless event {detail_type!r} is not a job run state change")
        detail = _mapping(event.get("detail"), "detail")
        return JobStateChange(_text(detail, "applicationId"), _text(detail, "jobRunId"),
                              _text(detail, "state").upper(), str(event.get("id") or ""))
    if detail_type == "Scheduled Event":
        payload = dict(_mapping(event.get("detail"), "detail"))
        payload.setdefault("trigger", "schedule")
        payload.setdefault("window", str(event.get("time") or ""))
        return _schedule(payload, request_id)
    if source is not None or detail_type is not None:
        raise EventError(f"unsupported event: source {source!r}, detail-type {detail_type!r}; "
                         "expected S3 Object Created, EMR Serverless Job Run State Change, "
                         "a schedule or a direct invocation")
    return _invocation(event, request_id)


def _lane_end(event: Mapping[str, Any]) -> LaneEnd:
    context = _mapping(event.get("requestContext"), "requestContext")
    with _as_event_error():
        request = parse_lane_request(event["requestPayload"])
    response = event.get("responsePayload")
    count = context.get("approximateInvokeCount")
    return LaneEnd(request, context.get("condition") == "Success", response if isinstance(response, Mapping) else {},
                   count if isinstance(count, int) else 1)


def _invocation(event: Mapping[str, Any], request_id: str) -> Event:
    """A direct invocation: a schedule's payload, a debounce timer's, or a user's request."""
    trigger = event.get("trigger", "direct")
    if trigger == "schedule":
        return _schedule(event, request_id)
    if trigger == "debounce":
        ns = _name("namespace", event.get("namespace"))
        return RunRequest(((ns, PendingTables()),), str(event.get("window") or request_id), RunOptions("debounce"))
    if trigger == "direct":
        return _direct(event, request_id)
    raise EventError(f"unknown trigger {trigger!r}; expected schedule, debounce or direct")


def _commit(event: Mapping[str, Any], settings: Settings, warehouse: Optional[str],
            catalog_type: Optional[CatalogType]) -> Event:
    detail = _mapping(event.get("detail"), "detail")
    bucket = _text(_mapping(detail.get("bucket"), "detail.bucket"), "name")
    # S3 sends keys form-encoded (a space as '+', a '+' as '%2B', UTF-8 as %XX).
    key = unquote_plus(_text(_mapping(detail.get("object"), "detail.object"), "key"))
    parts = key.split("/")
    if len(parts) < 4 or parts[-2] != "metadata" or not parts[-1].endswith(".metadata.json"):
        return Ignored(f"s3://{bucket}/{key} is not an Iceberg metadata file")
    prefixes = [loc for loc in (warehouse, settings.warehouse_location) if loc]
    rel = None
    for loc in prefixes:
        rel = _relative(loc, bucket, key)
        if rel is not None:
            break
    if rel is None:
        return Ignored(f"s3://{bucket}/{key} is outside the warehouse")
    mirror_base = settings.cow_base_location
    if mirror_base and _relative(mirror_base, bucket, key) is not None:
        return Ignored(f"s3://{bucket}/{key} is under the mirror location")
    rel_parts = rel.split("/")
    if len(rel_parts) != 4:
        return Ignored(f"s3://{bucket}/{key} is not <namespace>/<table>/metadata/<file> under the warehouse")
    ns_dir, table_dir = rel_parts[0], rel_parts[1]
    namespace = ns_dir[:-3] if ns_dir.endswith(".db") else ns_dir
    match = _TABLE_DIR.match(table_dir)
    table = match.group("table") if match else table_dir
    if not settings.watches(namespace):
        return Ignored(f"namespace {namespace!r} is not a watched source namespace")
    if catalog_type:
        try:
            check_for_catalog(catalog_type, "table", validate_name("table", table), MIRROR_SUFFIX)
        except OlakeCowError as exc:
            return Refused(namespace, f"s3://{bucket}/{key}: {exc}; no run can mirror it")
    return Commit(namespace, table, bucket, key, str(event.get("id") or f"{bucket}/{key}"))


def _relative(location: str, bucket: str, key: str) -> Optional[str]:
    loc = re.sub(r"^s3[an]?://", "", location.strip()).rstrip("/")
    loc_bucket, _, prefix = loc.partition("/")
    if loc_bucket != bucket:
        return None
    if not prefix:
        return key
    return key[len(prefix) + 1:] if key.startswith(prefix + "/") else None


def _schedule(payload: Mapping[str, Any], request_id: str) -> RunRequest:
    unknown = set(payload) - _SCHEDULE_KEYS
    if unknown:
        raise EventError(f"schedule input has unknown key(s): {', '.join(sorted(unknown))}")
    namespaces = payload.get("namespaces")
    if isinstance(namespaces, str):
        namespaces = [namespaces]
    if not isinstance(namespaces, list) or not namespaces:
        raise EventError("schedule input needs 'namespaces': a non-empty list of namespace names")
    tables = payload.get("tables") or {}
    if not isinstance(tables, Mapping):
        raise EventError("schedule input 'tables' must map a namespace to a list of table names")
    names = [_name("namespace", n) for n in namespaces]
    extra = set(tables) - set(names)
    if extra:
        raise EventError(f"schedule input 'tables' names namespace(s) not in 'namespaces': {sorted(extra)}")
    targets = tuple((ns, _tables(tables.get(ns))) for ns in dict.fromkeys(names))
    return RunRequest(targets, str(payload.get("window") or request_id),
                      RunOptions("schedule", force=_flag(payload, "force"), maintenance=_maintenance(payload),
                                 source_mode=_source_mode(payload), mirror_format=_mirror_format(payload)))


def _direct(payload: Mapping[str, Any], request_id: str) -> RunRequest:
    unknown = set(payload) - _DIRECT_KEYS
    if unknown:
        raise EventError(f"direct invocation has unknown key(s): {', '.join(sorted(unknown))}; "
                         "expected namespace, tables, dry_run, force, maintenance, source_mode, mirror_format, verify")
    if "namespace" not in payload:
        raise EventError("direct invocation needs 'namespace'")
    ns = _name("namespace", payload.get("namespace"))
    verify = _flag(payload, "verify")  # asked for its own sake: no check of what is new first
    return RunRequest(((ns, _tables(payload.get("tables"))),), request_id,
                      RunOptions("direct", force=_flag(payload, "force") or verify, dry_run=_flag(payload, "dry_run"),
                                 maintenance=_maintenance(payload), source_mode=_source_mode(payload),
                                 mirror_format=_mirror_format(payload), verify=verify))


def _source_mode(payload: Mapping[str, Any]) -> Optional[SourceMode]:
    with _as_event_error():
        return parse_mode(payload.get("source_mode"), "'source_mode'")


def _mirror_format(payload: Mapping[str, Any]) -> Optional[MirrorFormat]:
    with _as_event_error():
        return parse_format(payload.get("mirror_format"), "'mirror_format'")


SOURCE_EXPIRY_REFUSED = (
    "'maintenance.expire_source_hours' is not accepted in a request: source expiry writes OLake's tables "
    "(commits to them and deletes the files of expired snapshots). Ask for it with the stack parameter "
    "SourceExpiryHours (environment SOURCE_EXPIRY_HOURS), which the periodic runs then apply")


def _maintenance(payload: Mapping[str, Any]) -> MaintenanceOptions:
    value = payload.get("maintenance")
    if isinstance(value, Mapping) and value.get("expire_source_hours") is not None:
        raise EventError(SOURCE_EXPIRY_REFUSED)
    with _as_event_error():
        return options_from_payload(value)


def check_request(ev: RunRequest, settings: Settings, catalog_type: CatalogType) -> None:
    """EventError for a request no run could carry out, found before a run is started and billed: a
    namespace the stack does not mirror (or a mirror namespace), a name the catalog cannot hold, a
    source mode other than the stack's (the job role's access to OLake's tables follows it)."""
    for namespace, _ in ev.targets:
        if namespace.endswith(settings.cow_suffix):
            raise EventError(f"namespace {namespace!r} is a mirror namespace (it ends with {settings.cow_suffix!r}); "
                             f"name OLake's namespace ({namespace[:-len(settings.cow_suffix)]!r})")
        if not settings.watches(namespace):
            raise EventError(f"namespace {namespace!r} is not one of this stack's source namespaces "
                             f"({', '.join(settings.source_namespaces)}); add it to the stack parameter "
                             "SourceNamespaces to mirror it")
    with _as_event_error():
        for namespace, tables in ev.targets:
            check_for_catalog(catalog_type, "namespace", namespace)
            check_for_catalog(catalog_type, "namespace", namespace + settings.cow_suffix)
            for table in tables.names if isinstance(tables, Tables) else ():
                check_for_catalog(catalog_type, "table", table, MIRROR_SUFFIX)
    stack_mode = settings.source_mode
    asked = ev.options.source_mode
    if asked and stack_mode and asked != stack_mode:
        raise EventError(f"'source_mode' {asked.value!r}: this stack runs in {stack_mode.value} mode (stack "
                         "parameter SourceMode), and a request cannot change it"
                         + (": truncate writes OLake's tables, which the job role may not" if
                            asked == SourceMode.TRUNCATE else ""))


def _tables(value: Any) -> TableSelection:
    if value is None:
        return AllTables()
    if isinstance(value, str):
        value = [t for t in value.split(",") if t.strip()]
    if not isinstance(value, list) or not value:
        raise EventError("'tables' must be a non-empty list of table names (or omitted for all tables)")
    return Tables(tuple(dict.fromkeys(_name("table", t) for t in value)))


def _name(kind: str, value: Any) -> str:
    if not isinstance(value, str):
        raise EventError(f"{kind} must be a string, got {type(value).__name__}")
    with _as_event_error():
        return validate_name(kind, value.strip())


def _flag(payload: Mapping[str, Any], key: str) -> bool:
    value = payload.get(key, False)
    if not isinstance(value, bool):
        raise EventError(f"'{key}' must be true or false, got {value!r}")
    return value


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise EventError(f"event field '{where}' is missing or not an object")
    return value


def _text(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise EventError(f"event field '{key}' is missing or empty")
    return value

