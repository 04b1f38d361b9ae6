"""OLake destination config: parsing, validation and secret handling.

Pure Python (3.9+), no Spark and no boto3: the job and the trigger Lambda share this one
implementation of the rules. Keys follow OLake's writer config (see README, "Destination config").
"""
import difflib
import json
import os
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .errors import OAUTH_KEYS, SIGV4_KEYS, CatalogAuthError, ConfigError, catalog_refusal
from .uris import split_s3


class CatalogType(str, Enum):
    """The catalog a destination uses, parsed once (`writer.catalog_type`, REST flavours as REST)."""

    GLUE = "glue"
    JDBC = "jdbc"
    HIVE = "hive"
    HADOOP = "hadoop"
    REST = "rest"

    def __str__(self) -> str:  # the value in messages and f-strings on every Python (3.11 changed the default)
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


REST_ALIASES = ("rest", "lakekeeper", "nessie", "s3tables", "unity", "polaris", "biglake")
CATALOG_TYPES = ("glue", "jdbc", "hive", "hadoop") + REST_ALIASES
DEFAULT_CATALOG_NAME = "olake_iceberg"

# Keys whose values are credentials: never logged, never put into the job arguments or summary.
SECRET_KEYS = (
    "aws_access_key",
    "aws_secret_key",
    "aws_session_token",
    "glue_access_key",
    "glue_secret_key",
    "jdbc_password",
    "token",
    "credential",
)
_STRING_KEYS = (
    "catalog_type", "catalog_name", "iceberg_s3_path", "iceberg_db", "aws_region", "aws_profile",
    "s3_endpoint", "glue_catalog_id", "glue_endpoint", "glue_region", "jdbc_url", "jdbc_username",
    "jdbc_driver_jar", "hive_uri", "rest_catalog_url", "oauth2_uri", "scope", "rest_auth_type",
    "rest_signing_name", "rest_signing_region",
) + SECRET_KEYS
_BOOL_KEYS = ("s3_use_ssl", "s3_path_style", "hive_sasl_enabled", "rest_signing_v_4",
              "no_identifier_fields", "arrow_writes", "rest_vended_credentials")
_REQUIRED = {
    "jdbc": ("jdbc_url",),
    "hive": ("hive_uri",),
    "rest": ("rest_catalog_url",),
}
_INT_KEYS = ("hive_clients",)
# Keys of OLake's own destination files that only its writer process uses (its gRPC server):
# accepted anywhere in the file, of any type, and ignored.
OLAKE_ONLY_KEYS = ("grpc_port", "server_host")
# Every key a writer object may hold: OLake's documented writer keys, and two of ours
# (jdbc_driver_jar, rest_vended_credentials).
WRITER_KEYS = tuple(sorted(set(_STRING_KEYS + _BOOL_KEYS + _INT_KEYS + OLAKE_ONLY_KEYS)))
WRAPPER_KEYS = ("type", "writer") + OLAKE_ONLY_KEYS
_CATALOG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
JDBC_DRIVER_DIR = "/usr/share/java"
_JDBC_DRIVERS = {"postgresql": "postgresql.jar", "sqlite": "sqlite-jdbc.jar"}


@dataclass(frozen=True)
class DestinationConfig:
    """A validated OLake writer config. `writer` holds the raw keys (secrets included): use
    `public_view()` for anything that is printed."""

    catalog_type: CatalogType
    catalog_name: str
    warehouse: str
    writer: Mapping[str, Any] = field(repr=False)

    def get(self, key: str) -> Any:
        return self.writer.get(key)

    def secret_values(self) -> List[str]:
        """Every credential value in the config, for redaction."""
        values = [str(self.writer[k]) for k in SECRET_KEYS if self.writer.get(k)]
        url = self.writer.get("jdbc_url") or ""
        values += [m.group(1) for m in re.finditer(r"(?i)password=([^&;]+)", url)]
        return [v for v in values if len(v) >= 3]

    def public_view(self) -> Dict[str, Any]:
        return {"catalog_type": self.catalog_type, "catalog_name": self.catalog_name,
                "warehouse": self.warehouse}


