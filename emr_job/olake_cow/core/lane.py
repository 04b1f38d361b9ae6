"""The express lane's messages (pure): what the trigger asks the merge function for, and what
comes back to the trigger through the function's asynchronous-invocation destinations. A lane run
holds its namespace's lease under a run id that starts with LANE_RUN_PREFIX."""
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .errors import ConfigError
from .summary import TableStatus

LANE_KEY = "olake_cow_lane"  # the payload's one key: the trigger knows a lane's end by it
LANE_RUN_PREFIX = "lane-"
# What the python engine did not finish: the EMR run after the lane takes these tables (once).
UNFINISHED = (TableStatus.HANDED_OVER.value, TableStatus.FAILED.value, TableStatus.PENDING.value)


@dataclass(frozen=True)
class LaneRequest:
    namespace: str
    run_id: str  # the lease's run id: LANE_RUN_PREFIX + the start's client token
    argv: Tuple[str, ...]  # the job's command line, as an EMR run of the same tables gets it (job_argv)
    max_mb: int  # the python engine's budget (--python-max-mb)
    tables: Optional[Tuple[str, ...]]  # None: every table of the namespace
    emr_after: Tuple[str, ...] = ()  # tables over the lane's budget: the EMR run after this one takes them
    summary_uri: str = ""

    def payload(self) -> Dict[str, Any]:
        return {LANE_KEY: {"namespace": self.namespace, "run_id": self.run_id, "argv": list(self.argv),
                           "max_mb": self.max_mb, "tables": None if self.tables is None else list(self.tables),
                           "emr_after": list(self.emr_after), "summary_uri": self.summary_uri}}

    def engine_argv(self) -> List[str]:
        """The command line the merge function runs: the python engine, tables it leaves to Spark
        reported as handed_over."""
        return [*self.argv, "--engine", "python", "--python-max-mb", str(self.max_mb), "--hand-over"]


def is_lane_payload(payload: Any) -> bool:
    return isinstance(payload, Mapping) and isinstance(payload.get(LANE_KEY), Mapping)


def parse_lane_request(payload: Any) -> LaneRequest:
    """The request in a payload; ConfigError naming the field that is wrong."""
    if not is_lane_payload(payload):
        raise ConfigError(f"not an express-lane request: expected an object with key {LANE_KEY!r}")
    body = payload[LANE_KEY]

    def text(key: str) -> str:
        value = body.get(key)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"express-lane request: {key!r} must be a non-empty string, got {value!r}")
        return value

    def names(key: str, value: Any) -> Tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"express-lane request: {key!r} must be a list of names, got {value!r}")
        return tuple(value)

    run_id = text("run_id")
    if not run_id.startswith(LANE_RUN_PREFIX):
        raise ConfigError(f"express-lane request: run_id {run_id!r} must start with {LANE_RUN_PREFIX!r}")
    argv, max_mb = body.get("argv"), body.get("max_mb")
    if not isinstance(max_mb, int) or isinstance(max_mb, bool) or max_mb < 0:
        raise ConfigError(f"express-lane request: 'max_mb' must be a whole number of MB >= 0, got {max_mb!r}")
    tables = body.get("tables")
    after = names("emr_after", body.get("emr_after", []))
    return LaneRequest(text("namespace"), run_id, names("argv", argv), max_mb,
                       None if tables is None else names("tables", tables), after, str(body.get("summary_uri") or ""))


def unfinished(summary: Optional[Mapping[str, Any]], asked: Optional[Sequence[str]]) -> Optional[Tuple[str, ...]]:
    """The tables a lane run leaves to EMR: those its summary does not show done. None: all the asked
    tables of the namespace (no summary: the run ended before writing one)."""
    if not summary or not isinstance(summary.get("tables"), list) or summary.get("error"):
        return None if asked is None else tuple(sorted(asked))
    done = {str(t.get("table")) for t in summary["tables"] if t.get("status") not in UNFINISHED}
    left = {str(t.get("table")) for t in summary["tables"] if t.get("status") in UNFINISHED}
    if asked is not None:
        left |= set(asked) - done
    return tuple(sorted(left))
