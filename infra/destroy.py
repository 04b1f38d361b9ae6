"""Removes an olake-cow deployment: the stack (`sam delete`) and the trigger's pending debounce
schedules (in the stack's own schedule group, <stack>-debounce, so another stack's are never
touched). OLake's tables are never touched. What the stack does not own stays unless asked for:

  --remove-artifacts       the job's code, run summaries and job logs: only the code/, summaries/ and logs/
                           folders of s3://<ArtifactsBucket>/<ArtifactsPrefix>/, and only when that location
                           carries this stack's marker (make deploy writes it), holds no Iceberg metadata and
                           lies apart from the warehouse and every table; other objects there are kept and named
  --remove-mirrors         the mirror databases (<namespace>_cow in Glue), their tables and the data under each
                           mirror table's own location (never a location that holds a source table, a table
                           kept or another table's metadata, nor a mirror's with gc.enabled=false); truncate-mode
                           mirrors, the only complete copy of their tables' data, and their databases are kept
  --remove-truncate-mirrors  with --remove-mirrors: truncate-mode mirrors too
  --remove-secret          the destination secret (Secrets Manager keeps it 7 days, then deletes it)
  --disable-bucket-events  EventBridge notifications of the warehouse bucket (other notifications stay)

The secret, the bucket's notifications and a namespace's mirrors are kept while another olake-cow
stack of the region uses them (named in the output), unless named with --secret, --bucket or
--namespaces. Every check runs before anything is deleted: a refusal deletes nothing, the stack
included. Removing data needs --yes. The stack's parameters (buckets, namespaces, secret) are read
before it is deleted; with --skip-stack (the stack is gone already) give them as options.

    python -m infra.destroy [--stack olake-cow] [--region R] [--remove-mirrors --yes] ...
    make destroy STACK=olake-cow [DESTROY_ARGS="--remove-artifacts --yes"]   (the same, from the deploy environment)

Exit codes: 0 removed, 2 a missing --yes, an unknown stack, a location that is not provably the
stack's, or an AWS error (one line says what).
"""
import argparse
import os
import subprocess
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from infra import awsenv, ownership
from olake_cow.core import identity
from olake_cow.core.identifiers import MIRROR_NAMESPACE_SUFFIX, MIRROR_SUFFIX
from olake_cow.core.modes import holds_only_copy
from olake_cow.core.snapshots import TableState, state_from_metadata

if TYPE_CHECKING:  # typed clients (development stubs only)
    import boto3.session
    from mypy_boto3_glue import GlueClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_scheduler import EventBridgeSchedulerClient




def schedule_group(stack: str) -> str:
    """The stack's debounce schedule group (template.yaml, DebounceSchedules)."""
    return f"{stack}-debounce"


def stack_parameters(cfn: Any, stack: str) -> Dict[str, str]:
    found = awsenv.describe_stack(cfn, stack, "; with --skip-stack, give the buckets, namespaces and secret "
                                              "as options")
    return {p["ParameterKey"]: p.get("ResolvedValue") or p.get("ParameterValue", "")
            for p in found.get("Parameters", [])}


def delete_schedules(scheduler: "EventBridgeSchedulerClient", group: str) -> List[str]:
    """Delete the schedules of one schedule group (none when the group is gone)."""
    names = []
    try:
        for page in scheduler.get_paginator("list_schedules").paginate(GroupName=group):
            names += [s["Name"] for s in page.get("Schedules", [])]
    except Exception as exc:
        if awsenv.error_code(exc) == "ResourceNotFoundException":
            return []
        raise
    for name in names:
        scheduler.delete_schedule(Name=name, GroupName=group)
    return names


@dataclass
class MirrorTable:
    database: str
    name: str
    location: Optional[ownership.Location]  # None: the table's data is not removed (see why)
    why_kept: str = ""
    drop: bool = True  # False: not the project's table; neither it nor its database is dropped
    places: Tuple[str, ...] = ()  # where a kept table keeps its files (no other table's data removal may reach them)
    uuid: Optional[str] = None  # the table's, from its metadata
    keys: List[str] = field(default_factory=list)  # the objects removed with it, listed and checked before any removal


ONLY_COPY = ("a truncate-mode mirror, the only complete copy of its table's data (OLake's table holds only the "
             "changes since the last run); add --remove-truncate-mirrors to drop it too")