def parse_destination(source: Any) -> DestinationConfig:
    """Parse OLake's destination JSON (text, bytes or an already-decoded object).

    Accepts `{"type": "ICEBERG", "writer": {...}}` or the bare writer object.
    """
    if isinstance(source, (bytes, bytearray)):
        source = decode_text(bytes(source))
    if isinstance(source, str):
        source = source.lstrip("\ufeff")  # a byte-order mark left by an editor
        try:
            source = json.loads(source, object_pairs_hook=_unique_keys)
        except ValueError as exc:
            raise ConfigError(f"destination config is not valid JSON: {exc.__class__.__name__} at "
                              f"line {getattr(exc, 'lineno', '?')} column {getattr(exc, 'colno', '?')}"
                              ) from None
        except RecursionError:
            raise ConfigError("destination config is nested too deeply to be an OLake destination config") from None
    if not isinstance(source, dict):
        raise ConfigError(f"destination config must be a JSON object, got {type(source).__name__}")
    return _validate_writer(_writer_of(source))


def _writer_of(source: Dict[str, Any]) -> Dict[str, Any]:
    """The writer object: `source["writer"]` of OLake's wrapper, or `source` itself."""
    writer: Any = source
    if "type" in source and "writer" not in source and any(k in source for k in ("catalog_type", "iceberg_s3_path")):
        raise ConfigError("the destination config holds 'type' beside the writer's keys but no 'writer' object: "
                          'write {"type": "ICEBERG", "writer": {...}}, or leave \'type\' out of the bare writer object')
    if "writer" in source or "type" in source:
        _refuse_unknown(source, WRAPPER_KEYS, "")
        kind = source.get("type")
        if kind is not None and str(kind).upper() != "ICEBERG":
            raise ConfigError(f"destination type must be ICEBERG, got {kind!r}")
        writer = source.get("writer")
        if writer is None:
            raise ConfigError("destination config has no 'writer' object")
    if not isinstance(writer, dict):
        raise ConfigError(f"'writer' must be a JSON object, got {type(writer).__name__}")
    return writer


