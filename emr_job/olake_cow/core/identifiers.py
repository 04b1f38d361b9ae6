"""Quoting and validation of catalog, namespace and table names."""
import unicodedata

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
    return name


def quote(part: str) -> str:
    """Spark SQL identifier quoting: any name the catalog accepts survives."""
    return "`" + part.replace("`", "``") + "`"


def qualified(catalog: str, namespace: str, table: str) -> str:
    return ".".join(quote(p) for p in (catalog, namespace, table))


def sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