def made_here(s3: "S3Client", ns: str, table: Dict) -> Tuple[str, Optional[TableState]]:
    """Why a table of a mirror database is not one olake-cow made ("" when it is one: its metadata
    carries the project's marker, or the olake-cow.* properties of an earlier version), and its state."""
    params = table.get("Parameters") or {}
    metadata = params.get("metadata_location") or ""
    if str(params.get("table_type", "")).upper() != "ICEBERG" or not awsenv.uris.is_s3_uri(metadata):
        return "not an Iceberg table in S3, so not made by olake-cow", None
    state = state_from_metadata(ownership.read_metadata(s3, *awsenv.uris.split_s3(metadata)))
    name = table["Name"]
    source = f"{ns}.{name[:-len(MIRROR_SUFFIX)]}" if name.endswith(MIRROR_SUFFIX) else ""
    owner = identity.ownership(state, source, f"{ns}{MIRROR_NAMESPACE_SUFFIX}.{name}")
    return ("" if owner.writable else "not made by olake-cow as a mirror of this namespace"), state


def plan_mirrors(glue: "GlueClient", namespaces: List[str], warehouse: ownership.Location,
                 sources: List[Tuple[str, ownership.Location]], s3: "S3Client",
                 only_copies: bool = False) -> List[MirrorTable]:
    """The mirror tables of `namespaces` and the data each may lose: its own location, holding its
    own metadata, apart from every source table, and not holding the warehouse. A table the
    project did not make, and a truncate-mode mirror unless `only_copies`, is kept whole (not
    dropped) and named."""
    plan: List[MirrorTable] = []
    for ns in namespaces:
        database = ns + MIRROR_NAMESPACE_SUFFIX
        try:
            tables = [t for page in glue.get_paginator("get_tables").paginate(DatabaseName=database)
                      for t in page.get("TableList", [])]
        except Exception as exc:
            if awsenv.error_code(exc) == "EntityNotFoundException":
                continue
            raise
        plan += [_mirror_entry(s3, ns, t, warehouse, sources, only_copies) for t in tables]
    _spare_kept(plan)
    _list_removals(s3, plan)
    return plan


def _list_removals(s3: "S3Client", plan: List[MirrorTable]) -> None:
    """The objects under each dropped mirror's location, removed only when every table metadata file
    among them is the mirror's own (core/identity.py foreign_metadata, orphan removal's rule): a
    mirror someone moved onto another table (OLake's of another namespace, another stack's mirror)
    would otherwise take that table's files with it."""
    for entry in plan:
        if not (entry.drop and entry.location):
            continue
        bucket, prefix = entry.location
        keys = ownership.keys_under(s3, bucket, prefix)
        found = ((k, ownership.metadata_uuid(s3, bucket, k)) for k in keys if identity.is_table_metadata(k))
        foreign = identity.foreign_metadata(entry.uuid, found)
        if foreign:
            entry.location = None
            entry.why_kept = f"its location holds s3://{bucket}/{foreign[0]}, {foreign[1]}: another table's files"
        else:
            entry.keys = keys


def _location(uri: str) -> ownership.Location:
    bucket, prefix = awsenv.uris.split_s3(uri)
    return bucket, prefix.strip("/")


def _spare_kept(plan: List[MirrorTable]) -> None:
    """No data is removed under a location that holds a place (its location, data or metadata folder)
    of a table whose data is kept: someone moved a mirror onto a kept one (a truncate mirror, a user's
    table, a mirror with gc.enabled=false)."""
    kept = [(e, _location(p)) for e in plan if not (e.drop and e.location) for p in e.places
            if awsenv.uris.is_s3_uri(p)]
    for entry in plan:
        loc = entry.location
        if not (entry.drop and loc):
            continue
        hit = next((k for k, place in kept if awsenv.overlaps(loc, place)), None)
        if hit is not None:
            entry.location = None
            entry.why_kept = f"its location overlaps that of {hit.database}.{hit.name}, which is kept"


