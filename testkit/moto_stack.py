"""olake-cow stacks on a moto server: the README's deploy -> run-now -> destroy path without an AWS
account. `make secret`, `make bucket-events`, `make deploy` and `make destroy` run exactly as on AWS
(the deploy environment, its checks, the upload, `sam build`, `sam delete`). The stack is the real
template.yaml, through the SAM translator `sam deploy` uses, created by moto's CloudFormation with
the deploy's parameters; what moto cannot do is stood in for:
- the resource types its CloudFormation cannot create (STAND_INS, below): made through moto's own
  APIs from the template's properties, their ids given to the references;
- Lambda and EMR running code: the trigger's handler runs in this process with the environment and
  function name of the stack's Lambda function; a started run is finished the way the job finishes
  one (a summary, a log, the mirror table in Glue, and the end event).

Used by `make try-local` (tools/try_local.py) and tests/deploy/test_two_stacks.py."""
import contextlib
import copy
import gzip
import io
import json
import os
import re
import subprocess
import uuid
import zipfile
from types import SimpleNamespace
from typing import Any, Dict, Iterator, List, Optional, Tuple

import boto3

from olake_cow.core.uris import split_s3

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ACCOUNT = "123456789012"
FIXTURES = os.path.join(ROOT, "tests", "trigger", "fixtures")


def fixture(name: str) -> Dict[str, Any]:
    with open(os.path.join(FIXTURES, f"{name}.metadata.json"), encoding="utf-8") as f:
        return json.load(f)


