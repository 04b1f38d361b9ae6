"""A table's failure as the summary reports it: one readable line, secrets redacted."""
import logging
from typing import List

from .config import DestinationConfig, redact, refused_by_catalog
from .errors import OlakeCowError, store_refusal, with_type
from .summary import TableResult

log = logging.getLogger("olake_cow")


def error_text(exc: BaseException) -> str:
    """One readable line: our own errors as they are; Java errors by their first line."""
    if isinstance(exc, OlakeCowError):
        return str(exc)
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            return f"{java.getClass().getSimpleName()}: {first_line(java.getMessage())}"
        except Exception:  # noqa: BLE001
            pass
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def first_line(message: object) -> str:
    """A message's first line: Spark's job aborts carry the executor's stack trace after it."""
    lines = str(message or "").strip().splitlines()
    return lines[0] if lines else ""


def fail_table(res: TableResult, exc: BaseException, secrets: List[str], cfg: DestinationConfig) -> TableResult:
    text = with_type(exc)
    exc = store_refusal(text, res.mirror) or refused_by_catalog(text, cfg) or exc
    res.fail(exc, redact(error_text(exc), secrets))
    log.error("[%s] failed: %s", res.table, res.error)
    return res
