"""What every event handler of the trigger shares: its settings, AWS adapters, state store, clock
and metric sink."""
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

from olake_cow.core.config import DestinationConfig
from olake_cow.core.errors import ConfigError

from .debounce import Debouncer
from .decide import Outcome, TriggerStatus
from .emr import EmrRuns
from .lane import LaneRuns
from .metrics import Point
from .settings import Settings
from .state import StateStore

if TYPE_CHECKING:  # typed clients for mypy (the mypy-boto3 stubs are a development dependency)
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_emr_serverless import EMRServerlessClient
    from mypy_boto3_glue import GlueClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_scheduler import EventBridgeSchedulerClient

log = logging.getLogger("olake_trigger")


@dataclass
class Clients:
    s3: "S3Client"
    emr: "EMRServerlessClient"
    ddb: "DynamoDBClient"
    scheduler: "EventBridgeSchedulerClient"
    glue: "GlueClient"
    lambda_: Optional["LambdaClient"] = None  # the express lane's merge function


@dataclass
class Context:
    s: Settings
    c: Clients
    load_config: Callable[[], DestinationConfig]
    emit: Callable[[str, Point], None]
    clock: Callable[[], float] = time.time
    function_arn: Optional[str] = None
    store: StateStore = field(init=False)
    runs: EmrRuns = field(init=False)
    lanes: Optional[LaneRuns] = field(init=False)

    def __post_init__(self) -> None:
        self.store = StateStore(self.c.ddb, self.s.state_table)
        self.runs = EmrRuns(self.c.emr, self.s.application_id)
        arn = self.s.merge_function_arn
        self.lanes = LaneRuns(self.c.lambda_, arn) if arn and self.c.lambda_ is not None else None

    def now(self) -> int:
        return int(self.clock())

    def debouncer(self) -> Debouncer:
        if not self.s.scheduler_role_arn or not self.function_arn:
            raise ConfigError("QUIET_PERIOD_SECONDS > 0 needs SCHEDULER_ROLE_ARN (and the function ARN) "
                              "for the debounce schedule; set QUIET_PERIOD_SECONDS=0 to start at once")
        return Debouncer(self.c.scheduler, self.s.scheduler_group, self.s.scheduler_role_arn, self.function_arn)

    def refuse(self, namespace: str, reason: str) -> Outcome:
        """Nothing started: the request (or commit) names what no run could mirror. Counted."""
        log.warning("namespace %s: refused: %s", namespace, reason)
        self.emit(namespace, Point("Refused", "Count", 1.0))
        return Outcome(TriggerStatus.REFUSED, reason, namespace=namespace)
