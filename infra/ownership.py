"""What a stack owns in S3, and proof of it before anything is deleted.

`make deploy` claims the stack's artifacts location (s3://<ArtifactsBucket>/<ArtifactsPrefix>/,
by default olake-cow/<stack>) by writing a marker object there that names the stack; it refuses a
location another stack claimed or that already holds objects nobody claimed. `make destroy`
removes artifacts only under a location whose marker names its stack, only the stack's own
folders (code/, summaries/, logs/) and the marker, and nothing at all when the location overlaps
the warehouse or a table, or holds Iceberg metadata: what it keeps, it names.
"""
import gzip
import json
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple

from infra import awsenv
from olake_cow.core import identity

if TYPE_CHECKING:  # typed clients (development stubs only)
    from mypy_boto3_glue import GlueClient
    from mypy_boto3_s3 import S3Client


MARKER = ".olake-cow-stack.json"
OWN_FOLDERS = ("code/", "summaries/", "logs/")  # what the stack writes (IAM lets the job write only there)

Location = Tuple[str, str]  # (bucket, prefix)


def marker_key(prefix: str) -> str:
    return f"{prefix}/{MARKER}" if prefix else MARKER


def read_marker(s3: "S3Client", bucket: str, prefix: str) -> Optional[Dict[str, str]]:
    try:
        body = s3.get_object(Bucket=bucket, Key=marker_key(prefix))["Body"].read()
    except Exception as exc:
        if awsenv.error_code(exc) in ("NoSuchKey", "404"):
            return None
        raise
    try:
        found = json.loads(body)
    except ValueError:
        return {"stack": "?"}
    return found if isinstance(found, dict) else {"stack": "?"}


def keys_under(s3: "S3Client", bucket: str, prefix: str) -> List[str]:
    keys: List[str] = []
    folder = prefix + "/" if prefix else ""
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=folder):
        keys += [o["Key"] for o in page.get("Contents", [])]
    return keys


_UUID = re.compile(rb'"table-uuid"\s*:\s*"([^"]+)"')


def read_metadata(s3: "S3Client", bucket: str, key: str) -> Any:
    """A table metadata file's JSON, gzipped or not."""
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    return json.loads(gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body)


def metadata_uuid(s3: "S3Client", bucket: str, key: str) -> Optional[str]:
    """The UUID of the table a metadata file describes (None: not readable as one). Iceberg writes
    it near the top, so the first kilobyte is read first, the whole file only when it is not there."""
    try:
        head = s3.get_object(Bucket=bucket, Key=key, Range="bytes=0-1023")["Body"].read()
        found = _UUID.search(head)
        if found:
            return found.group(1).decode()
        meta = read_metadata(s3, bucket, key)
        return str(meta["table-uuid"]) if isinstance(meta, dict) and meta.get("table-uuid") else None
    except Exception:  # noqa: BLE001 - unreadable: not proven the table's own
        return None


def is_iceberg_metadata(key: str) -> bool:
    """A table's metadata file, manifest or version hint: never an artifact of a stack."""
    name = key.rsplit("/", 1)[-1]
    return "/metadata/" in f"/{key}" and (identity.is_table_metadata(name) or name.endswith(".avro")
                                          or name == "version-hint.text")


def check_apart(artifacts: Location, protected: Iterable[Tuple[str, Location]]) -> None:
    """SetupError when the artifacts location holds, or lies in, a protected one (the warehouse, a table)."""
    for what, loc in protected:
        if awsenv.overlaps(artifacts, loc):
            where = f"s3://{loc[0]}/{loc[1]}".rstrip("/")
            raise awsenv.SetupError(
                f"the artifacts location s3://{artifacts[0]}/{artifacts[1]} overlaps {what} {where}: the stack "
                "writes and removes there, so it must be apart from OLake's data; set ARTIFACTS_PREFIX (default "
                "olake-cow/<stack>) or ARTIFACTS_BUCKET to a location of its own")