def _unique_keys(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    """A JSON object whose keys are unique: a key written twice would let the last one win silently."""
    seen: Dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ConfigError(f"the destination config has the key {key!r} twice in one object; keep one")
        seen[key] = value
    return seen


def decode_text(raw: bytes) -> str:
    """The text of a config file: UTF-8 (with or without a byte-order mark) or UTF-16/32 with one;
    ConfigError naming the encoding problem otherwise."""
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
                       (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if raw.startswith(bom):
            try:
                return raw.decode(codec)
            except UnicodeDecodeError as exc:
                raise ConfigError(f"destination config starts with a {codec} byte-order mark but is not "
                                  f"valid {codec} (byte {exc.start})") from None
    if b"\x00" in raw[:64]:
        raise ConfigError("destination config is not UTF-8 text (it looks like UTF-16 without a byte-order "
                          "mark): save it as UTF-8")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"destination config is not UTF-8 text (invalid byte 0x{raw[exc.start]:02x} at "
                          f"offset {exc.start}): save it as UTF-8") from None


def _refuse_unknown(obj: Mapping[str, Any], known: Tuple[str, ...], prefix: str) -> None:
    """ConfigError for the first key of `obj` that is not in `known`, naming the nearest known key
    (a typo must not silently fall back to a default, such as catalog_typ to glue)."""
    for key in sorted(str(k) for k in obj if k not in known):
        near = difflib.get_close_matches(key.lower(), known, n=1, cutoff=0.6)
        hint = f"did you mean {prefix}{near[0]}?" if near else f"the keys are: {', '.join(known)}"
        raise ConfigError(f"unknown key {prefix}{key} in the destination config; {hint}")


def _check_types(writer: Mapping[str, Any]) -> None:
    for key in _STRING_KEYS:
        if key in writer and writer[key] is not None and not isinstance(writer[key], str):
            raise ConfigError(f"writer.{key} must be a string, got {type(writer[key]).__name__}")
    for key in _BOOL_KEYS:
        value = writer.get(key)
        if value is not None and not isinstance(value, bool) and str(value).lower() not in ("true", "false"):
            raise ConfigError(f"writer.{key} must be true or false, got {value!r}")
    if writer.get("hive_clients") is not None and not _is_int(writer["hive_clients"]):
        raise ConfigError(f"writer.hive_clients must be an integer, got {writer['hive_clients']!r}")


def nessie_refusal(catalog: str, how: str) -> ConfigError:
    """Nessie's REST catalog (seen with 0.99.0) serves each table with its current snapshot only and
    makes a staged (write-audit-publish) snapshot the current one: the job can neither read what
    changed between two of OLake's commits nor stage a merge for audit there."""
    return ConfigError(
        f"catalog {catalog} is Nessie ({how}): Nessie keeps a table's history in its own commits and serves "
        "each table with its current snapshot only, so the changes between two of OLake's commits cannot be "
        "read through it, and it would publish a mirror's staged snapshot before its audit. Nessie is not "
        "supported; nothing was written")


def _catalog_type(writer: Mapping[str, Any]) -> CatalogType:
    """The catalog type (REST aliases as rest), once every key it requires is set."""
    raw_type = (writer.get("catalog_type") or "glue").strip().lower()
    if raw_type not in CATALOG_TYPES:
        raise ConfigError(f"writer.catalog_type {raw_type!r} is not supported; "
                          f"use one of: {', '.join(CATALOG_TYPES)}")
    if raw_type == "nessie":
        raise nessie_refusal(str(writer.get("catalog_name") or DEFAULT_CATALOG_NAME), "writer.catalog_type")
    catalog_type = CatalogType.REST if raw_type in REST_ALIASES else CatalogType(raw_type)
    for key in ("iceberg_s3_path",) + _REQUIRED.get(catalog_type, ()):
        if not str(writer.get(key) or "").strip():
            raise ConfigError(f"writer.{key} is required for catalog_type {raw_type!r}")
    return catalog_type


def _validate_writer(writer: Dict[str, Any]) -> DestinationConfig:
    _refuse_unknown(writer, WRITER_KEYS, "writer.")
    _check_types(writer)
    # Whitespace around a value (a copy's newline) is dropped once, here, so every reader of the
    # config (the job, make secret, preflight, the Lambda) sees the same value; credentials are kept
    # as written. Whitespace inside a value is refused by the checks below.
    writer = {k: (v.strip() if isinstance(v, str) and k not in SECRET_KEYS else v) for k, v in writer.items()}
    catalog_type = _catalog_type(writer)
    name = (writer.get("catalog_name") or DEFAULT_CATALOG_NAME).strip()
    if not _CATALOG_NAME.match(name):
        raise ConfigError(f"writer.catalog_name {name!r} must be letters, digits and underscores")
    jdbc_url = writer.get("jdbc_url") or ""
    if catalog_type == CatalogType.JDBC and not jdbc_url.lower().startswith("jdbc:"):
        raise ConfigError("writer.jdbc_url must start with 'jdbc:'")
    _check_values(writer, catalog_type)
    warehouse = normalize_warehouse(catalog_type, writer["iceberg_s3_path"].strip())
    check_location("writer.iceberg_s3_path", warehouse, rest=catalog_type == CatalogType.REST)
    if catalog_type == CatalogType.HADOOP:
        _check_local_warehouse(warehouse)
    return DestinationConfig(catalog_type, name, warehouse, dict(writer))


# AWS region names: us-east-1, eu-central-2, us-gov-west-1, cn-north-1, ap-southeast-4, ...
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$")
_URL = re.compile(r"^https?://[^\s/?#]+[^\s]*$")
_HIVE_URI = re.compile(r"^thrift://[^\s/:,]+(:[0-9]{1,5})?(,thrift://[^\s/:,]+(:[0-9]{1,5})?)*$")
# Bucket names S3 accepts (lowercase letters, digits, dots, hyphens; up to 63).
S3_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{0,62}$")
_PAIRS = (("aws_access_key", "aws_secret_key"), ("glue_access_key", "glue_secret_key"))
REST_AUTH_TYPES = ("sigv4", "oauth2", "none")  # any other value would be ignored silently by the catalog


def _check_values(writer: Mapping[str, Any], catalog_type: CatalogType) -> None:
    """Values that only Spark or AWS would refuse, minutes into a billed run: found here instead."""
    for key in ("aws_region", "glue_region", "rest_signing_region"):
        value = writer.get(key)
        if value and not _REGION.match(value.strip()):
            raise ConfigError(f"writer.{key} {value!r} is not an AWS region name (such as us-east-1)")
    rest_url = ("rest_catalog_url",) if catalog_type == CatalogType.REST else ()
    for key in ("s3_endpoint", "glue_endpoint", "oauth2_uri") + rest_url:
        value = writer.get(key)
        if value and not _URL.match(value.strip()):
            raise ConfigError(f"writer.{key} {value!r} is not a URL: write http://host:port or https://host/path")
    hive_uri = writer.get("hive_uri")
    if catalog_type == CatalogType.HIVE and hive_uri and not _HIVE_URI.match(hive_uri.strip()):
        raise ConfigError(f"writer.hive_uri {hive_uri!r} must be thrift://host:port (the metastore's Thrift "
                          "address; several comma separated)")
    auth = writer.get("rest_auth_type")
    if catalog_type == CatalogType.REST and auth and str(auth).strip().lower() not in REST_AUTH_TYPES:
        raise ConfigError(f"writer.rest_auth_type {auth!r} is not one olake-cow knows ({', '.join(REST_AUTH_TYPES)}): "
                          "write sigv4 for AWS SigV4 signing, or leave it out for OAuth2 (credential) or a token")
    for key, partner in _PAIRS:
        if bool(writer.get(key)) != bool(writer.get(partner)):
            have, lack = (key, partner) if writer.get(key) else (partner, key)
            raise ConfigError(f"writer.{have} is set but writer.{lack} is not: give both, or neither to use "
                              "the job's role (EMR) or the AWS profile (local runs)")


# Where a warehouse or mirror may live: S3 (on EMR), or a local path or file: URI (local runs).
_OTHER_SCHEMES = ("gs", "abfs", "abfss", "wasb", "wasbs", "adl", "oss", "cos", "hdfs", "viewfs", "http", "https")


def _check_local_warehouse(warehouse: str) -> None:
    """The file-system catalog is for local runs: a local path, without `..` (Hadoop's paths keep it
    and the tables would land elsewhere than the config says)."""
    if is_s3(warehouse):
        raise ConfigError(f"writer.iceberg_s3_path {warehouse!r}: the hadoop catalog is for local runs and reads a "
                          "local path or file: URI; for S3 use catalog_type glue, jdbc, hive or rest")
    path = warehouse.split(":", 1)[1] if warehouse.startswith("file:") else warehouse
    if ".." in path.split("/"):
        raise ConfigError(f"writer.iceberg_s3_path {warehouse!r} holds a '..' segment: write the path without it")


def check_location(what: str, location: str, rest: bool = False) -> None:
    """ConfigError when `location` cannot be a table location of this job (a REST warehouse may be a name)."""
    if rest and "://" not in location and not location.startswith("/"):
        if not location.strip() or any(c.isspace() for c in location):
            raise ConfigError(f"{what} {location!r} is not a warehouse name or URI")
        return
    scheme = location.split("://", 1)[0].lower() if "://" in location else ""
    # A URI cannot hold a space (a local path may: a project checked out under "My Projects").
    if any(ord(c) < 32 or (scheme and c.isspace()) for c in location):
        raise ConfigError(f"{what} {location!r} contains a space or control character; table locations cannot "
                          "hold one (did a copy add it?)")
    if scheme == "s3":
        bucket = split_s3(location)[0]
        if not S3_BUCKET.match(bucket):
            raise ConfigError(f"{what} {location!r} does not start with an S3 bucket name: write "
                              "s3://bucket/prefix (lowercase letters, digits, dots and hyphens)")
    elif scheme in _OTHER_SCHEMES:
        raise ConfigError(f"{what} {location!r}: {scheme}:// is not supported; olake-cow reads and writes "
                          "tables in S3 (s3://bucket/prefix), or in a local path for local runs")
    elif scheme and scheme != "file":
        raise ConfigError(f"{what} {location!r}: unknown scheme {scheme}://; write s3://bucket/prefix or a "
                          "local path")
    elif scheme == "file" and not location.split("://", 1)[1].startswith("/"):
        host = location.split("://", 1)[1].split("/", 1)[0]
        raise ConfigError(f"{what} {location!r} names the host {host!r} (file:// is followed by a host): write "
                          f"file:///{location.split('://', 1)[1]} or the path itself")


def _is_int(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, str) and value.strip().isdigit())


