"""Per-namespace run state in DynamoDB: the single-flight lease, pending follow-up tables, the
last commit time (debounce), and seen-event markers (duplicates).

Every transition is one conditional write, so concurrent Lambda invocations cannot both win.
The lease expiry is part of the condition (TTL deletes items up to ~48 h late, so it is only
used to clean up seen-event markers).

Item `ns#<namespace>`:
  lease_until  N   epoch seconds; a lease is held while now < lease_until
  token        S   client token of the run holding the lease
  job_run_id   S   EMR Serverless job run id, once started
  summary_uri  S   where that run writes its summary
  pending      SS  tables with commits not yet handed to a run ("*" = all tables, decide.ALL_TABLES);
                   past PENDING_LIMIT names it becomes {"*"}: a schema's first sync of thousands
                   of tables is one run of the namespace, and the item stays far under 400 KB
  last_commit  N   epoch seconds of the newest commit event (debounce)
Item `seen#<event>`: expires_at N (TTL attribute)
"""
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Tuple

from botocore.exceptions import ClientError

from olake_cow.core.errors import aws_error_code

from .decide import ALL_TABLES

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


# 200 names of Glue's longest (255 characters) are 51 KB: a quarter of the 400 KB DynamoDB allows.
PENDING_LIMIT = 200


def collapsed(names: Iterable[str]) -> List[str]:
    """The pending names to store: "all tables" once they are many, or once they include it."""
    names = sorted(set(names))
    return [ALL_TABLES] if ALL_TABLES in names or len(names) > PENDING_LIMIT else names


@dataclass(frozen=True)
class NamespaceState:
    namespace: str
    lease_until: int = 0
    token: Optional[str] = None
    job_run_id: Optional[str] = None
    summary_uri: Optional[str] = None
    pending: Tuple[str, ...] = ()
    last_commit: int = 0

    def leased(self, now: int) -> bool:
        return self.lease_until > now


def _state(namespace: str, item: Optional[Dict[str, Any]]) -> NamespaceState:
    item = item or {}

    def s(key: str) -> Optional[str]:
        return item[key]["S"] if key in item else None

    def n(key: str) -> int:
        return int(item[key]["N"]) if key in item else 0

    return NamespaceState(namespace, n("lease_until"), s("token"), s("job_run_id"), s("summary_uri"),
                          tuple(sorted(item.get("pending", {}).get("SS", []))), n("last_commit"))


def _conditional_failed(exc: ClientError) -> bool:
    return aws_error_code(exc) == "ConditionalCheckFailedException"


