"""Is the lake governed by Lake Formation? Then IAM alone does not let the stack's roles read
OLake's tables or write mirrors: make deploy says so in one line, with the grants they need
(README, Lake Formation). Signs, any of which is enough:

  - the account's CreateTableDefaultPermissions is empty (new tables get no IAM-only access),
  - a source namespace's database has an empty CreateTableDefaultPermissions,
  - the warehouse location, or a location above it, is registered with Lake Formation.

A deployer without the rights to read these is told that it could not check, never refused.
"""
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence

from olake_cow.core.identifiers import MIRROR_NAMESPACE_SUFFIX

if TYPE_CHECKING:  # typed clients (development stubs only)
    from mypy_boto3_glue import GlueClient


IAM_ONLY = "IAM_ALLOWED_PRINCIPALS"


def _iam_only(permissions: Optional[Sequence[Dict[str, Any]]]) -> bool:
    """Default permissions that leave access to IAM (Lake Formation's compatibility setting)."""
    return any((p.get("Principal") or {}).get("DataLakePrincipalIdentifier") == IAM_ONLY
               for p in permissions or [])


def _covers(resource_arn: str, bucket: str, prefix: str) -> bool:
    """Whether a registered `arn:aws:s3:::bucket[/path]` holds s3://bucket/prefix."""
    if not resource_arn.startswith("arn:aws:s3:::"):
        return False
    path = resource_arn[len("arn:aws:s3:::"):].rstrip("/")
    target = f"{bucket}/{prefix}".rstrip("/")
    return target == path or target.startswith(path + "/")


def signs(settings: Dict[str, Any], registered: Sequence[str], databases: Dict[str, Optional[List[Any]]],
          bucket: str, prefix: str) -> List[str]:
    """Why the lake is governed (empty: it is not). `databases`: each source database's
    CreateTableDefaultPermissions (None: the key is absent, which Glue reads as IAM-only)."""
    found = []
    if not _iam_only(settings.get("CreateTableDefaultPermissions")):
        found.append("the account's default permissions for new tables are not IAM-only")
    for name, permissions in sorted(databases.items()):
        if permissions is not None and not _iam_only(permissions):
            found.append(f"database {name} gives new tables no IAM-only permission")
    for arn in registered:
        if _covers(arn, bucket, prefix):
            found.append(f"{arn} is a registered data location")
    return found


def grants_needed(stack: str, namespaces: Sequence[str], bucket: str, prefix: str,
                  suffix: str = MIRROR_NAMESPACE_SUFFIX) -> str:
    """The grants, in one line."""
    sources = ", ".join(namespaces)
    mirrors = ", ".join(n + suffix for n in namespaces)
    location = f"s3://{bucket}/{prefix}".rstrip("/")
    return (f"grant stack {stack}'s job role (output JobRoleArn) DESCRIBE on databases {sources} and SELECT, DESCRIBE "
            f"on their tables; CREATE_TABLE, DESCRIBE on databases {mirrors} and ALL on their tables; "
            f"DATA_LOCATION_ACCESS on {location}; and its trigger role DESCRIBE on the tables of both "
            "(README, Lake Formation), and deploy with EXTRA_PARAMS=\"LakeFormation=true\"")


def check(lf: Any, glue: "GlueClient", stack: str, namespaces: Sequence[str], bucket: str, prefix: str,
          catalog_id: Optional[str] = None) -> str:
    """One line for make deploy: '' when Lake Formation does not govern the lake."""
    ids = {"CatalogId": catalog_id} if catalog_id else {}
    try:
        settings = lf.get_data_lake_settings(**ids)["DataLakeSettings"]
        registered = [r["ResourceArn"] for page in _pages(lf) for r in page]
        databases = {}
        for ns in namespaces:
            try:
                db = glue.get_database(Name=ns, **ids)["Database"]
            except glue.exceptions.EntityNotFoundException:
                continue
            databases[ns] = db.get("CreateTableDefaultPermissions")
    except Exception as exc:  # noqa: BLE001 - a deployer may not read Lake Formation: say so, go on
        code = getattr(exc, "response", {}).get("Error", {}).get("Code", type(exc).__name__)
        return (f"could not check Lake Formation ({code}); if it governs the lake, "
                + grants_needed(stack, namespaces, bucket, prefix))
    found = signs(settings, registered, databases, bucket, prefix)
    if not found:
        return ""
    return f"Lake Formation governs this lake ({'; '.join(found)}): " + grants_needed(stack, namespaces, bucket,
                                                                                        prefix)


def _pages(lf: Any) -> Iterator[List[Dict[str, Any]]]:
    token = None
    while True:
        page = lf.list_resources(**({"NextToken": token} if token else {}))
        yield page.get("ResourceInfoList", [])
        token = page.get("NextToken")
        if not token:
            return