def normalize_warehouse(catalog_type: CatalogType, value: str) -> str:
    """REST warehouses may be names; everything else is a URI or an absolute local path.
    `bucket/prefix` without a scheme means S3. Trailing slashes are dropped."""
    if catalog_type == CatalogType.REST:
        return value
    scheme, sep, rest = value.partition("://")
    if sep and scheme.lower() in ("s3", "s3a", "s3n"):  # S3://, s3a://: the one S3 scheme Iceberg's FileIO reads
        value = "s3://" + rest
    if "://" not in value and not value.startswith("/") and not value.startswith("file:"):
        # OLake reads `bucket/prefix` as S3; the local hadoop catalog reads it as a local path.
        value = os.path.abspath(value) if catalog_type == CatalogType.HADOOP else "s3://" + value
    return value.rstrip("/") or value


def is_s3(location: str) -> bool:
    return location.startswith("s3://")


def jdbc_driver_jar(cfg: DestinationConfig, java_dir: str = JDBC_DRIVER_DIR) -> Optional[str]:
    """The JDBC driver jar for a jdbc catalog: `jdbc_driver_jar` if given, else the OS package's."""
    if cfg.catalog_type != CatalogType.JDBC:
        return None
    explicit = cfg.get("jdbc_driver_jar")
    if explicit:
        return str(explicit)
    kind = str(cfg.get("jdbc_url")).split(":")[1].lower()
    if kind in _JDBC_DRIVERS:
        return f"{java_dir}/{_JDBC_DRIVERS[kind]}"
    raise ConfigError(f"no JDBC driver known for {kind!r} URLs; set writer.jdbc_driver_jar")


