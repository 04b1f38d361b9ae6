"""Stack parameters given as `EXTRA_PARAMS="Key=Value Key2=Value two"`, parsed and checked against
template.yaml's own constraints (the parameter exists, Type, AllowedValues, AllowedPattern,
MinValue/MaxValue, and the template's Rules) before anything is uploaded. A value may hold spaces and JSON: a new pair
starts only where a known parameter name is followed by '='.

    python -m infra.stack_params 'MirrorFormat=dv ScheduleMaintenance={"compact_files": true}'

Exit codes: 0 valid (prints one Key=Value a line), 2 a bad parameter (one line says which and why).
"""
import os
import re
import sys
from typing import Any, Dict, List, Optional

from infra import awsenv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATE = os.path.join(ROOT, "template.yaml")
# Set by make deploy itself from its own settings: not through EXTRA_PARAMS.
OWN = ("WarehouseBucket", "WarehousePrefix", "DestinationSecretArn", "SourceNamespaces", "ArtifactsBucket",
       "ArtifactsPrefix", "CodeVersion")


def load_template(path: str = TEMPLATE) -> Dict[str, Any]:
    """template.yaml with CloudFormation's short forms (!Ref, !Sub, ...) read as their long forms."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def tag(loader: Any, suffix: str, node: Any) -> Dict[str, Any]:
        name = "Ref" if suffix == "Ref" else ("Fn::GetAtt" if suffix == "GetAtt" else f"Fn::{suffix}")
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
            if suffix == "GetAtt":
                value = value.split(".", 1)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        return {name: value}

    Loader.add_multi_constructor("!", tag)
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=Loader)


def parse_pairs(text: str, names: List[str]) -> Dict[str, str]:
    """`Key=Value ...` into a dict; a pair starts at a known name followed by '=' after a space."""
    text = (text or "").strip()
    if not text:
        return {}
    starts = [m.start(1) for m in re.finditer(r"(?:^|\s)(" + "|".join(map(re.escape, names)) + r")=", text)]
    if not starts or starts[0] != 0:
        first = text.split("=", 1)[0].split()[0] if "=" in text else text.split()[0]
        raise awsenv.SetupError(f"EXTRA_PARAMS: {first!r} is not a stack parameter of template.yaml "
                                f"(write Key=Value pairs; the parameters: {', '.join(sorted(names))})")
    pairs: Dict[str, str] = {}
    for begin, end in zip(starts, starts[1:] + [len(text)]):
        key, _, value = text[begin:end].strip().partition("=")
        if key in pairs:
            raise awsenv.SetupError(f"EXTRA_PARAMS names {key} twice")
        pairs[key] = value
    return pairs


def check(pairs: Dict[str, str], template: Dict[str, Any]) -> None:
    """SetupError for the first value the template's parameter constraints refuse."""
    spec = template["Parameters"]
    for key, value in pairs.items():
        where = f"EXTRA_PARAMS {key}={value!r}"
        if key in OWN:
            raise awsenv.SetupError(f"{where}: make deploy sets {key} from its own settings (README, Deploy)")
        if "\n" in value:
            raise awsenv.SetupError(f"{where}: a value cannot hold a line break")
        _check_rule(spec[key], value, where)
    _check_rules(pairs, template)
    if "ScheduleMaintenance" in pairs:
        _check_maintenance(pairs["ScheduleMaintenance"])


def _holds(expr: Any, values: Dict[str, str]) -> Any:
    """A Rules expression (Ref, Fn::Equals, Fn::Not, Fn::And, Fn::Or) over the parameters' values."""
    if not isinstance(expr, dict):
        return str(expr)
    (fn, arg), = expr.items()
    if fn == "Ref":
        return values[arg]
    parts = [_holds(a, values) for a in (arg if isinstance(arg, list) else [arg])]
    if fn == "Fn::Equals":
        return parts[0] == parts[1]
    if fn == "Fn::Not":
        return not parts[0]
    if fn in ("Fn::And", "Fn::Or"):
        return all(parts) if fn == "Fn::And" else any(parts)
    raise ValueError(f"template.yaml Rules: {fn} is not evaluated by infra/stack_params.py")


