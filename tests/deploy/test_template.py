"""template.yaml: least-privilege IAM (read from the template), cfn-lint with no warnings, and a
`sam build` whose Lambda package imports its handler and handles an event under moto."""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from testkit.template import load_template, statements

pytestmark = pytest.mark.deploy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATE = os.path.join(ROOT, "template.yaml")
TOOLS = os.path.join(ROOT, ".venv-deploy", "bin")
# Actions that accept no resource narrower than "*" (or a whole-service pattern), and why.
UNSCOPABLE = {
    "xray:PutTraceSegments": "*",  # X-Ray has no resource types
    "xray:PutTelemetryRecords": "*",
    "logs:DescribeLogGroups": "log-group:*",  # a list call; EMR Serverless checks the job log group exists
    "lakeformation:GetDataAccess": "*",  # no resource types (LakeFormation=true only)
}


def _strings(value):
    """Every literal string inside a (possibly intrinsic) value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)


def _broad(resource: str) -> bool:
    """"*", or an ARN whose resource part is all of a type ("*", "table/*", "log-group:*", bucket "*")."""
    if resource == "*":
        return True
    parts = resource.split(":", 5)
    if len(parts) < 6 or not resource.startswith("arn:"):
        return False
    return re.fullmatch(r"(\*|[A-Za-z-]+[:/]\*)", parts[5]) is not None


def iam_findings(template):
    findings = []
    for name, st in statements(template):
        if st.get("Effect") != "Allow":
            continue
        actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        where = f"{name}/{st.get('Sid', '?')}"
        for a in actions:
            if a == "*" or a.endswith(":*"):
                findings.append(f"{where}: wildcard action {a}")
        if "NotAction" in st or "NotResource" in st:
            findings.append(f"{where}: NotAction/NotResource")
        resources = st.get("Resource")
        for text in _strings(resources):
            if _broad(text) and not all(UNSCOPABLE.get(a) and text.endswith(UNSCOPABLE[a]) for a in actions):
                findings.append(f"{where}: resource {text!r} for {actions}")
        if "iam:PassRole" in actions:
            cond = json.dumps(st.get("Condition", {}))
            if "iam:PassedToService" not in cond:
                findings.append(f"{where}: iam:PassRole without an iam:PassedToService condition")
    return findings


def test_no_iam_statement_has_a_wildcard_action_or_an_avoidable_star_resource():
    template = load_template()
    assert list(statements(template)), "no IAM statements found: the checker is not reading the template"
    assert iam_findings(template) == []


@pytest.mark.parametrize("statement, finding", [
    ({"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::b/*"}, "wildcard action s3:*"),
    ({"Effect": "Allow", "Action": ["glue:GetTable"], "Resource": "*"}, "resource '*'"),
    ({"Effect": "Allow", "Action": "*", "Resource": "*"}, "wildcard action *"),
    ({"Effect": "Allow", "Action": "iam:PassRole", "Resource": {"Fn::GetAtt": ["R", "Arn"]}}, "iam:PassedToService"),
    ({"Effect": "Allow", "Action": "s3:GetObject", "Resource": [{"Fn::Sub": "arn:aws:s3:::*"}]}, "resource"),
    ({"Effect": "Allow", "Action": "glue:GetTable", "Resource": "arn:aws:glue:r:1:table/*"}, "resource"),
    ({"Effect": "Allow", "Action": "logs:PutLogEvents", "Resource": "arn:aws:logs:r:1:log-group:*"}, "resource"),
])
def test_the_iam_check_catches_broad_statements(statement, finding):
    template = {"Resources": {"R": {"Type": "AWS::IAM::Role", "Properties": {
        "Policies": [{"PolicyDocument": {"Statement": [statement]}}]}}}}
    assert any(finding in f for f in iam_findings(template))


def test_the_job_and_trigger_roles_cover_what_they_call():
    """Every AWS call the trigger and the job make appears in their role."""
    template = load_template()
    granted = {}
    for name, st in statements(template):
        acts = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        granted.setdefault(name, set()).update(acts)
    trigger_calls = {"emr-serverless:StartJobRun", "emr-serverless:GetJobRun", "emr-serverless:TagResource",
                     "iam:PassRole", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem",
                     "scheduler:CreateSchedule", "scheduler:UpdateSchedule", "secretsmanager:GetSecretValue",
                     "s3:GetObject", "glue:GetTable", "glue:GetTables"}
    job_calls = {"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:ListBucket", "glue:GetTable",
                 "glue:UpdateTable", "glue:CreateTable", "glue:CreateDatabase", "glue:DeleteTable",
                 "secretsmanager:GetSecretValue", "logs:PutLogEvents"}
    assert trigger_calls - granted["TriggerRole"] == set()
    assert job_calls - granted["JobRole"] == set()
    env = template["Resources"]["TriggerFunction"]["Properties"]["Environment"]["Variables"]
    from olake_trigger.settings import _REQUIRED

    assert set(_REQUIRED.values()) <= set(env), "the template misses a required trigger setting"


def _tool(name):
    path = os.path.join(TOOLS, name)
    if not os.path.exists(path):
        if os.environ.get("CI"):
            pytest.fail(f"{path} missing: make test installs it (make deploy-tools)")
        pytest.skip(f"{path} missing: run make deploy-tools")
    return path


def test_cfn_lint_passes_with_no_warnings():
    proc = subprocess.run([_tool("cfn-lint"), TEMPLATE], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "", proc.stdout + proc.stderr


def test_sam_build_package_imports_its_handler_and_handles_an_event(tmp_path):
    build = tmp_path / "build"
    env = dict(os.environ, SAM_CLI_TELEMETRY="0")
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([_tool("sam"), "build", "--build-in-source", "--template", TEMPLATE,
                           "--build-dir", str(build), "--cache-dir", str(tmp_path / "cache")],
                          cwd=ROOT, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    package = build / "TriggerFunction"
    script = textwrap.dedent("""
        import json
        from moto import mock_aws
        from testkit.aws import Account

        class Patch:  # the bits of pytest's monkeypatch that Account uses
            def setenv(self, k, v):
                import os; os.environ[k] = v
            def setattr(self, obj, name, value):
                setattr(obj, name, value)

        import os
        os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                          AWS_DEFAULT_REGION="us-east-1", AWS_REGION="us-east-1",
                          POWERTOOLS_TRACE_DISABLED="true", POWERTOOLS_METRICS_NAMESPACE="OlakeCow")
        with mock_aws():
            account = Account(Patch())
            result = account.invoke(account.commit_event("sales", "orders"))
            import olake_trigger, olake_cow, aws_lambda_powertools
            print("RESULT " + json.dumps({"result": result, "runs": len(account.job_runs()),
                  "files": [olake_trigger.__file__, olake_cow.__file__, aws_lambda_powertools.__file__]}))
    """)
    # The built package first, as Lambda puts it (then the repository, for the test kit).
    env["PYTHONPATH"] = os.pathsep.join([str(package), ROOT])
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    line = [ln for ln in run.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    out = json.loads(line[len("RESULT "):])
    assert out["result"]["status"] == "started" and out["runs"] == 1
    assert all(f.startswith(str(package)) for f in out["files"]), out["files"]


def test_the_periodic_schedule_input_is_a_valid_schedule_payload():
    from olake_trigger.events import RunRequest, classify
    from olake_trigger.settings import from_env

    t = load_template()
    body, names = t["Resources"]["PeriodicRuns"]["Properties"]["Target"]["Input"]["Fn::Sub"]
    assert names["List"]["Fn::Join"][1] == {"Ref": "SourceNamespaces"}
    text = (body.replace("${List}", '", "'.join(["sales", "crm"]))
            .replace("${ScheduleMaintenance}", t["Parameters"]["ScheduleMaintenance"]["Default"]))
    assert re.fullmatch(t["Parameters"]["ScheduleMaintenance"]["AllowedPattern"],
                        t["Parameters"]["ScheduleMaintenance"]["Default"])
    env = {"OLAKE_SECRET_ID": "s", "STATE_TABLE": "t", "EMR_APPLICATION_ID": "a", "EMR_EXECUTION_ROLE_ARN": "r",
           "JOB_ENTRY_POINT": "s3://bkt/m.py", "JOB_PY_FILES": "s3://bkt/c.zip", "SUMMARY_S3_URI": "s3://bkt/s",
           "SOURCE_NAMESPACES": "sales,crm"}
    env["SOURCE_EXPIRY_HOURS"] = str(t["Parameters"]["SourceExpiryHours"]["Default"])
    ev = classify(json.loads(text), from_env(env), "s3://bkt/wh", "req")
    assert isinstance(ev, RunRequest) and [ns for ns, _ in ev.targets] == ["sales", "crm"]
    # by default the periodic runs maintain mirrors only: nothing writes OLake's tables
    assert ev.options.maintenance.expire_source_hours is None and ev.options.maintenance.compact_files


def _condition(template, name, params):
    """A template condition evaluated for the given parameter values (defaults for the rest)."""
    values = {k: str(v.get("Default", "")) for k, v in template["Parameters"].items()}
    values.update({k: str(v) for k, v in params.items()})

    def ev(node):
        if isinstance(node, dict):
            (fn, arg), = node.items()
            if fn == "Ref":
                return values[arg]
            if fn == "Condition":
                return ev(template["Conditions"][arg])
            if fn == "Fn::Equals":
                return str(ev(arg[0])) == str(ev(arg[1]))
            if fn == "Fn::Not":
                return not ev(arg[0])
            if fn == "Fn::Or":
                return any(ev(a) for a in arg)
            if fn == "Fn::And":
                return all(ev(a) for a in arg)
            raise AssertionError(f"condition function {fn} not handled")
        return node

    return ev(template["Conditions"][name])


@pytest.mark.parametrize("params, writes", [
    ({}, False),  # the defaults
    ({"SourceMode": "readonly", "SourceExpiryHours": 0}, False),
    ({"SourceMode": "readonly", "SourceExpiryHours": 168}, True),
    ({"SourceMode": "truncate"}, True),
    ({"SourceMode": ""}, True),
])
def test_the_job_may_write_olakes_tables_only_in_truncate_mode_or_when_source_expiry_is_asked_for(params, writes):
    t = load_template()
    assert t["Parameters"]["SourceMode"]["Default"] == "readonly"
    assert "expire_source" not in t["Parameters"]["ScheduleMaintenance"]["Default"]
    assert _condition(t, "WritesSource", params) is writes


def _resolve(value, conditions):
    """The template value with each Fn::If decided by `conditions` (name -> bool)."""
    if isinstance(value, dict):
        if "Fn::If" in value:
            name, yes, no = value["Fn::If"]
            return _resolve(yes if conditions[name] else no, conditions)
        return {k: _resolve(v, conditions) for k, v in value.items()}
    if isinstance(value, list):
        items = [_resolve(v, conditions) for v in value]
        return [v for v in items if v != {"Ref": "AWS::NoValue"}]
    return value


@pytest.mark.parametrize("readonly", [True, False])
def test_a_readonly_deployment_gives_the_job_no_write_access_to_olakes_tables(readonly):
    role = load_template()["Resources"]["JobRole"]
    doc = _resolve(role["Properties"]["Policies"][0]["PolicyDocument"],
                   {"WritesSource": not readonly, "HasWarehousePrefix": True, "UsesLakeFormation": False})
    writes = [st for st in doc["Statement"] if {"s3:PutObject", "s3:DeleteObject"} & set(st["Action"])
              and any("WarehouseBucket" in t for t in _strings(st["Resource"]))]
    [write] = writes
    resource = write["Resource"]["Fn::Sub"]
    glue_source = [st for st in doc["Statement"] if st.get("Sid") == "GlueSourceTables"][0]
    if readonly:
        assert resource.endswith("/${WarehousePrefix}/*_cow/*_cow/*")
        assert "glue:UpdateTable" not in glue_source["Action"]
    else:
        assert resource.endswith("/${WarehousePrefix}/*")
        assert "glue:UpdateTable" in glue_source["Action"]


@pytest.mark.parametrize("label, accepted", [
    ("emr-7.12.0", True), ("emr-7.14.0", True), ("emr-spark-8.1.0", True),
    ("emr-spark-8.0.0", False),  # Spark 4.0: not a stack the tests run
    ("emr-spark-8.2.0", False), ("emr-6.15.0", False), ("emr-7.12", False), (" emr-7.12.0", False),
    ("emr-7.13.0", True), ("emr-7.0.0", False), ("emr-7.11.0", False),  # Iceberg 1.9 and older: not tested
    ("emr-7.99.9", False),  # no such release
])
def test_the_release_labels_the_template_accepts_are_the_tested_stacks(label, accepted):
    from infra.iceberg_jars import SPARK4_RELEASES

    t = load_template()
    assert bool(re.fullmatch(t["Parameters"]["EmrReleaseLabel"]["AllowedPattern"], label)) is accepted
    assert _condition(t, "OnSpark4", {"EmrReleaseLabel": label}) is (label in SPARK4_RELEASES)


@pytest.mark.parametrize("label", ["emr-7.12.0", "emr-spark-8.1.0"])
def test_the_job_runs_the_releases_iceberg_on_7x_and_the_pinned_spark4_runtime_on_8_1(label):
    """The jar the template gives the trigger for each release: EMR 7's own, or the Spark 4.1 runtime
    pinned in infra/iceberg_jars.py, at the key `make deploy` uploads it to (package_job.upload_jar)."""
    from infra.iceberg_jars import job_jar

    t = load_template()
    value = t["Resources"]["TriggerFunction"]["Properties"]["Environment"]["Variables"]["ICEBERG_JAR"]
    jar = _resolve(value, {"OnSpark4": _condition(t, "OnSpark4", {"EmrReleaseLabel": label})})
    pinned = job_jar(label)
    if pinned is None:
        assert jar == "/usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar"
    else:
        assert jar == {"Fn::Sub": "s3://${ArtifactsBucket}/${ArtifactsPrefix}/code/jars/" + pinned.file}
        assert pinned.artifact.startswith("iceberg-spark-runtime-4.1_")
        [read_code] = [st for st in t["Resources"]["JobRole"]["Properties"]["Policies"][0]["PolicyDocument"][
            "Statement"] if st.get("Sid") == "ReadCode"]
        assert read_code["Action"] == "s3:GetObject" and read_code["Resource"]["Fn::Sub"].endswith(
            "/${ArtifactsPrefix}/code/*")


def test_the_trigger_settings_from_the_template_defaults_parse_and_the_dashboard_shows_the_metrics():
    """Every parameter the Lambda's environment takes, at its default, is accepted by the trigger's
    settings; the dashboard is valid JSON and plots the cost and run metrics the trigger publishes."""
    from olake_trigger.settings import from_env

    t = load_template()
    env_spec = t["Resources"]["TriggerFunction"]["Properties"]["Environment"]["Variables"]
    params = t["Parameters"]
    env = {"OLAKE_SECRET_ID": "s", "STATE_TABLE": "t", "EMR_APPLICATION_ID": "a", "EMR_EXECUTION_ROLE_ARN": "r",
           "JOB_ENTRY_POINT": "s3://bkt/m.py", "JOB_PY_FILES": "s3://bkt/c.zip", "SUMMARY_S3_URI": "s3://bkt/s",
           "SOURCE_NAMESPACES": "sales"}
    for var, value in env_spec.items():
        if isinstance(value, dict) and set(value) == {"Ref"} and "Default" in params.get(value["Ref"], {}):
            env[var] = str(params[value["Ref"]].get("Default", ""))
    settings = from_env(env)
    assert settings.table_metrics_limit == 0 and settings.mirror_format is None
    assert settings.price_vcpu_hour == float(params["PriceVcpuHour"]["Default"]) > 0
    body = t["Resources"]["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    widgets = json.loads(body.replace("${AWS::Region}", "us-east-1").replace("${TriggerFunction}", "f"))["widgets"]
    plotted = json.dumps(widgets)
    for metric in ("EstimatedCostUSD", "BilledVCPUHours", "BilledMemoryGBHours", "TablesMerged", "Skipped",
                   "JobsStarted", "LagSeconds"):
        assert metric in plotted, metric


def test_try_local_stands_in_only_for_what_motos_cloudformation_cannot_create():
    """`make try-local` creates template.yaml, through SAM's translator, in moto's CloudFormation. The
    resource types it stands in for are exactly those moto cannot create, and the README names them."""
    from moto.cloudformation.parsing import resource_class_from_type

    from testkit.moto_stack import STAND_INS

    env = dict(os.environ, AWS_DEFAULT_REGION="eu-west-1", PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "emr_job"),
                                                                                        ROOT]))
    done = subprocess.run([_tool("python"), "-m", "testkit.sam", TEMPLATE, "bucket", "key.zip"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    types = {r["Type"] for r in json.loads(done.stdout)["Resources"].values()}
    assert not any(t.startswith("AWS::Serverless::") for t in types)
    assert {t for t in types if resource_class_from_type(t) is None} == set(STAND_INS)
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    assert [t for t in STAND_INS if f"`{t}`" not in readme] == []


@pytest.mark.parametrize("params, refused", [
    ({"EmrReleaseLabel": "emr-spark-8.1.0", "ImageUri": "r.example/olake:1"}, True),
    ({"EmrReleaseLabel": "emr-spark-8.1.0"}, False),
    ({"ImageUri": "r.example/olake:1"}, False),  # the default release is 7.x
    ({"EmrReleaseLabel": "emr-7.12.0", "ImageUri": "r.example/olake:1"}, False),
])
def test_the_job_image_is_refused_on_spark4_by_the_templates_rules_as_make_deploy_checks_them(params, refused):
    """infra/stack_params.py evaluates template.yaml's Rules, so make deploy refuses before any upload
    what CloudFormation would refuse after it."""
    from infra import awsenv, stack_params

    text = " ".join(f"{k}={v}" for k, v in params.items())
    if refused:
        with pytest.raises(awsenv.SetupError, match="Rules ImageIsForEmr7"):
            stack_params.parse(text)
    else:
        assert stack_params.parse(text) == params
