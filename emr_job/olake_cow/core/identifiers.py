"""Quoting and validation of catalog, namespace and table names."""
import re
import unicodedata
from typing import Dict, Optional, Tuple

from .config import CatalogType
from .errors import InvalidNameError

MAX_NAME = 255


def validate_name(kind: str, name: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidNameError(f"{kind} name is empty")
    if len(name) > MAX_NAME:
        raise InvalidNameError(f"{kind} name {name[:40]!r}... is longer than {MAX_NAME} characters")
    bad = [c for c in name if unicodedata.category(c) in ("Cc", "Cf", "Cs") or c == "/"]
    if bad:
        raise InvalidNameError(f"{kind} name {name!r} contains {bad[0]!r}, which cannot be used")
    if name.strip(".") == "" or name != name.strip():
        raise InvalidNameError(f"{kind} name {name!r} cannot be used (dots only, or spaces at an end)")
    return name


def check_source_namespace(name: str, suffix: str = "", own: str = "") -> str:
    """InvalidNameError for a mirror namespace given as a source: mirroring a mirror would write
    `<ns>_cow_cow` and read the job's own commits as changes. `own`: what to do when it is OLake's
    own namespace after all (default: the job's --cow-namespace)."""
    suffix = suffix or MIRROR_NAMESPACE_SUFFIX
    if name.endswith(suffix):
        own = own or f"name its mirror namespace with --cow-namespace (for example {name}_mirror)"
        raise InvalidNameError(f"source namespace {name!r} ends with {suffix!r}, as mirror namespaces do: if it "
                               f"holds mirrors, name OLake's namespace ({name[:-len(suffix)]!r}); if it is OLake's "
                               f"own (a database {name[:-len(suffix)]!r} with a schema {suffix.lstrip('_')!r}), {own}")
    return name


def quote(part: str) -> str:
    """Spark SQL identifier quoting: any name the catalog accepts survives."""
    return "`" + part.replace("`", "``") + "`"


def qualified(catalog: str, namespace: str, table: str) -> str:
    return ".".join(quote(p) for p in (catalog, namespace, table))


def sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


# Names the catalog itself refuses, checked before anything starts (a job on EMR is billed for the
# minutes it takes to find out). Glue: Iceberg's GlueCatalog (IcebergToGlueConverter) accepts
# lowercase letters, digits and underscores, up to 252 characters for a database and 255 for a
# table; a Hive metastore keeps identifiers of up to 128 such characters. OLake writes lowercase names.
_CATALOG_RULES: Dict[CatalogType, Tuple[str, int, int]] = {CatalogType.GLUE: ("Glue", 252, 255),
                                                            CatalogType.HIVE: ("a Hive metastore", 128, 128)}
_LOWER_NAME = re.compile(r"^[a-z0-9_]+$")
MIRROR_SUFFIX = "_cow"  # a mirror table is named <table>_cow
MIRROR_NAMESPACE_SUFFIX = "_cow"  # the default mirror namespace is <namespace>_cow


def check_for_catalog(catalog_type: Optional[CatalogType], kind: str, name: str, suffix: str = "") -> str:
    """InvalidNameError when the catalog cannot hold `name` (or `name + suffix`, the mirror's name):
    `kind` is "namespace" or "table"."""
    if catalog_type == CatalogType.REST and kind.endswith("namespace") and "." in name:
        # A REST catalog tells a nested namespace (db -> public) from one level named "db.public";
        # the job addresses one level, so `db.public` would be another namespace than the user's.
        # (The file-system and JDBC catalogs store both the same way: a dotted name works there.)
        raise InvalidNameError(f"{kind} name {name!r} is nested ('.' separates levels in a REST catalog): olake-cow "
                               "mirrors one-level namespaces, as OLake writes them (<database> or "
                               "<database>_<schema>); name that namespace")
    rule = _CATALOG_RULES.get(catalog_type) if catalog_type is not None else None
    if rule is None:
        return name
    who, ns_max, table_max = rule
    limit = ns_max if kind.endswith("namespace") else table_max
    if not _LOWER_NAME.match(name):
        raise InvalidNameError(f"{kind} name {name!r} cannot be used with a {catalog_type} catalog: {who} names are "
                               "lowercase letters, digits and underscores (OLake writes such names)")
    if len(name + suffix) > limit:
        what = f"{name + suffix!r} (the mirror's name)" if suffix else repr(name)
        raise InvalidNameError(f"{kind} name {what} is longer than the {limit} characters {who} allows")
    return name
