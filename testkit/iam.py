"""IAM, resource by resource: the AWS calls code makes (recorded from botocore as it runs), each with
the resource ARNs AWS authorizes it on, checked against a role's policy documents the way IAM
evaluates an identity policy (an explicit Deny wins; else an Allow whose action, resource and
StringEquals/StringLike conditions all match). Calls AWS authorizes implicitly (iam:PassRole of a
role a request hands over, emr-serverless:TagResource of a run started with tags) are added."""
import ast
import contextlib
import fnmatch
import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import unquote

# The IAM action of an API call, where it is not "<signing name>:<operation>".
ACTION_OF = {"s3:HeadObject": "s3:GetObject", "s3:ListObjectsV2": "s3:ListBucket", "s3:HeadBucket": "s3:ListBucket",
             "s3:DeleteObjects": "s3:DeleteObject", "s3:GetBucketNotificationConfiguration": "s3:GetBucketNotification",
             "s3:PutBucketNotificationConfiguration": "s3:PutBucketNotification",
             "lambda:Invoke": "lambda:InvokeFunction"}
ApiCall = Tuple[str, Mapping[str, Any], Mapping[str, Any]]  # (IAM action, parameters, answer)


def action_of(service: str, operation: str) -> str:
    action = f"{service}:{operation}"
    return ACTION_OF.get(action, action)


@dataclass(frozen=True)
class Call:
    action: str
    resources: Tuple[str, ...]
    context: Tuple[Tuple[str, str], ...] = ()  # condition keys the request carries

    def __str__(self) -> str:
        return f"{self.action} on {', '.join(self.resources)}"


@contextlib.contextmanager
def api_calls() -> Iterator[List[ApiCall]]:
    """Every botocore call made in the block (any client, this process), a call that fails
    included (AWS authorizes it before it fails), in order."""
    import botocore.client

    seen: List[ApiCall] = []
    original: Callable[..., Any] = botocore.client.BaseClient._make_api_call

    def record(client: Any, operation: str, params: Dict[str, Any]) -> Any:
        answer: Any = {}
        try:
            answer = original(client, operation, params)
            return answer
        finally:
            seen.append((action_of(client.meta.service_model.signing_name, operation), params, answer or {}))

    botocore.client.BaseClient._make_api_call = record  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        botocore.client.BaseClient._make_api_call = original  # type: ignore[method-assign]


def iam_calls(seen: Sequence[ApiCall], region: str, account: str) -> List[Call]:
    """The calls as IAM authorizes them: each on its resources, with the calls they imply."""
    context = (("aws:RequestedRegion", region), ("aws:ResourceAccount", account))
    out: List[Call] = []
    for action, params, answer in seen:
        out.append(Call(action, resources_of(action, params, region, account), context))
        out.extend(implied(action, params, answer, region, account))
    return out


def resources_of(action: str, p: Mapping[str, Any], region: str, account: str) -> Tuple[str, ...]:
    """The ARNs AWS authorizes `action` on (the service authorization reference's resource types)."""
    service, op = action.split(":", 1)
    if service == "s3":
        return (f"arn:aws:s3:::{p['Bucket']}",) if op == "ListBucket" else (f"arn:aws:s3:::{p['Bucket']}/{p['Key']}",)
    if service == "dynamodb":
        return (f"arn:aws:dynamodb:{region}:{account}:table/{p['TableName']}",)
    if service == "secretsmanager":
        return (str(p["SecretId"]),)
    if service == "glue":
        cat = str(p.get("CatalogId") or account)
        base = f"arn:aws:glue:{region}:{cat}:"
        db = p.get("DatabaseName") or p.get("Name")
        table = (p.get("TableInput") or {}).get("Name") or p.get("Name")
        found = {"GetDatabase": (f"{base}catalog", f"{base}database/{db}"),
                 "CreateDatabase": (f"{base}catalog", f"{base}database/{(p.get('DatabaseInput') or {}).get('Name')}"),
                 **{op: (f"{base}catalog", f"{base}database/{p.get('DatabaseName')}",
                         f"{base}table/{p.get('DatabaseName')}/{table}")
                    for op in ("CreateTable", "UpdateTable", "DeleteTable")},
                 "GetTable": (f"{base}catalog", f"{base}database/{p.get('DatabaseName')}",
                              f"{base}table/{p.get('DatabaseName')}/{p.get('Name')}"),
                 "GetTables": (f"{base}catalog", f"{base}database/{p.get('DatabaseName')}",
                               f"{base}table/{p.get('DatabaseName')}/*")}.get(op)
        if found:
            return found
    if service == "emr-serverless":
        app = f"arn:aws:emr-serverless:{region}:{account}:/applications/{p['applicationId']}"
        return (f"{app}/jobruns/{p['jobRunId']}",) if "jobRunId" in p else (app,)
    if service == "scheduler":
        return (f"arn:aws:scheduler:{region}:{account}:schedule/{p.get('GroupName') or 'default'}/{p['Name']}",)
    if service == "lambda":
        fn = str(p["FunctionName"])
        return (fn if fn.startswith("arn:") else f"arn:aws:lambda:{region}:{account}:function:{fn}",)
    if service == "cloudwatch" and op == "PutMetricData":
        return ("*",)
    raise KeyError(f"no resource mapping for {action}: add it to testkit/iam.py")