def claim(s3: "S3Client", artifacts: Location, stack: str, region: str) -> str:
    """Write (or confirm) the marker naming `stack`; SetupError if the location is another's."""
    bucket, prefix = artifacts
    found = read_marker(s3, bucket, prefix)
    uri = f"s3://{bucket}/{prefix}".rstrip("/")
    if found is not None:
        if found.get("stack") != stack or found.get("region", region) != region:
            raise awsenv.SetupError(f"{uri} is the artifacts location of stack {found.get('stack')!r} "
                                    f"({found.get('region', '?')}): give stack {stack!r} its own ARTIFACTS_PREFIX")
        return "confirmed"
    foreign = keys_under(s3, bucket, prefix)
    if foreign:
        raise awsenv.SetupError(f"{uri}/ already holds {len(foreign)} object(s) no olake-cow stack claimed (e.g. "
                                f"{foreign[0]}): choose an empty ARTIFACTS_PREFIX for stack {stack!r}")
    body = {"stack": stack, "region": region, "claimed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "owns": list(OWN_FOLDERS)}
    s3.put_object(Bucket=bucket, Key=marker_key(prefix), Body=json.dumps(body).encode(),
                  ContentType="application/json")
    return "claimed"


@dataclass
class Removal:
    """What destroy removes from an artifacts location, and what it keeps (with why)."""

    remove: List[str] = field(default_factory=list)
    keep: List[str] = field(default_factory=list)


def plan_removal(s3: "S3Client", artifacts: Location, stack: str, protected: Iterable[Tuple[str, Location]]) -> Removal:
    """The stack's own objects under `artifacts`; SetupError (nothing removed) unless the location
    is provably the stack's: apart from OLake's data, marked with its name, holding no table metadata."""
    check_apart(artifacts, protected)
    bucket, prefix = artifacts
    uri = f"s3://{bucket}/{prefix}".rstrip("/")
    found = read_marker(s3, bucket, prefix)
    if found is None:
        raise awsenv.SetupError(f"{uri} has no olake-cow marker ({MARKER}): it is not provably stack {stack!r}'s "
                                "artifacts location, so nothing was removed there (remove what you know is yours "
                                "by hand)")
    if found.get("stack") != stack:
        raise awsenv.SetupError(f"{uri} belongs to stack {found.get('stack')!r}, not {stack!r}: nothing removed")
    keys = keys_under(s3, bucket, prefix)
    tables = [k for k in keys if is_iceberg_metadata(k)]
    if tables:
        raise awsenv.SetupError(f"{uri} holds Iceberg table metadata ({tables[0]}): it overlaps a table, so "
                                "nothing was removed")
    base = prefix + "/" if prefix else ""
    own = tuple(base + folder for folder in OWN_FOLDERS) + (marker_key(prefix),)
    out = Removal()
    for key in keys:
        (out.remove if key.startswith(own[:-1]) or key == own[-1] else out.keep).append(key)
    out.remove.sort(key=lambda k: k == marker_key(prefix))  # the marker last: a retry still finds it
    return out


def delete_keys(s3: "S3Client", bucket: str, keys: List[str]) -> int:
    for i in range(0, len(keys), 1000):
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[i:i + 1000]], "Quiet": True})
    return len(keys)


def table_locations(glue: "GlueClient", namespaces: Iterable[str],
                    catalog_id: Optional[str] = None) -> List[Tuple[str, Location]]:
    """("table ns.t", (bucket, prefix)) of every S3 table of the Glue databases (missing ones skipped)."""
    ids: Dict[str, Any] = {"CatalogId": catalog_id} if catalog_id else {}
    found: List[Tuple[str, Location]] = []
    for ns in namespaces:
        try:
            pages = list(glue.get_paginator("get_tables").paginate(DatabaseName=ns, **ids))
        except Exception as exc:
            if awsenv.error_code(exc) == "EntityNotFoundException":
                continue
            raise
        for table in (t for page in pages for t in page.get("TableList", [])):
            location = (table.get("StorageDescriptor") or {}).get("Location") or ""
            if awsenv.uris.is_s3_uri(location):
                bucket, prefix = awsenv.uris.split_s3(location)
                found.append((f"table {ns}.{table['Name']}", (bucket, prefix.strip("/"))))
    return found