def _mirror_entry(s3: "S3Client", ns: str, t: Dict, warehouse: ownership.Location,
                  sources: List[Tuple[str, ownership.Location]], only_copies: bool) -> MirrorTable:
    """One table of a mirror database: dropped or not, and the data it may lose."""
    database = ns + MIRROR_NAMESPACE_SUFFIX
    location = (t.get("StorageDescriptor") or {}).get("Location") or ""
    metadata = (t.get("Parameters") or {}).get("metadata_location") or ""
    entry = MirrorTable(database, t["Name"], None)
    foreign, state = made_here(s3, ns, t)
    if foreign or (state is not None and holds_only_copy(state) and not only_copies):
        return _kept(entry, foreign or ONLY_COPY, location, state)
    if not location.startswith("s3://"):
        entry.why_kept = "not in S3"
        return entry
    loc = awsenv.split_s3(location.rstrip("/"), f"{database}.{t['Name']} location")
    gc_off = identity.gc_disabled(state.properties) if state is not None else None
    entry.why_kept = _why_data_kept(loc, metadata, warehouse, sources, gc_off)
    if not entry.why_kept:
        entry.location, entry.uuid = loc, state.uuid if state is not None else None
    elif gc_off is not None:
        entry.places = _places(location, state)  # its files stay: nothing else removed may reach them
    return entry


def _why_data_kept(loc: ownership.Location, metadata: str, warehouse: ownership.Location,
                   sources: List[Tuple[str, ownership.Location]], gc_off: Optional[str]) -> str:
    """Why a dropped mirror's objects are not removed ("" when they are); `gc_off`: its gc.enabled
    when it turns deleting off."""
    clash = [what for what, other in sources if awsenv.overlaps(loc, other)]
    if loc[0] == warehouse[0] and awsenv.within(warehouse[1], loc[1]):
        clash.append("the warehouse")
    if not loc[1]:
        return "its location is a bucket root"
    if clash:
        return f"its location overlaps {clash[0]}"
    if metadata and not metadata.startswith(f"s3://{loc[0]}/{loc[1]}/"):
        return "its metadata lives outside its location"
    if gc_off is not None:
        return f"it has gc.enabled={gc_off}: someone turned off deleting its files (another table may use them)"
    return ""


def _kept(entry: MirrorTable, why: str, location: str, state: Optional[TableState]) -> MirrorTable:
    """A table destroy keeps whole, with the places its files are in (its location, data and metadata folders)."""
    entry.why_kept, entry.drop, entry.places = why, False, _places(location, state)
    return entry


def _places(location: str, state: Optional[TableState]) -> Tuple[str, ...]:
    """Where a table keeps its files: its catalog location, and its location, data and metadata folders."""
    places = identity.state_places(state) if state is not None else ()
    return tuple(p for p in (location, *places) if p)


def drop_mirrors(glue: "GlueClient", s3: "S3Client", plan: List[MirrorTable]) -> List[str]:
    dropped = []
    for entry in (e for e in plan if e.drop):
        if entry.location:  # exactly the objects listed and checked in the plan
            ownership.delete_keys(s3, entry.location[0], entry.keys)
        glue.delete_table(DatabaseName=entry.database, Name=entry.name)
        dropped.append(f"{entry.database}.{entry.name}" + (f" (data kept: {entry.why_kept})" if entry.why_kept
                                                           else ""))
    holding = {e.database for e in plan if not e.drop}
    for database in sorted({e.database for e in plan} - holding):
        glue.delete_database(Name=database)
    return dropped


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="destroy", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stack", default="olake-cow", help="the stack's name (default olake-cow)")
    p.add_argument("--region", help="AWS region (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's)")
    p.add_argument("--remove-artifacts", action="store_true", help="remove code, summaries and logs of the job")
    p.add_argument("--remove-mirrors", action="store_true", help="drop the mirror databases and their data "
                   "(truncate-mode mirrors, the only complete copies, are kept)")
    p.add_argument("--remove-truncate-mirrors", action="store_true",
                   help="with --remove-mirrors: drop truncate-mode mirrors too, the only complete copy of their data")
    p.add_argument("--remove-secret", action="store_true", help="delete the destination secret")
    p.add_argument("--disable-bucket-events", action="store_true",
                   help="turn off EventBridge notifications of the warehouse bucket")
    p.add_argument("--yes", action="store_true", help="confirm the removal of data (mirrors, artifacts, secret)")
    p.add_argument("--skip-stack", action="store_true", help="the stack is gone already: only the other steps")
    p.add_argument("--artifacts", metavar="s3://bucket/prefix", help="with --skip-stack: the artifacts location")
    p.add_argument("--warehouse", metavar="s3://bucket/prefix", help="with --skip-stack: the warehouse")
    p.add_argument("--namespaces", metavar="A,B", help="with --skip-stack: the source namespaces")
    p.add_argument("--secret", metavar="ARN", help="with --skip-stack: the destination secret")
    p.add_argument("--bucket", help="with --skip-stack: the warehouse bucket")
    p.add_argument("--sam", default=os.environ.get("SAM", "sam"), help="the SAM CLI to run (default: sam on PATH)")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    if args.remove_truncate_mirrors and not args.remove_mirrors:
        print("destroy: error: --remove-truncate-mirrors drops mirrors: add --remove-mirrors", file=sys.stderr)
        return 2
    if (args.remove_artifacts or args.remove_mirrors or args.remove_secret) and not args.yes:
        print("destroy: error: removing mirrors, artifacts or the secret deletes data: add --yes", file=sys.stderr)
        return 2
    return awsenv.run("destroy", lambda: _destroy(args))