class StateStore:
    def __init__(self, client: "DynamoDBClient", table: str) -> None:
        self.ddb = client
        self.table = table

    def _key(self, namespace: str) -> Dict[str, Any]:
        return {"pk": {"S": f"ns#{namespace}"}}

    def _conditional(self, namespace: str, **kwargs: Any) -> Optional[Mapping[str, Any]]:
        """UpdateItem under a condition: the response, or None when the condition does not hold."""
        try:
            return self.ddb.update_item(TableName=self.table, Key=self._key(namespace), **kwargs)
        except ClientError as exc:
            if _conditional_failed(exc):
                return None
            raise

    def get(self, namespace: str) -> NamespaceState:
        item = self.ddb.get_item(TableName=self.table, Key=self._key(namespace), ConsistentRead=True).get("Item")
        return _state(namespace, item)

    def seen(self, event_key: str) -> bool:
        """True when this event was handled to the end before (a duplicate delivery)."""
        item = self.ddb.get_item(TableName=self.table, Key={"pk": {"S": f"seen#{event_key}"}},
                                 ConsistentRead=True).get("Item")
        return item is not None

    def mark_seen(self, event_key: str, now: int, ttl_s: int) -> None:
        """Marked after the event's work is recorded: a delivery that crashed before that is retried,
        not dropped as a duplicate (the work itself is idempotent: a set add and a lease)."""
        self.ddb.put_item(TableName=self.table,
                          Item={"pk": {"S": f"seen#{event_key}"}, "expires_at": {"N": str(now + ttl_s)}})

    def add_pending(self, namespace: str, names: Iterable[str], now: Optional[int] = None) -> NamespaceState:
        """Record tables with work waiting (ALL_TABLES: every table); `now` also moves the debounce clock."""
        names = collapsed(names)
        values: Dict[str, Any] = {} if now is None else {":now": {"N": str(now)}}
        clock = ["SET last_commit = :now"] if now is not None else []
        if names:
            # Names are added only while the set is not "all tables" already (that covers them).
            out = self._conditional(
                namespace, UpdateExpression=" ".join(["ADD pending :t", *clock]),
                ConditionExpression="attribute_not_exists(pending) OR NOT contains(pending, :all)",
                ExpressionAttributeValues={**values, ":t": {"SS": names}, ":all": {"S": ALL_TABLES}},
                ReturnValues="ALL_NEW")
            if out is not None:
                state = _state(namespace, out.get("Attributes"))
                return self._collapse(state) if len(state.pending) > PENDING_LIMIT else state
        if not clock:
            return self.get(namespace)
        out = self.ddb.update_item(TableName=self.table, Key=self._key(namespace), UpdateExpression=clock[0],
                                   ExpressionAttributeValues=values, ReturnValues="ALL_NEW")
        return _state(namespace, out.get("Attributes"))

    def _collapse(self, state: NamespaceState) -> NamespaceState:
        """Many pending names become "all tables" (one write; names added meanwhile are covered)."""
        out = self.ddb.update_item(TableName=self.table, Key=self._key(state.namespace),
                                   UpdateExpression="SET pending = :all",
                                   ExpressionAttributeValues={":all": {"SS": [ALL_TABLES]}}, ReturnValues="ALL_NEW")
        return _state(state.namespace, out.get("Attributes"))

    def acquire(self, namespace: str, token: str, now: int, lease_until: int) -> Optional[NamespaceState]:
        """Take the lease if free or expired, and take over the pending tables. Returns the state
        before the write (its `pending` are now this run's), or None if a live lease is held."""
        out = self._conditional(
            namespace,
            UpdateExpression="SET lease_until = :until, #tok = :tok REMOVE job_run_id, summary_uri, pending",
            ConditionExpression="attribute_not_exists(lease_until) OR lease_until <= :now",
            ExpressionAttributeNames={"#tok": "token"},
            ExpressionAttributeValues={":until": {"N": str(lease_until)}, ":tok": {"S": token},
                                       ":now": {"N": str(now)}},
            ReturnValues="ALL_OLD")
        return None if out is None else _state(namespace, out.get("Attributes"))

    def extend(self, namespace: str, token: str, lease_until: int) -> None:
        """Move the lease's end (the express lane's is shorter than an EMR run's)."""
        self.ddb.update_item(
            TableName=self.table, Key=self._key(namespace), UpdateExpression="SET lease_until = :until",
            ConditionExpression="#tok = :tok", ExpressionAttributeNames={"#tok": "token"},
            ExpressionAttributeValues={":until": {"N": str(lease_until)}, ":tok": {"S": token}})

    def started(self, namespace: str, token: str, job_run_id: str, summary_uri: str) -> None:
        self.ddb.update_item(
            TableName=self.table, Key=self._key(namespace),
            UpdateExpression="SET job_run_id = :id, summary_uri = :uri",
            ConditionExpression="#tok = :tok",
            ExpressionAttributeNames={"#tok": "token"},
            ExpressionAttributeValues={":id": {"S": job_run_id}, ":uri": {"S": summary_uri},
                                       ":tok": {"S": token}})

    def abandon(self, namespace: str, token: str, pending: Iterable[str]) -> None:
        """Give the lease back without a job (nothing to do, or the start failed)."""
        names = collapsed(pending)
        expr = "REMOVE lease_until, #tok, job_run_id, summary_uri"
        values: Dict[str, Any] = {":tok": {"S": token}}
        if names:
            expr += " ADD pending :p"
            values[":p"] = {"SS": names}
        self._conditional(namespace, UpdateExpression=expr, ConditionExpression="#tok = :tok",
                          ExpressionAttributeNames={"#tok": "token"}, ExpressionAttributeValues=values)

    def finish(self, namespace: str, job_run_id: str) -> Optional[NamespaceState]:
        """Release the lease held by `job_run_id`. Returns the state after release, or None if
        that job no longer holds it (a duplicate or late end event)."""
        out = self._conditional(
            namespace,
            UpdateExpression="REMOVE lease_until, #tok, job_run_id",
            ConditionExpression="job_run_id = :id",
            ExpressionAttributeNames={"#tok": "token"},
            ExpressionAttributeValues={":id": {"S": job_run_id}},
            ReturnValues="ALL_NEW")
        return None if out is None else _state(namespace, out.get("Attributes"))
