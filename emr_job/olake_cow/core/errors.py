"""One flat module of the errors this package raises; each message names the bad value."""


class OlakeCowError(Exception):
    """Base class of every error raised on purpose by olake_cow."""


class ConfigError(OlakeCowError):
    """The destination config (or a command-line option) is invalid."""


class InvalidNameError(OlakeCowError):
    """A namespace or table name cannot be used."""


class TableNotFoundError(OlakeCowError):
    """A source table or namespace does not exist."""


class HistoryError(OlakeCowError):
    """The source's snapshot history cannot support the mirror (e.g. expired past the checkpoint)."""


class SchemaEvolutionError(OlakeCowError):
    """A source schema change cannot be applied to the mirror."""


class AuditError(OlakeCowError):
    """A staged mirror snapshot failed its audit and was not published."""


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
