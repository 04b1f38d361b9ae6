"""template.yaml through the SAM translator the SAM CLI uses, as CloudFormation would receive it after
`sam deploy` (the function's code in S3). Runs in .venv-deploy, where the translator is:

    .venv-deploy/bin/python -m testkit.sam template.yaml BUCKET KEY   # prints the template as JSON
"""
import json
import sys
from typing import Any, Dict

from infra.stack_params import load_template


class _NoManagedPolicies:
    """The translator asks IAM for managed policy ARNs only for a function whose role SAM makes;
    template.yaml gives its own roles."""

    def load(self) -> Dict[str, str]:
        return {}


def translate(path: str, code_bucket: str, code_key: str) -> Dict[str, Any]:
    from samtranslator.translator.transform import transform

    template = load_template(path)
    for resource in template["Resources"].values():
        if resource.get("Type") == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = {"Bucket": code_bucket, "Key": code_key}
    out: Dict[str, Any] = transform(template, {}, _NoManagedPolicies())
    return out


if __name__ == "__main__":
    json.dump(translate(*sys.argv[1:4]), sys.stdout)