def implied(action: str, p: Mapping[str, Any], answer: Mapping[str, Any], region: str,
            account: str) -> List[Call]:
    """What AWS also authorizes for a call: roles it passes on, tags it writes."""
    out = []
    if action == "emr-serverless:StartJobRun":
        out.append(Call("iam:PassRole", (str(p["executionRoleArn"]),),
                        (("iam:PassedToService", "emr-serverless.amazonaws.com"),)))
        if p.get("tags") and answer.get("jobRunId"):
            run = {**p, "jobRunId": answer["jobRunId"]}
            out.append(Call("emr-serverless:TagResource", resources_of("emr-serverless:TagResource", run, region,
                                                                       account)))
    if action in ("scheduler:CreateSchedule", "scheduler:UpdateSchedule") and (p.get("Target") or {}).get("RoleArn"):
        out.append(Call("iam:PassRole", (str(p["Target"]["RoleArn"]),),
                        (("iam:PassedToService", "scheduler.amazonaws.com"),)))
    return out


def _listed(value: Any) -> List[Any]:
    return value if isinstance(value, list) else [value]


def _matches(patterns: Any, value: str) -> bool:
    return any(fnmatch.fnmatchcase(value, str(p)) for p in _listed(patterns))


def _conditions_hold(condition: Optional[Mapping[str, Any]], context: Mapping[str, str]) -> bool:
    for operator, tests in (condition or {}).items():
        for key, wanted in tests.items():
            got = context.get(key)
            if got is None:
                return False
            if operator == "StringEquals" and got not in [str(w) for w in _listed(wanted)]:
                return False
            if operator == "StringLike" and not _matches(wanted, got):
                return False
            if operator not in ("StringEquals", "StringLike"):
                return False  # not evaluated here: the call is not counted as granted
    return True


def _document(doc: Any) -> Mapping[str, Any]:
    """A policy document as IAM returns it (URL-encoded JSON), as boto3 decodes it, or as moto's
    CloudFormation stores a template's inline policy (Python's repr of it)."""
    if not isinstance(doc, str):
        return doc
    try:
        return json.loads(unquote(doc))
    except ValueError:
        return ast.literal_eval(doc)


def statements(documents: Sequence[Any]) -> List[Mapping[str, Any]]:
    out: List[Mapping[str, Any]] = []
    for doc in documents:
        out += _listed(_document(doc)["Statement"])
    return out


def granted(call: Call, documents: Sequence[Any]) -> bool:
    """Whether the policies allow the call on every resource it needs."""
    context = dict(call.context)
    sts = statements(documents)

    def effect(resource: str, kind: str) -> bool:
        return any(st["Effect"] == kind and _matches([a.lower() for a in _listed(st["Action"])], call.action.lower())
                   and _matches(st["Resource"], resource) and _conditions_hold(st.get("Condition"), context)
                   for st in sts)

    return all(effect(r, "Allow") and not effect(r, "Deny") for r in call.resources)


def ungranted(calls: Sequence[Call], documents: Sequence[Any]) -> List[str]:
    """The calls the policies do not allow, each once."""
    return sorted({str(c) for c in calls if not granted(c, documents)})


def role_actions(role: str) -> set:
    """Every IAM action template.yaml's role `role` (logical id) grants, in either branch of a condition."""
    from testkit.template import load_template, statements

    found: set = set()
    for name, st in statements(load_template()):
        if name == role:
            found.update(st["Action"] if isinstance(st["Action"], list) else [st["Action"]])
    return found
