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