class MotoStacks:
    def __init__(self, url: str, region: str, root: str = ROOT, deploy_venv: Optional[str] = None):
        self.url, self.region, self.root = url, region, root
        self.deploy_venv = deploy_venv or os.path.join(ROOT, ".venv-deploy")
        self._template_json: Optional[Dict[str, Any]] = None
        _list_parameters_as_cloudformation_shows_them()
        self.stood_in: Dict[str, List[Tuple[str, str]]] = {}
        self.calls: Dict[str, List[Any]] = {}  # each stack's trigger calls (testkit.iam.Call)
        self.env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": region,
                    "AWS_DEFAULT_REGION": region, "AWS_ENDPOINT_URL": url, "SAM_CLI_TELEMETRY": "0"}

    def client(self, name: str) -> Any:
        return boto3.client(name, region_name=self.region, endpoint_url=self.url, aws_access_key_id="testing",
                            aws_secret_access_key="testing")

    # --- the README's commands ------------------------------------------------------------------
    def make(self, *args: str, **env: Optional[str]) -> Tuple[int, str]:
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR", "HOME")}
        full = {k: v for k, v in {**keep, **self.env, **env}.items() if v is not None}
        done = subprocess.run(["make", "--no-print-directory", f"DEPLOY_VENV={self.deploy_venv}", *args],
                              cwd=self.root, env=full, capture_output=True, text=True, timeout=900)
        return done.returncode, done.stdout + done.stderr

    def deploy(self, stack: str, **settings: str) -> Tuple[int, str]:
        """`make deploy` up to `sam deploy` (checks, claim, upload, sam build), then the stack from the
        same parameters. Returns make's exit code and output."""
        out_file = os.path.join(self.root, "build", f"params-{stack}-{uuid.uuid4().hex[:8]}.txt")
        os.makedirs(os.path.dirname(out_file), exist_ok=True)
        code, out = self.make("deploy", STACK=stack, DEPLOY_DRY_RUN="1", DEPLOY_PARAMS_OUT=out_file, **settings)
        if code == 0:
            with open(out_file, encoding="utf-8") as f:
                params = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
            os.remove(out_file)
            self.create_stack(stack, params)
        return code, out

    def destroy(self, stack: str, *args: str) -> Tuple[int, str]:
        return self.make("destroy", f"STACK={stack}", f"DESTROY_ARGS={' '.join(args)}")

    # --- what CloudFormation creates ----------------------------------------------------------
    def create_stack(self, stack: str, params: Dict[str, str]) -> None:
        """The stack from the real template.yaml: through the SAM translator, into moto's
        CloudFormation. The resource types moto's CloudFormation cannot create (STAND_INS) are made
        through moto's own APIs from the same properties, and the template's references to them
        given their ids."""
        translated = self._translated()
        values = {k: str(v.get("Default", "")) for k, v in translated["Parameters"].items()}
        values.update(params)
        resolve = _Resolver(stack, self.region, values, translated)
        made: Dict[str, str] = {}
        resources = translated["Resources"]
        stood_in: List[Tuple[str, str]] = []
        for name, res in resources.items():
            if res["Type"] in STAND_INS_BEFORE and self._stood_in(stack, name, res, resolve, made):
                stood_in.append((name, res["Type"]))
        body = _referring(translated, made, stand_ins=[n for n, r in resources.items() if r["Type"] in STAND_INS])
        cfn = self.client("cloudformation")
        cfn.create_stack(StackName=stack, TemplateBody=json.dumps(body),
                         Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in values.items()],
                         Capabilities=["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"])
        status = cfn.describe_stacks(StackName=stack)["Stacks"][0]["StackStatus"]
        if status != "CREATE_COMPLETE":
            raise RuntimeError(f"moto's CloudFormation left stack {stack} {status}")
        resolve.values.update(self._physical(stack))  # the stood-in ones are in it already
        for name, res in resources.items():
            if res["Type"] in STAND_INS and res["Type"] not in STAND_INS_BEFORE and \
                    self._stood_in(stack, name, res, resolve, made):
                stood_in.append((name, res["Type"]))
        self.stood_in[stack] = sorted(stood_in)

    def _stood_in(self, stack: str, name: str, res: Dict[str, Any], resolve: "_Resolver",
                  made: Dict[str, str]) -> bool:
        """Make a stood-in resource unless its condition is false; whether it was made."""
        if "Condition" in res and not resolve.condition(res["Condition"]):
            return False
        made.update(self._stand_in(stack, name, res, resolve))
        resolve.values.update(made)
        return True

    def _translated(self) -> Dict[str, Any]:
        """template.yaml as `sam deploy` hands it to CloudFormation (SAM's translator, in .venv-deploy),
        its function's code in a bucket as `--resolve-s3` puts it."""
        if self._template_json is None:
            s3 = self.client("s3")
            with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
                s3.create_bucket(Bucket=CODE_BUCKET, CreateBucketConfiguration={"LocationConstraint": self.region})
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w") as z:
                for folder, _, files in os.walk(os.path.join(self.root, "lambda", "olake_trigger")):
                    for f in files:
                        path = os.path.join(folder, f)
                        z.write(path, os.path.relpath(path, os.path.join(self.root, "lambda")))
            s3.put_object(Bucket=CODE_BUCKET, Key=CODE_KEY, Body=buf.getvalue())
            env = {**os.environ, **self.env, "PYTHONPATH": os.pathsep.join([os.path.join(self.root, "emr_job"),
                                                                            self.root])}
            done = subprocess.run([os.path.join(self.deploy_venv, "bin", "python"), "-m", "testkit.sam",
                                   os.path.join(self.root, "template.yaml"), CODE_BUCKET, CODE_KEY],
                                  cwd=self.root, env=env, capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                raise RuntimeError(f"the SAM translator failed: {done.stderr[-2000:]}")
            self._template_json = json.loads(done.stdout)
        return copy.deepcopy(self._template_json)

    def _physical(self, stack: str) -> Dict[str, str]:
        """Each resource's id (Ref) and ARN (GetAtt Arn) in the created stack."""
        out: Dict[str, str] = {}
        for r in self.client("cloudformation").describe_stack_resources(StackName=stack)["StackResources"]:
            name, pid, kind = r["LogicalResourceId"], r.get("PhysicalResourceId", ""), r["ResourceType"]
            out[name] = pid
            arn = {"AWS::IAM::Role": f"arn:aws:iam::{ACCOUNT}:role/{pid}",
                   "AWS::Lambda::Function": f"arn:aws:lambda:{self.region}:{ACCOUNT}:function:{pid}",
                   "AWS::DynamoDB::Table": f"arn:aws:dynamodb:{self.region}:{ACCOUNT}:table/{pid}"}.get(kind, pid)
            out[f"{name}.Arn"] = arn
        return out

    def _stand_in(self, stack: str, name: str, res: Dict[str, Any], resolve: "_Resolver") -> Dict[str, str]:
        """Make one resource moto's CloudFormation cannot, through moto's API; its Ref and Arn."""
        props = resolve(res.get("Properties", {}))
        kind = res["Type"]
        if kind == "AWS::EMRServerless::Application":
            emr = self.client("emr-serverless")
            app = emr.create_application(name=props["Name"], releaseLabel=props["ReleaseLabel"], type=props["Type"])
            return {name: app["applicationId"], f"{name}.Arn": app["arn"]}
        if kind == "AWS::Scheduler::ScheduleGroup":
            arn = self.client("scheduler").create_schedule_group(Name=props["Name"])["ScheduleGroupArn"]
            return {name: props["Name"], f"{name}.Arn": arn}
        if kind == "AWS::Scheduler::Schedule":
            schedule = {k: v for k, v in props.items() if k in ("ScheduleExpression", "FlexibleTimeWindow",
                                                                 "Target", "Description", "GroupName")}
            arn = self.client("scheduler").create_schedule(Name=f"{stack}-{name}", **schedule)["ScheduleArn"]
            return {name: f"{stack}-{name}", f"{name}.Arn": arn}
        if kind == "AWS::SNS::Subscription":
            arn = self.client("sns").subscribe(**props)["SubscriptionArn"]
            return {name: arn}
        if kind == "AWS::CloudWatch::Alarm":
            numbers = {k: float(props[k]) for k in ("Threshold", "Period", "EvaluationPeriods") if k in props}
            numbers.update({k: int(numbers[k]) for k in ("Period", "EvaluationPeriods") if k in numbers})
            self.client("cloudwatch").put_metric_alarm(AlarmName=f"{stack}-{name}", **{**props, **numbers})
            return {name: f"{stack}-{name}"}
        if kind == "AWS::Lambda::EventInvokeConfig":  # the merge function's retry and destinations
            config = {k: (int(v) if k.startswith("Maximum") else v) for k, v in props.items()
                      if k in ("FunctionName", "Qualifier", "MaximumRetryAttempts", "MaximumEventAgeInSeconds",
                               "DestinationConfig")}
            self.client("lambda").put_function_event_invoke_config(**config)
            return {name: f"{props['FunctionName']}:{props.get('Qualifier', '$LATEST')}"}
        raise ValueError(f"no stand-in for {kind}")

    def stack_parameters(self, stack: str) -> Dict[str, str]:
        found = self.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]
        return {p["ParameterKey"]: p["ParameterValue"] for p in found.get("Parameters", [])}

    def _resources(self, stack: str) -> Dict[str, str]:
        out = self._physical(stack)
        out["Application"] = self.outputs(stack)["ApplicationId"]
        return out

    def outputs(self, stack: str) -> Dict[str, str]:
        found = self.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]
        return {o["OutputKey"]: o["OutputValue"] for o in found.get("Outputs", [])}

    def trigger_env(self, stack: str) -> Dict[str, str]:
        """The trigger Lambda's environment as the created stack gives it (moto's Lambda function)."""
        function = self.outputs(stack)["TriggerFunctionName"]
        config = self.client("lambda").get_function_configuration(FunctionName=function)
        # moto keeps a Number parameter's value a number; Lambda's environment is strings
        return {k: str(v) for k, v in config["Environment"]["Variables"].items()}

    # --- the Lambda and EMR, stood in for --------------------------------------------------------
    @contextlib.contextmanager
    def _as_lambda(self, stack: str) -> Iterator[Any]:
        import importlib

        from olake_trigger import handler

        saved = dict(os.environ)
        os.environ.update({**self.env, **self.trigger_env(stack)})
        handler = importlib.reload(handler)  # a cold start: Powertools reads the stack's environment
        try:
            yield handler
        finally:
            os.environ.clear()
            os.environ.update(saved)
            handler.reset()

    def invoke(self, stack: str, event: Dict[str, Any]) -> Dict[str, Any]:
        """The trigger's handler on `event`; its AWS calls, with their resources, go to self.calls."""
        from testkit import iam

        with self._as_lambda(stack) as handler:
            ctx = SimpleNamespace(function_name=f"{stack}-trigger", memory_limit_in_mb=256,
                                  invoked_function_arn=f"arn:aws:lambda:{self.region}:{ACCOUNT}:function:{stack}-trigger",
                                  aws_request_id=str(uuid.uuid4()))
            with iam.api_calls() as seen:
                try:
                    return handler.lambda_handler(copy.deepcopy(event), ctx)
                finally:
                    self.calls.setdefault(stack, []).extend(iam.iam_calls(seen, self.region, ACCOUNT))

    def role_policies(self, stack: str, role: str) -> List[Any]:
        """The inline policy documents of the stack's role `role` (logical id), as moto's IAM holds them."""
        iam = self.client("iam")
        name = self._physical(stack)[role]
        return [iam.get_role_policy(RoleName=name, PolicyName=p)["PolicyDocument"]
                for p in iam.list_role_policies(RoleName=name)["PolicyNames"]]

    def run_now(self, stack: str, namespace: str, **payload: Any) -> Dict[str, Any]:
        """What `make run-now` asks the trigger; a started run is then finished as the job would."""
        out = self.invoke(stack, {"namespace": namespace, **payload})
        if out.get("status") == "started":
            app = self._resources(stack)["Application"]
            run = self.client("emr-serverless").get_job_run(applicationId=app, jobRunId=out["job_run_id"])["jobRun"]
            self.finish_run(stack, run)
            out["end"] = self.invoke(stack, {"source": "aws.emr-serverless", "id": str(uuid.uuid4()),
                                             "detail-type": "EMR Serverless Job Run State Change",
                                             "detail": {"applicationId": app, "jobRunId": run["jobRunId"],
                                                        "state": "SUCCESS"}})
        return out

    def finish_run(self, stack: str, run: Dict[str, Any]) -> None:
        """What a finished run leaves: each table's mirror in Glue (metadata under its location), the
        summary at --summary-out, the driver log under the stack's log location."""
        args = run["jobDriver"]["sparkSubmit"]["entryPointArguments"]
        arg = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
        s3, glue = self.client("s3"), self.client("glue")
        params = self.stack_parameters(stack)
        warehouse = f"s3://{params['WarehouseBucket']}/{params['WarehousePrefix']}".rstrip("/")
        ns, cow_ns = arg["--source-namespace"], arg["--cow-namespace"]
        tables = arg.get("--tables", "").split(",") if arg.get("--tables") else [
            t["Name"] for t in glue.get_tables(DatabaseName=ns)["TableList"]]
        with contextlib.suppress(glue.exceptions.AlreadyExistsException):
            glue.create_database(DatabaseInput={"Name": cow_ns})
        for table in tables:
            location = f"{warehouse}/{cow_ns}/{table}_cow"
            bucket, prefix = split_s3(location)
            meta_key = f"{prefix}/metadata/00001-{uuid.uuid4()}.metadata.json"
            meta = fixture("ro_mirror_after_job")  # the job's mirror of this table: its marker and source
            meta["properties"].update({"olake-cow.made-by": "olake-cow", "olake-cow.source-table": f"{ns}.{table}"})
            s3.put_object(Bucket=bucket, Key=meta_key, Body=json.dumps(meta).encode())
            s3.put_object(Bucket=bucket, Key=f"{prefix}/data/00000-0-{uuid.uuid4()}.parquet", Body=b"PAR1")
            glue_table(glue, cow_ns, f"{table}_cow", location, f"s3://{bucket}/{meta_key}")
        summary = {"status": "succeeded", "duration_s": 42.0, "finished_at": "2026-11-25T10:00:00Z",
                   "tables": [{"table": t, "status": "merged", "rows_upserted": 10, "rows_deleted": 1,
                               "files_written": 1, "duration_s": 10.0, "merges": 1} for t in tables]}
        bucket, key = split_s3(arg["--summary-out"])
        s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(summary).encode())
        log_uri = run.get("configurationOverrides", {}).get("monitoringConfiguration", {}).get(
            "s3MonitoringConfiguration", {}).get("logUri")
        if log_uri:
            bucket, prefix = split_s3(log_uri)
            key = (f"{prefix.rstrip('/')}/applications/{run['applicationId']}/jobs/{run['jobRunId']}"
                   "/SPARK_DRIVER/stdout.gz")
            s3.put_object(Bucket=bucket, Key=key, Body=gzip.compress(b"olake-cow run finished\n"))

    # --- OLake's side ------------------------------------------------------------------------------
    def seed_lake(self, bucket: str, prefix: str, tables: Dict[str, List[str]]) -> None:
        """OLake's tables as Glue and S3 hold them after a sync: metadata, a data file, a Glue entry."""
        s3, glue = self.client("s3"), self.client("glue")
        with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
            s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": self.region})
        for ns, names in tables.items():
            with contextlib.suppress(glue.exceptions.AlreadyExistsException):
                glue.create_database(DatabaseInput={"Name": ns})
            for table in names:
                base = f"{prefix}/{ns}/{table}".lstrip("/")
                meta_key = f"{base}/metadata/00007-{uuid.uuid4()}.metadata.json"
                s3.put_object(Bucket=bucket, Key=meta_key, Body=json.dumps(fixture("ro_source_new_commit")).encode())
                s3.put_object(Bucket=bucket, Key=f"{base}/data/00000-0-{uuid.uuid4()}.parquet", Body=b"PAR1")
                glue_table(glue, ns, table, f"s3://{bucket}/{base}", f"s3://{bucket}/{meta_key}")

    def objects(self, bucket: str, prefix: str = "") -> Dict[str, str]:
        """key -> ETag of every object under `prefix`: what "exactly as it was" is compared by."""
        s3, found = self.client("s3"), {}
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            found.update({o["Key"]: o["ETag"] for o in page.get("Contents", [])})
        return found


