"""olake-cow stacks on a moto server: the README's deploy -> run-now -> destroy path without an AWS
account. `make secret`, `make bucket-events`, `make deploy` and `make destroy` run exactly as on AWS
(the deploy environment, its checks, the upload, `sam build`, `sam delete`); two things moto cannot
do are stood in for: CloudFormation creating the template's resources (the stack is created from
the same parameters with a stand-in template, and the resources the trigger uses are made by hand),
and Lambda and EMR running code (the trigger's handler runs in this process with the environment
the template gives it; a started run is finished the way the job finishes one: a summary, a log,
the mirror table in Glue, and the end event).

Used by `make try-local` (tools/try_local.py) and tests/deploy/test_two_stacks.py."""
import contextlib
import copy
import gzip
import json
import os
import re
import subprocess
import uuid
from types import SimpleNamespace
from typing import Any, Dict, Iterator, List, Optional, Tuple

import boto3

from infra.stack_params import load_template
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
        self.template = load_template(os.path.join(root, "template.yaml"))
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

    # --- what CloudFormation would create -------------------------------------------------------
    def create_stack(self, stack: str, params: Dict[str, str]) -> None:
        spec = self.template["Parameters"]
        values = {k: str(v.get("Default", "")) for k, v in spec.items()}
        values.update(params)
        resources = self._resources(stack)
        body = {"Description": "olake-cow (a stand-in on moto for template.yaml's resources)",
                "Parameters": {k: {"Type": "String"} for k in spec},
                "Resources": {"TriggerLogGroup": {"Type": "AWS::Logs::LogGroup",  # one the template has too
                                                  "Properties": {"LogGroupName": f"/aws/lambda/{stack}-trigger"}}},
                "Outputs": {"ApplicationId": {"Value": resources["Application"]},
                            "TriggerFunctionName": {"Value": resources["TriggerFunction"]},
                            "StateTableName": {"Value": resources["StateTable"]}}}
        self.client("cloudformation").create_stack(
            StackName=stack, TemplateBody=json.dumps(body),
            Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in values.items()])

    def _resources(self, stack: str) -> Dict[str, str]:
        ddb, emr, scheduler = self.client("dynamodb"), self.client("emr-serverless"), self.client("scheduler")
        table = f"{stack}-state"
        if table not in ddb.list_tables()["TableNames"]:
            ddb.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                             AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                             KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])
        apps = {a["name"]: a["id"] for a in emr.list_applications()["applications"]}
        app = apps.get(stack) or emr.create_application(name=stack, releaseLabel="emr-7.12.0",
                                                        type="SPARK")["applicationId"]
        group = f"{stack}-debounce"
        if group not in [g["Name"] for g in scheduler.list_schedule_groups()["ScheduleGroups"]]:
            scheduler.create_schedule_group(Name=group)
        return {"StateTable": table, "Application": app, "TriggerFunction": f"{stack}-trigger",
                "JobRole.Arn": f"arn:aws:iam::{ACCOUNT}:role/{stack}-job",
                "SchedulerRole.Arn": f"arn:aws:iam::{ACCOUNT}:role/{stack}-scheduler",
                "JobLogGroup": f"/aws/emr-serverless/{stack}", "DebounceSchedules": group}

    def stack_parameters(self, stack: str) -> Dict[str, str]:
        found = self.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]
        return {p["ParameterKey"]: p["ParameterValue"] for p in found.get("Parameters", [])}

    def trigger_env(self, stack: str) -> Dict[str, str]:
        """The trigger Lambda's environment as template.yaml gives it for this stack's parameters."""
        params = self.stack_parameters(stack)
        resources = self._resources(stack)
        spec = self.template["Resources"]["TriggerFunction"]["Properties"]["Environment"]["Variables"]
        evaluate = _Evaluator(stack, self.region, params, self.template, resources)
        return {name: str(evaluate(value)) for name, value in spec.items()}

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
        with self._as_lambda(stack) as handler:
            ctx = SimpleNamespace(function_name=f"{stack}-trigger", memory_limit_in_mb=256,
                                  invoked_function_arn=f"arn:aws:lambda:{self.region}:{ACCOUNT}:function:{stack}-trigger",
                                  aws_request_id=str(uuid.uuid4()))
            return handler.lambda_handler(copy.deepcopy(event), ctx)

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


class _Evaluator:
    """The few CloudFormation intrinsic functions template.yaml's trigger environment uses."""

    def __init__(self, stack: str, region: str, params: Dict[str, str], template: Dict[str, Any],
                 resources: Dict[str, str]):
        spec = template["Parameters"]
        self.values: Dict[str, Any] = {
            k: (params.get(k, "").split(",") if spec[k].get("Type") == "CommaDelimitedList" else params.get(k, ""))
            for k in spec}
        self.values.update({"AWS::StackName": stack, "AWS::Region": region, "AWS::AccountId": ACCOUNT,
                            "AWS::Partition": "aws", **resources})
        self.conditions = template.get("Conditions", {})

    def __call__(self, node: Any) -> Any:
        if not isinstance(node, dict):
            return node
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
            items = self(arg[1]) if isinstance(arg[1], dict) else [self(x) for x in arg[1]]
            return arg[0].join(str(x) for x in items)
        if fn == "Fn::If":
            return self(arg[1] if self.condition(arg[0]) else arg[2])
        raise ValueError(f"unsupported intrinsic {fn}")

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
