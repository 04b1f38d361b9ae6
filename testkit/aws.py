"""A moto-backed AWS account for the trigger Lambda: S3 warehouse, Secrets Manager config,
DynamoDB state table, EMR Serverless application, Glue catalog and EventBridge Scheduler."""
import copy
import json
import os
import uuid
from types import SimpleNamespace

import boto3

from olake_cow.core.uris import split_s3

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "trigger")
REGION, ACCOUNT = "us-east-1", "123456789012"
BUCKET = "lake"
SECRET_ID = "olake/destination"
SECRETS = {"aws_access_key": "AKIAFAKEKEY00000001", "aws_secret_key": "fake/Secret+Value0123456789"}
GLUE_CONFIG = {"type": "ICEBERG", "writer": {"catalog_type": "glue", "catalog_name": "olake_iceberg",
                                             "iceberg_s3_path": f"s3://{BUCKET}/warehouse",
                                             "aws_region": REGION, **SECRETS}}


def fixture(name: str):
    folder = "events" if not name.endswith(".metadata.json") else "fixtures"
    with open(os.path.join(HERE, folder, name), encoding="utf-8") as f:
        return json.load(f)


class Account:
    """`seed`: OLake's sales.orders and crm.contacts as fixture metadata in Glue. On a moto server
    (AWS_ENDPOINT_URL set) whose bucket and Glue hold a real lake, `config` is that lake's."""

    def __init__(self, monkeypatch, config=GLUE_CONFIG, seed=True):
        self.mp = monkeypatch
        self.s3 = boto3.client("s3", region_name=REGION)
        if BUCKET not in {b["Name"] for b in self.s3.list_buckets().get("Buckets", [])}:
            self.s3.create_bucket(Bucket=BUCKET)
        self.sm = boto3.client("secretsmanager", region_name=REGION)
        self.secret_arn = self.sm.create_secret(Name=SECRET_ID, SecretString=json.dumps(config))["ARN"]
        self.ddb = boto3.client("dynamodb", region_name=REGION)
        if "olake-cow-state" not in self.ddb.list_tables()["TableNames"]:  # a server's: kept between tests
            self.ddb.create_table(TableName="olake-cow-state", BillingMode="PAY_PER_REQUEST",
                                  AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                                  KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])
        self.emr = boto3.client("emr-serverless", region_name=REGION)
        self.app_id = self.emr.create_application(name="olake-cow", releaseLabel="emr-7.12.0",
                                                  type="SPARK")["applicationId"]
        self.glue = boto3.client("glue", region_name=REGION)
        self.scheduler = boto3.client("scheduler", region_name=REGION)
        self.now = 1_795_000_000.0
        self.env = {
            "OLAKE_SECRET_ID": SECRET_ID, "STATE_TABLE": "olake-cow-state",
            "EMR_APPLICATION_ID": self.app_id,
            "EMR_EXECUTION_ROLE_ARN": f"arn:aws:iam::{ACCOUNT}:role/olake-cow-job",
            "JOB_ENTRY_POINT": f"s3://{BUCKET}/olake-cow/code/main.py",
            "JOB_PY_FILES": f"s3://{BUCKET}/olake-cow/code/olake_cow.zip",
            "SUMMARY_S3_URI": f"s3://{BUCKET}/olake-cow/summaries",
            "JOB_LOG_S3_URI": f"s3://{BUCKET}/olake-cow/logs/", "JOB_LOG_GROUP": "/olake-cow/jobs",
            "SOURCE_NAMESPACES": "sales,crm", "QUIET_PERIOD_SECONDS": "0",
            "SCHEDULER_ROLE_ARN": f"arn:aws:iam::{ACCOUNT}:role/olake-cow-scheduler",
        }
        self.lane_requests = []  # the payloads the trigger sent the merge function
        self.apply_env()
        if seed:  # OLake's tables as Glue has them: the trigger starts no run for a namespace or table it lacks
            self.glue_table("sales", "orders", "source_new_commit")
            self.glue_table("crm", "contacts", "source_new_commit")

    def apply_env(self, **changes):
        from olake_trigger import handler

        self.env.update({k: str(v) for k, v in changes.items()})
        for k, v in self.env.items():
            self.mp.setenv(k, v)
        handler.reset()
        self.mp.setattr(handler, "clock", lambda: self.now)

    # --- invoking -------------------------------------------------------------------------
    def invoke(self, event):
        """The trigger's handler, in-process; the express-lane requests it sends are kept (lane_requests)."""
        from olake_trigger import handler
        from testkit import iam

        ctx = SimpleNamespace(function_name="olake-cow-trigger", memory_limit_in_mb=256,
                              invoked_function_arn=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:olake-cow-trigger",
                              aws_request_id=str(uuid.uuid4()))
        with iam.api_calls() as seen:
            try:
                return handler.lambda_handler(copy.deepcopy(event), ctx)
            finally:
                self.lane_requests += [json.loads(p["Payload"]) for action, p, _ in seen
                                       if action == "lambda:InvokeFunction"]

    # --- the express lane -----------------------------------------------------------------
    def add_merge_function(self, **env):
        """The express lane's merge function in moto (never run: moto is told not to) and the
        trigger's settings naming it."""
        iam_client, name = boto3.client("iam", region_name=REGION), f"olake-cow-merge-{uuid.uuid4().hex[:8]}"
        role = iam_client.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                    "Principal": {"Service": "lambda.amazonaws.com"}}]}))
        fn = boto3.client("lambda", region_name=REGION).create_function(
            FunctionName=name, Runtime="python3.13", Role=role["Role"]["Arn"],
            Handler="olake_merge.handler.lambda_handler", Code={"ZipFile": _empty_zip()})
        self.apply_env(MERGE_FUNCTION_ARN=fn["FunctionArn"], **env)
        return fn["FunctionArn"]

    def lane_end_event(self, request, response=None, condition="Success", invocations=1):
        """The merge function's asynchronous-invocation destination record, as Lambda sends it."""
        failed = condition != "Success"
        return {"version": "1.0", "timestamp": "2026-11-29T07:00:00.000Z",
                "requestContext": {"requestId": str(uuid.uuid4()), "condition": condition,
                                   "functionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:olake-cow-merge:$LATEST",
                                   "approximateInvokeCount": invocations},
                "requestPayload": request,
                "responseContext": {"statusCode": 200, "executedVersion": "$LATEST",
                                    **({"functionError": "Unhandled"} if failed else {})},
                "responsePayload": response if response is not None else (
                    {"errorMessage": "Task timed out after 600.00 seconds"} if failed else {})}

    def commit_event(self, namespace: str, table: str, version: int = 7, meta: str = "source_new_commit"):
        """An S3 Object Created event for a new metadata file of namespace.table (uploaded)."""
        key = f"warehouse/{namespace}/{table}/metadata/{version:05d}-{uuid.uuid4()}.metadata.json"
        self.s3.put_object(Bucket=BUCKET, Key=key, Body=json.dumps(fixture(f"{meta}.metadata.json")))
        event = fixture("s3_object_created.json")
        event["id"] = str(uuid.uuid4())
        event["detail"]["object"]["key"] = key
        return event

    def end_event(self, job_run_id: str, state: str = "SUCCESS", app_id=None):
        event = fixture("emr_job_state_change.json")
        event["detail"].update(jobRunId=job_run_id, applicationId=app_id or self.app_id, state=state)
        return event

    # --- AWS state --------------------------------------------------------------------------
    def job_runs(self):
        try:
            runs = self.emr.list_job_runs(applicationId=self.app_id)["jobRuns"]
        except self.emr.exceptions.ResourceNotFoundException:
            return []
        return [self.emr.get_job_run(applicationId=self.app_id, jobRunId=r["id"])["jobRun"] for r in runs]

    def set_job_state(self, job_run_id: str, state: str):
        """moto creates job runs in SUCCESS and never moves them: set the state by hand."""
        from moto.emrserverless.models import emrserverless_backends

        for run in emrserverless_backends[ACCOUNT][REGION].job_runs[self.app_id]:
            if run.id == job_run_id:
                run.state = state

    def schedules(self):
        return self.scheduler.list_schedules()["Schedules"]

    def fire(self, name: str):
        """Invoke the Lambda with a schedule's target input, as EventBridge Scheduler does."""
        target = self.scheduler.get_schedule(Name=name)["Target"]
        return self.invoke(json.loads(target["Input"]))

    def put_summary(self, job_run, summary):
        args = job_run["jobDriver"]["sparkSubmit"]["entryPointArguments"]
        uri = args[args.index("--summary-out") + 1]
        bucket, key = split_s3(uri)
        self.s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(summary))

    def glue_table(self, database: str, table: str, meta):
        """A Glue Iceberg table whose current metadata is the named fixture (or this metadata object)."""
        try:
            self.glue.create_database(DatabaseInput={"Name": database})
        except self.glue.exceptions.AlreadyExistsException:
            pass
        key = f"warehouse/{database}/{table}/metadata/{uuid.uuid4()}.metadata.json"
        body = fixture(f"{meta}.metadata.json") if isinstance(meta, str) else meta
        self.s3.put_object(Bucket=BUCKET, Key=key, Body=json.dumps(body))
        table_input = {"Name": table, "TableType": "EXTERNAL_TABLE",
                       "Parameters": {"table_type": "ICEBERG", "metadata_location": f"s3://{BUCKET}/{key}"}}
        try:
            self.glue.create_table(DatabaseName=database, TableInput=table_input)
        except self.glue.exceptions.AlreadyExistsException:
            self.glue.update_table(DatabaseName=database, TableInput=table_input)

    def state_item(self, namespace: str):
        return self.ddb.get_item(TableName="olake-cow-state", Key={"pk": {"S": f"ns#{namespace}"}}).get("Item", {})


def _empty_zip() -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("olake_merge/handler.py", "def lambda_handler(event, context):\n    return {}\n")
    return buf.getvalue()


def emf_points(text: str):
    """(metric name, value, dimensions) for every EMF record in captured stdout."""
    points = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{") or '"_aws"' not in line:
            continue
        blob = json.loads(line)
        for directive in blob["_aws"]["CloudWatchMetrics"]:
            dims = {d: blob[d] for group in directive["Dimensions"] for d in group}
            for m in directive["Metrics"]:
                value = blob[m["Name"]]
                for v in value if isinstance(value, list) else [value]:
                    points.append((m["Name"], v, dims))
    return points