def _flag(value: Any) -> Optional[bool]:
    if value is None:
        return None
    return value if isinstance(value, bool) else str(value).lower() == "true"


Properties = Dict[str, str]


def _copy(w: Mapping[str, Any], out: Properties, pairs: Tuple[Tuple[str, str], ...]) -> None:
    """out[prop] = w[key] for each (key, prop) the writer sets."""
    for key, prop in pairs:
        if w.get(key):
            out[prop] = w[key]


def _hadoop(cfg: DestinationConfig, pub: Properties, sec: Properties) -> None:
    pub.update({"type": "hadoop", "warehouse": cfg.warehouse})


def _jdbc(cfg: DestinationConfig, pub: Properties, sec: Properties) -> None:
    pub.update({"type": "jdbc", "uri": cfg.writer["jdbc_url"], "warehouse": cfg.warehouse})
    _copy(cfg.writer, pub, (("jdbc_username", "jdbc.user"),))
    _copy(cfg.writer, sec, (("jdbc_password", "jdbc.password"),))


def _hive(cfg: DestinationConfig, pub: Properties, sec: Properties) -> None:
    pub.update({"type": "hive", "uri": cfg.writer["hive_uri"], "warehouse": cfg.warehouse})
    if cfg.writer.get("hive_clients") is not None:
        pub["clients"] = str(cfg.writer["hive_clients"]).strip()


def _glue(cfg: DestinationConfig, pub: Properties, sec: Properties) -> None:
    pub.update({"type": "glue", "warehouse": cfg.warehouse})
    _copy(cfg.writer, pub, (("glue_catalog_id", "glue.id"), ("glue_endpoint", "glue.endpoint")))


def signs_with_sigv4(w: Mapping[str, Any]) -> bool:
    return bool(_flag(w.get("rest_signing_v_4"))) or (w.get("rest_auth_type") or "").lower() == "sigv4"