@dataclass
class Plan:
    """Everything destroy will do, decided (and refused, if need be) before anything is deleted."""

    artifacts: Optional[ownership.Location] = None
    removal: Optional[ownership.Removal] = None
    mirrors: List[MirrorTable] = field(default_factory=list)
    secret: Optional[str] = None
    bucket: Optional[str] = None
    kept: List[str] = field(default_factory=list)


def _warehouse(args: argparse.Namespace, params: Dict[str, str]) -> Optional[ownership.Location]:
    if args.warehouse:
        return awsenv.split_s3(args.warehouse, "--warehouse")
    if params.get("WarehouseBucket"):
        return (params["WarehouseBucket"], params.get("WarehousePrefix", "").strip("/"))
    return None


def _plan(args: argparse.Namespace, session: "boto3.session.Session", params: Dict[str, str],
          others: Dict[str, Dict[str, str]]) -> Plan:
    plan = Plan()
    warehouse = _warehouse(args, params)
    namespaces = [n.strip() for n in (args.namespaces or params.get("SourceNamespaces", "")).split(",") if n.strip()]
    glue = session.client("glue")
    sources: List[Tuple[str, ownership.Location]] = []
    if args.remove_artifacts or args.remove_mirrors:
        if warehouse is None:
            raise awsenv.SetupError("the warehouse is unknown, so nothing it holds can be told apart: pass "
                                    "--warehouse s3://bucket/prefix")
        sources = ownership.table_locations(glue, namespaces)
    if args.remove_artifacts:
        mirrors = ownership.table_locations(glue, [n + MIRROR_NAMESPACE_SUFFIX for n in namespaces])
        _plan_artifacts(args, session, params, others, plan, [("the warehouse", warehouse)] + sources + mirrors)
    if args.remove_mirrors:
        _plan_mirrors(args, glue, session.client("s3"), namespaces, warehouse, sources, others, plan)
    if args.remove_secret:
        plan.secret = _unshared(plan, others, "DestinationSecretArn", args.secret, params, "--remove-secret",
                                "--secret", "the secret {} (stack(s) {} read it")
    if args.disable_bucket_events:
        plan.bucket = _unshared(plan, others, "WarehouseBucket", args.bucket, params, "--disable-bucket-events",
                                "--bucket", "the EventBridge notifications of s3://{} (stack(s) {} need them")
    return plan


def _plan_artifacts(args: argparse.Namespace, session: "boto3.session.Session", params: Dict[str, str],
                    others: Dict[str, Dict[str, str]], plan: Plan, protected: list) -> None:
    """What of the artifacts location is the stack's to remove: never what the warehouse, a table
    or another stack's location holds."""
    if args.artifacts:
        plan.artifacts = awsenv.split_s3(args.artifacts, "--artifacts")
    elif params.get("ArtifactsBucket"):
        plan.artifacts = (params["ArtifactsBucket"], params.get("ArtifactsPrefix", "olake-cow").strip("/"))
    else:
        raise awsenv.SetupError("--remove-artifacts: the artifacts location is unknown; pass --artifacts")
    plan.removal = ownership.plan_removal(session.client("s3"), plan.artifacts, args.stack, protected)
    theirs = [(p["ArtifactsBucket"], p.get("ArtifactsPrefix", "").strip("/")) for p in others.values()]
    for key in list(plan.removal.remove):
        if any(bucket == plan.artifacts[0] and awsenv.within(key, prefix) for bucket, prefix in theirs):
            plan.removal.remove.remove(key)
            plan.removal.keep.append(key)


