"""template.yaml as data: the CloudFormation short forms (!Ref, !Sub, ...) read as their long forms,
and what the stack hands the trigger Lambda at the template's defaults."""
import json
import os
from typing import Any, Dict, List

from infra.stack_params import load_template  # noqa: F401 - the one reader of template.yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATE = os.path.join(ROOT, "template.yaml")


def default_trigger_env(template: Dict[str, Any]) -> Dict[str, str]:
    """The trigger's environment variables that come from stack parameters, at their defaults."""
    spec = template["Resources"]["TriggerFunction"]["Properties"]["Environment"]["Variables"]
    params = template["Parameters"]
    return {var: str(params[value["Ref"]]["Default"]) for var, value in spec.items()
            if isinstance(value, dict) and set(value) == {"Ref"} and "Default" in params.get(value["Ref"], {})}


def periodic_input(template: Dict[str, Any], namespaces: List[str]) -> Dict[str, Any]:
    """The periodic schedule's target input at the template's defaults, as EventBridge Scheduler sends it."""
    body, _ = template["Resources"]["PeriodicRuns"]["Properties"]["Target"]["Input"]["Fn::Sub"]
    text = (body.replace("${List}", '", "'.join(namespaces))
            .replace("${ScheduleMaintenance}", template["Parameters"]["ScheduleMaintenance"]["Default"])
            .replace("<aws.scheduler.scheduled-time>", "2026-11-24T00:00:00Z"))
    return json.loads(text)


def _branches(value):
    """Both branches of an Fn::If (what either setting of a condition grants); others as they are."""
    if isinstance(value, dict) and "Fn::If" in value:
        for branch in value["Fn::If"][1:]:
            if branch != {"Ref": "AWS::NoValue"}:
                yield from _branches(branch)
    else:
        yield value


def statements(template):
    """(resource name, statement) of every IAM policy in the template, both branches of an Fn::If."""
    for name, res in template["Resources"].items():
        props = res.get("Properties", {})
        docs = []
        if res["Type"] == "AWS::IAM::Role":
            docs = [p["PolicyDocument"] for p in props.get("Policies", [])]
        elif res["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::RolePolicy"):
            docs = [props["PolicyDocument"]]
        for doc in docs:
            stmts = doc["Statement"]
            for item in stmts if isinstance(stmts, list) else [stmts]:
                for st in _branches(item):
                    actions = list(_branches(st.get("Action")))
                    if len(actions) > 1:  # Action: !If [cond, [...], [...]]
                        for acts in actions:
                            yield name, {**st, "Action": acts}
                    else:
                        yield name, st