def glue_table(glue: Any, database: str, table: str, location: str, metadata: str) -> None:
    table_input = {"Name": table, "TableType": "EXTERNAL_TABLE", "StorageDescriptor": {"Location": location},
                   "Parameters": {"table_type": "ICEBERG", "metadata_location": metadata}}
    try:
        glue.create_table(DatabaseName=database, TableInput=table_input)
    except glue.exceptions.AlreadyExistsException:
        glue.update_table(DatabaseName=database, TableInput=table_input)


def _list_parameters_as_cloudformation_shows_them() -> None:
    """moto's DescribeStacks shows a CommaDelimitedList parameter as a Python list ("['sales']");
    CloudFormation shows what was passed ("sales"). The moto server runs in this process (the tests'
    and try-local's ThreadedMotoServer), so its view is corrected here."""
    from moto.cloudformation import models

    if getattr(models.Stack, "_olake_cow_lists", False):
        return
    shown = models.Stack.parameter_list.fget

    def parameter_list(self: Any) -> List[Dict[str, Any]]:
        return [{**p, "ParameterValue": ",".join(p["ParameterValue"])} if isinstance(p["ParameterValue"], list)
                else p for p in shown(self)]

    models.Stack.parameter_list = property(parameter_list)
    models.Stack._olake_cow_lists = True


