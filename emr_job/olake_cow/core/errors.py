"""One flat module of the errors this package raises; each message names the bad value."""
from typing import Optional


class OlakeCowError(Exception):
    """Base class of every error raised on purpose by olake_cow."""


class ConfigError(OlakeCowError):
    """The destination config (or a command-line option) is invalid."""


class InvalidNameError(OlakeCowError):
    """A namespace or table name cannot be used."""


class TableNotFoundError(OlakeCowError):
    """A source table or namespace does not exist."""


def namespace_missing(namespace: str, catalog_name: str, listing_error: Optional[str] = None) -> TableNotFoundError:
    """A namespace that is not found, in both engines' words; `listing_error`: what the catalog said
    when asked for any namespace (a REST server without the warehouse the destination names)."""
    said = f"namespace {namespace!r} does not exist in catalog {catalog_name!r}"
    if listing_error is not None:
        said += f", which cannot list its namespaces ({listing_error}): check the warehouse, writer.iceberg_s3_path"
    return TableNotFoundError(said)


class HistoryError(OlakeCowError):
    """The source's snapshot history cannot support the mirror (e.g. expired past the checkpoint)."""


class SchemaEvolutionError(OlakeCowError):
    """A source schema change cannot be applied to the mirror."""


class AuditError(OlakeCowError):
    """A staged mirror snapshot failed its audit and was not published."""


class MirrorMovedError(OlakeCowError):
    """The mirror's current snapshot is no longer the one a write was staged on (another run
    published, or someone committed): nothing was published, and the merge is planned again."""


class UnsupportedDeleteError(OlakeCowError):
    """The source holds equality deletes on a field other than the record key."""


class NotOlakeTableError(OlakeCowError):
    """A source table lacks OLake's `_olake_id` key column."""


class SourceModeError(ConfigError):
    """A run asked for a source mode (or mirror format) the table cannot use."""


class MirrorFormatError(ConfigError):
    """A run asked for a mirror format the existing mirror cannot switch to as asked."""


class ForeignMirrorError(ConfigError):
    """The table at the mirror's name is not this project's mirror of this source (identity.py)."""


class EngineError(ConfigError):
    """Work the engine asked for (--engine python) does not serve: the message names the engine that does."""


class ResyncNeededError(OlakeCowError):
    """The source's history cannot give the change set exactly; the mirror must be rebuilt."""


# Errors that mean the input was wrong (config, names, options, a missing namespace or table, a mode
# or format the mirror was not built with): the job exits 2 for them, 1 for any other failure.
BAD_INPUT_ERRORS = (ConfigError, InvalidNameError, TableNotFoundError)


def aws_error_code(exc: BaseException) -> str:
    """The error code of an AWS client error (botocore's ClientError), "" for any other exception.
    Read by attribute: the core imports no AWS library."""
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


class StoreRefusedError(ConfigError):
    """The table's storage refuses a kind of file the mirror format needs (a setting it cannot serve)."""


_FORBIDDEN = ("status code: 403", "forbidden", "accessdenied", "access denied")


def store_refusal(failure_text: str, mirror: str) -> Optional[StoreRefusedError]:
    """The error to report when a failure's full text (a Java stack trace included) shows the store
    refusing a deletion-vector (Puffin) file: some object stores accept only Parquet, ORC and Avro
    under a table's data folder (SeaweedFS's table buckets, seen with 4.48)."""
    text = failure_text.lower()
    if "puffin" not in text or not any(mark in text for mark in _FORBIDDEN):
        return None
    return StoreRefusedError(
        f"{mirror}: the table's storage refused a deletion-vector (Puffin) file (403 Forbidden), which dv mirrors "
        "write for every update and delete: this store cannot hold a dv mirror, and nothing was published. Mirror "
        "into another namespace with --mirror-format cow (--cow-namespace); a readonly mirror can be rebuilt from "
        "OLake's table, a truncate mirror is the only complete copy: keep it)")


class CatalogAuthError(ConfigError):
    """The catalog refused the destination's credentials."""


# A REST catalog's 401/403 by the exception naming it: Iceberg's Java client (the Spark engine), then
# pyiceberg (the python engine: its OAuth2 token request, then any other request).
_REFUSED_BY_CATALOG = {"notauthorizedexception": "refused the credentials",
                       "forbiddenexception": "refused access with these credentials",
                       "oautherror": "refused the credentials", "unauthorizederror": "refused the credentials",
                       "forbiddenerror": "refused access with these credentials"}


OAUTH_KEYS = "writer.credential (client_id:secret), writer.token, writer.oauth2_uri and writer.scope"
SIGV4_KEYS = ("writer.aws_access_key and writer.aws_secret_key (without them: the job role or the AWS profile), "
              "writer.rest_signing_name and writer.rest_signing_region")


def catalog_refusal(failure_text: str, catalog: str, uri: str, keys: str = OAUTH_KEYS) -> Optional[CatalogAuthError]:
    """The error to report when a failure is a REST catalog's 401/403: the destination's credential,
    token, scope or signing keys are wrong, which no retry fixes. `failure_text` as with_type gives it."""
    for line in failure_text.strip().splitlines():
        for name, what in _REFUSED_BY_CATALOG.items():
            at = line.lower().find(name + ":")
            if at >= 0:
                reason = line[at + len(name) + 1:].strip()
                return CatalogAuthError(
                    f"catalog {catalog} ({uri}) {what}: {reason}. Check {keys} in the destination config")
    return None


def with_type(exc: BaseException) -> str:
    """An exception's text after its class name: pyiceberg names a refusal by its class alone."""
    return f"{type(exc).__name__}: {exc}"