def with_defaults(pairs: Dict[str, str], template: Dict[str, Any]) -> Dict[str, str]:
    """Every parameter's value: the given ones, the template's defaults for the rest."""
    return {**{k: str(v.get("Default", "")) for k, v in template["Parameters"].items()}, **pairs}


def _check_rules(pairs: Dict[str, str], template: Dict[str, Any]) -> None:
    """SetupError for the first of the template's Rules the parameters break (CloudFormation would
    refuse the stack for it, after the upload)."""
    values = with_defaults(pairs, template)
    for name, rule in (template.get("Rules") or {}).items():
        if "RuleCondition" in rule and not _holds(rule["RuleCondition"], values):
            continue
        for assertion in rule["Assertions"]:
            if not _holds(assertion["Assert"], values):
                raise awsenv.SetupError(f"EXTRA_PARAMS: {assertion['AssertDescription'].strip()} (template.yaml "
                                        f"Rules {name})")


def _check_number(rule: Dict[str, Any], value: str, where: str) -> None:
    try:
        number = float(value)
    except ValueError:
        raise awsenv.SetupError(f"{where}: must be a number") from None
    if "MinValue" in rule and number < float(rule["MinValue"]):
        raise awsenv.SetupError(f"{where}: must be at least {rule['MinValue']}")
    if "MaxValue" in rule and number > float(rule["MaxValue"]):
        raise awsenv.SetupError(f"{where}: must be at most {rule['MaxValue']}")


def _check_rule(rule: Dict[str, Any], value: str, where: str) -> None:
    """One value against its parameter's Type, AllowedValues, AllowedPattern and lengths."""
    if rule.get("Type") == "Number":
        _check_number(rule, value, where)
    allowed = rule.get("AllowedValues")
    if allowed is not None and value not in [str(a) for a in allowed]:
        shown = ", ".join(repr(str(a)) for a in allowed)
        raise awsenv.SetupError(f"{where}: must be one of {shown}")
    pattern = rule.get("AllowedPattern")
    if pattern and not re.fullmatch(pattern, value):
        why = rule.get("ConstraintDescription") or f"does not match the parameter's pattern {pattern}"
        raise awsenv.SetupError(f"{where}: {why}")
    if "MinLength" in rule and len(value) < rule["MinLength"]:
        raise awsenv.SetupError(f"{where}: must be at least {rule['MinLength']} characters")
    if "MaxLength" in rule and len(value) > rule["MaxLength"]:
        raise awsenv.SetupError(f"{where}: must be at most {rule['MaxLength']} characters")


def _check_maintenance(value: str) -> None:
    """The periodic runs' maintenance, with the trigger's own rules (a value every run would fail on)."""
    import json

    from olake_cow.core.errors import OlakeCowError
    from olake_cow.core.maintenance import options_from_payload

    try:
        options = options_from_payload(json.loads(value or "{}"))
    except ValueError:
        raise awsenv.SetupError(f"EXTRA_PARAMS ScheduleMaintenance={value!r}: not a JSON object") from None
    except OlakeCowError as exc:
        raise awsenv.SetupError(f"EXTRA_PARAMS ScheduleMaintenance: {exc}") from None
    if options.expire_source_hours is not None:
        raise awsenv.SetupError("EXTRA_PARAMS ScheduleMaintenance: source expiry writes OLake's tables; ask for it "
                                "with SourceExpiryHours instead")


def parse(text: str, template: Optional[Dict[str, Any]] = None) -> Dict[str, str]:
    template = template or load_template()
    pairs = parse_pairs(text, list(template["Parameters"]))
    check(pairs, template)
    return pairs


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        print("usage: stack_params.py 'Key=Value ...'\n\n" + (__doc__ or ""))
        return 0

    def run() -> int:
        for key, value in parse(" ".join(args)).items():
            print(f"{key}={value}")
        return 0

    return awsenv.run("deploy", run)


if __name__ == "__main__":
    sys.exit(main())