def _plan_mirrors(args: argparse.Namespace, glue: "GlueClient", s3: "S3Client", namespaces: List[str],
                  warehouse: Optional[ownership.Location], sources: list, others: Dict[str, Dict[str, str]],
                  plan: Plan) -> None:
    """The mirror namespaces to drop: not those another stack mirrors too, unless named."""
    assert warehouse is not None  # _plan refuses --remove-mirrors without one
    if not namespaces:
        raise awsenv.SetupError("--remove-mirrors: the namespaces are unknown; pass --namespaces")
    shared = {ns: [name for name, p in others.items() if ns in p.get("SourceNamespaces", "").split(",")]
              for ns in namespaces}
    mine = namespaces if args.namespaces else [ns for ns in namespaces if not shared[ns]]
    plan.kept += [f"the mirrors of {ns} (stack(s) {', '.join(shared[ns])} mirror it too; name it with "
                  "--namespaces to drop them anyway)" for ns in namespaces if ns not in mine]
    plan.mirrors = plan_mirrors(glue, mine, warehouse, sources, s3, args.remove_truncate_mirrors)


def _unshared(plan: Plan, others: Dict[str, Dict[str, str]], key: str, named: Optional[str],
              params: Dict[str, str], ask: str, flag: str, kept: str) -> Optional[str]:
    """The shared thing (the stack parameter `key`) to remove: None, and said in `plan.kept`, while
    another olake-cow stack uses it, unless the user named it with `flag`."""
    value = named or params.get(key)
    if not value:
        raise awsenv.SetupError(f"{ask}: the {flag.lstrip('-')} is unknown; pass {flag}")
    users = [name for name, p in others.items() if p.get(key) == value]
    if users and not named:
        plan.kept.append(kept.format(value, ", ".join(users)) + f"; name it with {flag} to remove it anyway)")
        return None
    return value


def _destroy(args: argparse.Namespace) -> int:
    awsenv.stack_name(args.stack)
    session = awsenv.session(args.region)
    region = session.region_name
    cfn = session.client("cloudformation")
    params: Dict[str, str] = {}
    if not args.skip_stack:
        params = stack_parameters(cfn, args.stack)
    needs_others = args.remove_artifacts or args.remove_mirrors or args.remove_secret or args.disable_bucket_events
    others = awsenv.olake_cow_stacks(cfn, exclude=args.stack) if needs_others else {}
    plan = _plan(args, session, params, others)  # every refusal happens here, before anything is deleted
    gone = delete_schedules(session.client("scheduler"), schedule_group(args.stack))
    print(f"==> {len(gone)} pending debounce schedule(s) of stack {args.stack} deleted")
    if not args.skip_stack:
        print(f"==> deleting stack {args.stack} in {region}", flush=True)
        done = subprocess.run([args.sam, "delete", "--stack-name", args.stack, "--region", region, "--no-prompts"])
        if done.returncode != 0:
            raise awsenv.SetupError(f"sam delete failed (exit {done.returncode}); nothing else was removed")
    _remove(args, session, plan)
    for what in plan.kept:
        print(f"    kept {what}")
    print("==> done. OLake's tables were not touched.")
    return 0


def _remove(args: argparse.Namespace, session: "boto3.session.Session", plan: Plan) -> None:
    """Carry out the plan's removals (the stack is gone by now)."""
    s3 = session.client("s3")
    if plan.artifacts and plan.removal:
        uri = f"s3://{plan.artifacts[0]}/{plan.artifacts[1]}".rstrip("/")
        removed = ownership.delete_keys(s3, plan.artifacts[0], plan.removal.remove)
        print(f"==> {removed} object(s) of stack {args.stack} removed under {uri}/ (code/, summaries/, logs/, "
              "its marker)")
        if plan.removal.keep:
            print(f"    kept {len(plan.removal.keep)} other object(s) there, not the stack's: "
                  f"{', '.join(plan.removal.keep[:5])}{' ...' if len(plan.removal.keep) > 5 else ''}")
    if plan.mirrors:
        dropped = drop_mirrors(session.client("glue"), s3, plan.mirrors)
        print(f"==> {len(dropped)} mirror table(s) dropped with their data: {', '.join(dropped)}")
        for e in (e for e in plan.mirrors if not e.drop):
            print(f"    kept {e.database}.{e.name} and its database: {e.why_kept}")
    elif args.remove_mirrors:
        print("==> no mirror table to drop")
    if plan.secret:
        session.client("secretsmanager").delete_secret(SecretId=plan.secret, RecoveryWindowInDays=7)
        print(f"==> secret {plan.secret} scheduled for deletion in 7 days")
    if plan.bucket:
        from infra.enable_bucket_events import disable

        disable(s3, plan.bucket)
        print(f"==> s3://{plan.bucket}: EventBridge notifications turned off")


if __name__ == "__main__":
    sys.exit(main())