def refused_by_catalog(failure_text: str, cfg: DestinationConfig) -> Optional[CatalogAuthError]:
    """A REST catalog's 401/403 as one line naming the catalog and the keys of its way of signing in."""
    keys = SIGV4_KEYS if signs_with_sigv4(cfg.writer) else OAUTH_KEYS
    return catalog_refusal(failure_text, cfg.catalog_name, str(cfg.get("rest_catalog_url") or cfg.catalog_type), keys)


def _rest(cfg: DestinationConfig, pub: Properties, sec: Properties) -> None:
    w = cfg.writer
    pub.update({"type": "rest", "uri": w["rest_catalog_url"], "warehouse": cfg.warehouse})
    _copy(w, pub, (("oauth2_uri", "oauth2-server-uri"), ("scope", "scope")))
    _copy(w, sec, (("token", "token"), ("credential", "credential")))
    if signs_with_sigv4(w):
        pub["rest.sigv4-enabled"] = "true"
        pub["rest.signing-name"] = w.get("rest_signing_name") or "execute-api"
        if w.get("rest_signing_region") or w.get("aws_region"):
            pub["rest.signing-region"] = w.get("rest_signing_region") or w["aws_region"]
        # The destination's static keys are its AWS identity: they sign too. Without them the
        # signer takes the job role (EMR) or the AWS profile (local), as OLake's writer does.
        if w.get("aws_access_key") and w.get("aws_secret_key"):
            _copy(w, sec, (("aws_access_key", "rest.access-key-id"), ("aws_secret_key", "rest.secret-access-key"),
                           ("aws_session_token", "rest.session-token")))
    if _flag(w.get("rest_vended_credentials")):
        # Iceberg applies what LoadTable vends (short-lived keys scoped to the table) over the
        # destination's own S3 settings, for that table's files only.
        pub["header.X-Iceberg-Access-Delegation"] = "vended-credentials"


_CATALOG_PROPERTIES = {CatalogType.HADOOP: _hadoop, CatalogType.JDBC: _jdbc, CatalogType.HIVE: _hive,
                       CatalogType.GLUE: _glue, CatalogType.REST: _rest}


def _storage(cfg: DestinationConfig, pub: Properties, sec: Properties) -> None:
    """The region, S3 FileIO, endpoint and static keys every catalog type shares."""
    w, t = cfg.writer, cfg.catalog_type
    region = w.get("glue_region") if t == CatalogType.GLUE and w.get("glue_region") else w.get("aws_region")
    if region:
        pub["client.region"] = region
    if t != CatalogType.HADOOP and (is_s3(cfg.warehouse) or t in (CatalogType.GLUE, CatalogType.REST)):
        pub["io-impl"] = "org.apache.iceberg.aws.s3.S3FileIO"
    if w.get("s3_endpoint"):
        pub["s3.endpoint"] = w["s3_endpoint"]
        pub["s3.path-style-access"] = "true"
    elif _flag(w.get("s3_path_style")) is not None:
        pub["s3.path-style-access"] = str(_flag(w.get("s3_path_style"))).lower()
    if w.get("aws_access_key") and w.get("aws_secret_key"):
        _copy(w, sec, (("aws_access_key", "s3.access-key-id"), ("aws_secret_key", "s3.secret-access-key"),
                       ("aws_session_token", "s3.session-token")))


def catalog_properties(cfg: DestinationConfig) -> Tuple[Properties, Properties]:
    """Iceberg catalog properties as (public, secret). Secret ones are set on the session at run
    time, never in the launch configuration, and are never printed."""
    pub: Properties = {"cache-enabled": "false"}
    sec: Properties = {}
    _CATALOG_PROPERTIES[cfg.catalog_type](cfg, pub, sec)
    _storage(cfg, pub, sec)
    return pub, sec


def redact(text: str, secrets: List[str]) -> str:
    """Replace every secret value in `text` (longest first) with '***'."""
    for value in sorted(set(secrets), key=len, reverse=True):
        if value:
            text = text.replace(value, "***")
    return text