# What moto's CloudFormation cannot create (the README's "Try it locally" names them): made through
# moto's APIs from the template's own properties. The first two before the stack (its function's
# environment names them), the others after (they name the stack's resources).
STAND_INS_BEFORE = ("AWS::EMRServerless::Application", "AWS::Scheduler::ScheduleGroup")
STAND_INS = STAND_INS_BEFORE + ("AWS::Scheduler::Schedule", "AWS::SNS::Subscription", "AWS::CloudWatch::Alarm",
                                 "AWS::Lambda::EventInvokeConfig")
CODE_BUCKET = "aws-sam-cli-managed-default-samclisourcebucket-local"  # sam deploy --resolve-s3's bucket
CODE_KEY = "olake-cow/trigger.zip"
_NO_VALUE = object()


def _referring(template: Dict[str, Any], made: Dict[str, str], stand_ins: List[str]) -> Dict[str, Any]:
    """The template without the stood-in resources, its references to them replaced by their ids."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(x) for x in node]
        if not isinstance(node, dict):
            return node
        if set(node) == {"Ref"} and node["Ref"] in made:
            return made[node["Ref"]]
        if set(node) == {"Fn::GetAtt"} and ".".join(node["Fn::GetAtt"]) in made:
            return made[".".join(node["Fn::GetAtt"])]
        if set(node) == {"Fn::Sub"} and isinstance(node["Fn::Sub"], str):
            return {"Fn::Sub": re.sub(r"\$\{([^}]+)\}", lambda m: made.get(m.group(1), m.group(0)), node["Fn::Sub"])}
        return {k: walk(v) for k, v in node.items()}

    body = walk({k: v for k, v in template.items() if k != "Resources"})
    body["Resources"] = {}
    for name, res in template["Resources"].items():
        if name in stand_ins:
            continue
        res = walk(res)
        if "DependsOn" in res:
            deps = [d for d in ([res["DependsOn"]] if isinstance(res["DependsOn"], str) else res["DependsOn"])
                    if d not in stand_ins]
            res["DependsOn"] = deps
        body["Resources"][name] = res
    return body


def template_role_policies(role: str, params: Dict[str, str], stack: str = "olake-cow",
                           region: str = "us-east-1") -> List[Dict[str, Any]]:
    """The inline policy documents of template.yaml's role `role` (logical id) as CloudFormation
    makes them from these parameters, the others at their defaults (no stack needed)."""
    from infra.stack_params import load_template, with_defaults

    template = load_template()
    resolve = _Resolver(stack, region, with_defaults(params, template), template)
    for name in template["Resources"]:  # the attributes a policy may name
        resolve.values[f"{name}.Arn"] = f"arn:aws:cloudformation:{region}:{ACCOUNT}:stand-in/{stack}/{name}"
    return [resolve(p["PolicyDocument"]) for p in template["Resources"][role]["Properties"]["Policies"]]


class _Resolver:
    """CloudFormation's intrinsic functions over a template's parameters and the resources made so
    far: what a stand-in's properties resolve to."""

    def __init__(self, stack: str, region: str, params: Dict[str, str], template: Dict[str, Any]):
        spec = template["Parameters"]
        self.values: Dict[str, Any] = {
            k: (params.get(k, "").split(",") if spec[k].get("Type") == "CommaDelimitedList" else params.get(k, ""))
            for k in spec}
        self.values.update({"AWS::StackName": stack, "AWS::Region": region, "AWS::AccountId": ACCOUNT,
                            "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com", "AWS::NoValue": _NO_VALUE})
        self.conditions = template.get("Conditions", {})

    def __call__(self, node: Any) -> Any:
        if isinstance(node, list):
            return [v for v in (self(x) for x in node) if v is not _NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (fn, arg), = node.items()
            if fn == "Ref":
                return self.values[arg]
            if fn == "Fn::GetAtt":
                return self.values[".".join(arg)]
            if fn == "Fn::Sub":
                text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
                return re.sub(r"\$\{([^}]+)\}", lambda m: str(self(extra[m.group(1)]) if m.group(1) in extra
                                                              else self.values[m.group(1)]), text)
            if fn == "Fn::Join":
                return arg[0].join(str(x) for x in self(arg[1]))
            if fn == "Fn::Split":
                return str(self(arg[1])).split(arg[0])
            if fn == "Fn::If":
                return self(arg[1] if self.condition(arg[0]) else arg[2])
        out = {k: self(v) for k, v in node.items()}
        return {k: v for k, v in out.items() if v is not _NO_VALUE}

    def condition(self, name_or_node: Any) -> bool:
        node = self.conditions[name_or_node] if isinstance(name_or_node, str) else name_or_node
        (fn, arg), = node.items()
        if fn == "Fn::Not":
            return not self.condition(arg[0])
        if fn == "Fn::Equals":
            return str(self(arg[0])) == str(self(arg[1]))
        if fn == "Fn::Or":
            return any(self.condition(a) for a in arg)
        if fn == "Fn::And":
            return all(self.condition(a) for a in arg)
        if fn == "Condition":
            return self.condition(arg)
        raise ValueError(f"unsupported condition {fn}")
