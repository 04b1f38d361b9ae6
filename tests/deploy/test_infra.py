"""infra/ scripts against moto: the bucket step keeps existing notifications, the secret is
validated before it is stored, the job package is complete and reproducible, run_now reports."""
import glob
import hashlib
import json
import os
import re
import zipfile

import boto3
import pytest
from moto import mock_aws

from infra import enable_bucket_events, package_job, put_destination_secret, run_now

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.aws


@pytest.fixture
def aws_env(monkeypatch):
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    with mock_aws():
        yield


def test_bucket_events_are_turned_on_and_existing_notifications_kept(aws_env):
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="lake")
    sqs = boto3.client("sqs")
    queue = sqs.get_queue_attributes(QueueUrl=sqs.create_queue(QueueName="q")["QueueUrl"],
                                     AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    existing = {"QueueConfigurations": [{"Id": "keep-me", "QueueArn": queue, "Events": ["s3:ObjectCreated:*"]}]}
    s3.put_bucket_notification_configuration(Bucket="lake", NotificationConfiguration=existing)
    assert enable_bucket_events.enable(s3, "lake") is True
    config = s3.get_bucket_notification_configuration(Bucket="lake")
    assert [q["Id"] for q in config["QueueConfigurations"]] == ["keep-me"]
    # moto stores EventBridgeConfiguration but leaves it out of GetBucketNotificationConfiguration
    from moto.s3.models import s3_backends

    stored = s3_backends["123456789012"]["aws"].buckets["lake"].notification_configuration
    assert stored.event_bridge == {}


def test_destination_secret_is_validated_then_stored_and_updated(aws_env):
    from olake_cow.core.errors import ConfigError

    sm = boto3.client("secretsmanager")
    with pytest.raises(ConfigError, match="iceberg_s3_path is required"):
        put_destination_secret.put(sm, "olake/destination", '{"type": "ICEBERG", "writer": {"catalog_type": "glue"}}')
    assert sm.list_secrets()["SecretList"] == []  # nothing half-stored
    good = {"type": "ICEBERG", "writer": {"catalog_type": "glue", "iceberg_s3_path": "s3://lake/wh"}}
    arn = put_destination_secret.put(sm, "olake/destination", json.dumps(good))
    good["writer"]["iceberg_db"] = "sales"
    assert put_destination_secret.put(sm, "olake/destination", json.dumps(good)) == arn
    assert json.loads(sm.get_secret_value(SecretId=arn)["SecretString"]) == good


def test_make_secret_takes_a_name_or_the_arn_of_an_existing_secret_and_names_what_it_cannot_take(aws_env):
    from infra import awsenv

    sm = boto3.client("secretsmanager")
    body = json.dumps({"type": "ICEBERG", "writer": {"catalog_type": "glue", "iceberg_s3_path": "s3://lake/wh"}})
    arn = put_destination_secret.put(sm, "olake/destination", body)
    assert put_destination_secret.put(sm, arn, body) == arn  # the ARN updates that secret in place
    elsewhere = arn.replace(":us-east-1:", ":eu-west-1:")
    cases = [(elsewhere, "NAME is a secret in eu-west-1 but this stores in us-east-1: set AWS_REGION=eu-west-1"),
             (arn.replace("olake/destination", "olake/other"), "does not exist in us-east-1: give a name"),
             ("olake destination", "is not a secret name"),
             ("arn:aws:s3:::lake", "is not a Secrets Manager secret ARN")]
    for name, why in cases:
        with pytest.raises(awsenv.SetupError, match=re.escape(why)):
            put_destination_secret.put(sm, name, body)
    assert [s["Name"] for s in sm.list_secrets()["SecretList"]] == ["olake/destination"]  # nothing else created
    sm.delete_secret(SecretId=arn, RecoveryWindowInDays=7)
    with pytest.raises(awsenv.SetupError, match="olake/destination is scheduled for deletion: restore it first"):
        put_destination_secret.put(sm, "olake/destination", body)


def test_the_deploy_preflight_names_a_secret_scheduled_for_deletion(aws_env):
    from infra import awsenv, preflight

    sm = boto3.client("secretsmanager")
    body = json.dumps({"type": "ICEBERG", "writer": {"catalog_type": "glue", "iceberg_s3_path": "s3://lake/wh"}})
    arn = sm.create_secret(Name="olake/gone", SecretString=body)["ARN"]
    sm.delete_secret(SecretId=arn, RecoveryWindowInDays=7)
    with pytest.raises(awsenv.SetupError, match="is scheduled for deletion: restore it first"):
        preflight.read_config(sm, arn)


def test_the_pinned_spark4_jar_is_uploaded_once_and_only_when_it_is_the_pinned_one(tmp_path, aws_env, monkeypatch):
    from infra import awsenv, iceberg_jars

    jar = tmp_path / iceberg_jars.SPARK4_RUNTIME.file
    jar.write_bytes(b"not Iceberg")
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="art")
    with pytest.raises(awsenv.SetupError, match=r"has SHA-256 \w+, pinned"):
        package_job.upload_jar(str(jar), "s3://art/olake-cow/code", s3)
    assert "Contents" not in s3.list_objects_v2(Bucket="art")
    pinned = iceberg_jars.Jar(iceberg_jars.ICEBERG, iceberg_jars.SPARK4_RUNTIME.artifact,
                              iceberg_jars.SPARK4_RUNTIME.version, hashlib.sha256(b"not Iceberg").hexdigest())
    monkeypatch.setitem(iceberg_jars.STACKS, "4", (pinned,))
    where = package_job.upload_jar(str(jar), "s3://art/olake-cow/code", s3)
    assert where == f"s3://art/olake-cow/code/jars/{jar.name}"
    sent = []
    monkeypatch.setattr(s3, "upload_file", lambda *a, **k: sent.append(a))
    package_job.upload_jar(str(jar), "s3://art/olake-cow/code", s3)  # a second deploy: already there
    assert sent == []
    other = tmp_path / "iceberg-spark-runtime-3.5_2.12-9.9.9.jar"
    other.write_bytes(b"x")
    with pytest.raises(awsenv.SetupError, match="is not a jar pinned"):
        package_job.upload_jar(str(other), "s3://art/olake-cow/code", s3)


def test_job_package_is_complete_and_reproducible(tmp_path, aws_env):
    v1 = package_job.build(str(tmp_path / "a"))
    v2 = package_job.build(str(tmp_path / "b"))
    assert v1 == v2
    with zipfile.ZipFile(tmp_path / "a" / "olake_cow.zip") as zf:
        names = set(zf.namelist())
    root = os.path.join(ROOT, "emr_job")
    package = {os.path.relpath(f, root).replace(os.sep, "/")
               for f in glob.glob(os.path.join(root, "olake_cow", "**", "*.py"), recursive=True)}
    assert names == package and "olake_cow/core/planner.py" in names and "olake_cow/spark/merge.py" in names
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="art")
    where = package_job.upload(str(tmp_path / "a"), "s3://art/olake-cow/code", v1, s3)
    assert where == f"s3://art/olake-cow/code/{v1}/"
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket="art")["Contents"]}
    assert keys == {f"olake-cow/code/{v1}/main.py", f"olake-cow/code/{v1}/olake_cow.zip"}


def test_run_now_waits_and_prints_the_summary(aws_env):
    emr = boto3.client("emr-serverless")
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="art")
    app = emr.create_application(name="a", releaseLabel="emr-7.12.0", type="SPARK")["applicationId"]
    job = emr.start_job_run(applicationId=app, clientToken="t", executionRoleArn="arn:aws:iam::123456789012:role/r",
                            jobDriver={"sparkSubmit": {"entryPoint": "s3://art/main.py"}})["jobRunId"]
    lines = []
    assert run_now.wait_and_report(emr, s3, app, job, "s3://art/s.json", echo=lines.append) == 1  # no summary
    summary = {"status": "succeeded", "tables": [{"table": "orders", "status": "merged", "merges": 1,
                                                  "rows_upserted": 5, "rows_deleted": 1}]}
    s3.put_object(Bucket="art", Key="s.json", Body=json.dumps(summary))
    lines.clear()
    assert run_now.wait_and_report(emr, s3, app, job, "s3://art/s.json", echo=lines.append) == 0
    assert any(line.startswith("orders") and " 5 " in line for line in lines), lines


def test_destroy_removes_only_its_own_stacks_debounce_schedules(aws_env):
    from infra import destroy

    scheduler = boto3.client("scheduler")
    target = {"Arn": "arn:aws:lambda:us-east-1:123456789012:function:f", "RoleArn": "arn:aws:iam::123456789012:role/r"}
    for group in ("prod-debounce", "dev-debounce"):
        scheduler.create_schedule_group(Name=group)
        for ns in ("sales", "crm"):
            scheduler.create_schedule(Name=f"olake-cow-{ns}", GroupName=group, Target=target,
                                      ScheduleExpression="at(2030-01-01T00:00:00)", FlexibleTimeWindow={"Mode": "OFF"})
    assert sorted(destroy.delete_schedules(scheduler, destroy.schedule_group("dev"))) == ["olake-cow-crm",
                                                                                         "olake-cow-sales"]
    left = {g: [s["Name"] for s in scheduler.list_schedules(GroupName=g)["Schedules"]]
            for g in ("prod-debounce", "dev-debounce")}
    assert sorted(left["prod-debounce"]) == ["olake-cow-crm", "olake-cow-sales"] and left["dev-debounce"] == []
    assert destroy.delete_schedules(scheduler, "gone-debounce") == []


def _mirror_lake():
    """A bucket, OLake's database and its mirror database, and a readonly mirror's metadata to place."""
    from testkit.aws import fixture

    s3, glue = boto3.client("s3"), boto3.client("glue")
    s3.create_bucket(Bucket="lake")
    glue.create_database(DatabaseInput={"Name": "sales"})
    glue.create_database(DatabaseInput={"Name": "sales_cow"})
    copy = fixture("ro_mirror_after_job.metadata.json")
    copy["properties"].update({"olake-cow.made-by": "olake-cow", "olake-cow.source-table": "sales.orders"})
    return s3, glue, copy


def _glue_mirror(s3, glue, name, meta):
    from testkit.moto_stack import glue_table

    key = f"warehouse/sales_cow/{name}/metadata/00001-a.metadata.json"
    s3.put_object(Bucket="lake", Key=key, Body=json.dumps(meta).encode())
    s3.put_object(Bucket="lake", Key=f"warehouse/sales_cow/{name}/data/0.parquet", Body=b"PAR1 rows")
    glue_table(glue, "sales_cow", name, f"s3://lake/warehouse/sales_cow/{name}", f"s3://lake/{key}")


@pytest.mark.parametrize("edited", [None, "mode-property", "checkpoint"])
def test_destroy_keeps_a_truncate_mirror_the_only_complete_copy_unless_named(aws_env, capsys, edited):
    """--remove-mirrors drops readonly mirrors (copies of OLake's tables) and keeps truncate-mode ones,
    the only complete copy of their data, with their database: whether the mirror says so by its mode
    property or by its checkpoint (a user who edited one of them does not make it droppable).
    --remove-truncate-mirrors drops them too."""
    from infra import destroy
    from testkit.aws import fixture

    s3, glue, copy = _mirror_lake()
    _glue_mirror(s3, glue, "orders_cow", copy)
    only = fixture("mirror_after_job.metadata.json")  # truncate mode: its checkpoint has no sequence number
    only["properties"].update({"olake-cow.made-by": "olake-cow", "olake-cow.source-table": "sales.refunds",
                               "olake-cow.source-mode": "truncate"})
    if edited == "mode-property":
        only["properties"]["olake-cow.source-mode"] = "readonly"
    elif edited == "checkpoint":
        only["properties"].pop("olake-cow.checkpoint")
    _glue_mirror(s3, glue, "refunds_cow", only)
    args = ["--stack", "s", "--skip-stack", "--warehouse", "s3://lake/warehouse", "--namespaces", "sales"]

    def objects():
        return sorted(o["Key"] for o in s3.list_objects_v2(Bucket="lake").get("Contents", []))

    kept = [k for k in objects() if "/refunds_cow/" in k]
    assert destroy.main([*args, "--remove-truncate-mirrors", "--yes"]) == 2  # without --remove-mirrors
    assert "add --remove-mirrors" in capsys.readouterr().err
    assert destroy.main([*args, "--remove-mirrors", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "kept sales_cow.refunds_cow and its database: a truncate-mode mirror, the only complete copy" in out, out
    assert objects() == kept
    assert [t["Name"] for t in glue.get_tables(DatabaseName="sales_cow")["TableList"]] == ["refunds_cow"]
    assert destroy.main([*args, "--remove-mirrors", "--remove-truncate-mirrors", "--yes"]) == 0
    assert objects() == [] and "sales_cow" not in [d["Name"] for d in glue.get_databases()["DatabaseList"]]


@pytest.mark.parametrize("kept", ["truncate-mirror", "users-table", "olakes-table-elsewhere"])
def test_destroy_removes_no_data_where_a_kept_table_keeps_its_files(aws_env, capsys, kept):
    """A readonly mirror's data goes with it, but never where another table keeps its files: someone
    moved the readonly mirror onto the truncate mirror's location, or onto an OLake table of a
    namespace this stack does not mirror (its next merge wrote its metadata there), or keeps a table
    of their own inside the mirror's folder. The mirror's table is dropped, and every object there
    stays."""
    from infra import destroy
    from testkit.aws import fixture
    from testkit.moto_stack import glue_table

    s3, glue, copy = _mirror_lake()
    if kept == "truncate-mirror":
        only = fixture("mirror_after_job.metadata.json")
        only["properties"].update({"olake-cow.made-by": "olake-cow", "olake-cow.source-table": "sales.refunds"})
        _glue_mirror(s3, glue, "refunds_cow", only)
        there = "warehouse/sales_cow/refunds_cow"
        moved = f"{there}/metadata/00002-moved.metadata.json"
        s3.put_object(Bucket="lake", Key=moved, Body=json.dumps(copy).encode())
        glue_table(glue, "sales_cow", "orders_cow", f"s3://lake/{there}", f"s3://lake/{moved}")
    elif kept == "olakes-table-elsewhere":
        there = "warehouse/hr/people"
        olakes = json.dumps(fixture("ro_source_after_job.metadata.json"))
        moved = f"{there}/metadata/00002-moved.metadata.json"
        for key, body in ((f"{there}/metadata/00001-a.metadata.json", olakes), (f"{there}/data/0.parquet", "PAR1"),
                          (moved, json.dumps(copy))):
            s3.put_object(Bucket="lake", Key=key, Body=body.encode())
        glue_table(glue, "sales_cow", "orders_cow", f"s3://lake/{there}", f"s3://lake/{moved}")
    else:
        _glue_mirror(s3, glue, "orders_cow", copy)
        there = "warehouse/sales_cow/orders_cow/notes"
        s3.put_object(Bucket="lake", Key=f"{there}/part-0.csv", Body=b"mine")
        glue.create_table(DatabaseName="sales_cow", TableInput={
            "Name": "notes", "TableType": "EXTERNAL_TABLE", "StorageDescriptor": {"Location": f"s3://lake/{there}"}})
    before = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="lake", Prefix=there + "/")["Contents"])
    assert destroy.main(["--stack", "s", "--skip-stack", "--warehouse", "s3://lake/warehouse", "--namespaces",
                         "sales", "--remove-mirrors", "--yes"]) == 0
    out = capsys.readouterr().out
    after = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="lake", Prefix=there + "/").get("Contents", []))
    assert after == before, "objects of a kept table were removed"
    why = "holds s3://lake/warehouse/hr/people/metadata/00001-a" if kept == "olakes-table-elsewhere" else "overlaps"
    assert f"sales_cow.orders_cow (data kept: its location {why}" in out, out
    left = [d["Name"] for d in glue.get_databases()["DatabaseList"]]
    assert "sales_cow" not in left or "orders_cow" not in [
        t["Name"] for t in glue.get_tables(DatabaseName="sales_cow")["TableList"]]


def test_destroy_keeps_the_data_of_a_mirror_someone_turned_gc_off_on(aws_env, capsys):
    """gc.enabled=false on a readonly mirror says its files may be another table's too: --remove-mirrors
    drops it from Glue and keeps every object under its location (as Iceberg's own drop would), and
    removes nothing of a second mirror someone moved onto that location either."""
    from infra import destroy
    from testkit.moto_stack import glue_table

    s3, glue, copy = _mirror_lake()
    copy["properties"]["gc.enabled"] = "false"
    _glue_mirror(s3, glue, "orders_cow", copy)
    other = json.loads(json.dumps(copy))
    other["properties"].update({"gc.enabled": "true", "olake-cow.source-table": "sales.refunds"})
    other["table-uuid"] = "0f0e0d0c-0b0a-4909-8807-060504030201"
    there = "warehouse/sales_cow/orders_cow"
    moved = f"{there}/metadata/00009-refunds.metadata.json"
    s3.put_object(Bucket="lake", Key=moved, Body=json.dumps(other).encode())
    glue_table(glue, "sales_cow", "refunds_cow", f"s3://lake/{there}", f"s3://lake/{moved}")
    before = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="lake")["Contents"])
    assert destroy.main(["--stack", "s", "--skip-stack", "--warehouse", "s3://lake/warehouse", "--namespaces",
                         "sales", "--remove-mirrors", "--yes"]) == 0
    out = capsys.readouterr().out
    assert sorted(o["Key"] for o in s3.list_objects_v2(Bucket="lake")["Contents"]) == before
    assert "sales_cow.orders_cow (data kept: it has gc.enabled=false" in out, out
    assert "sales_cow.refunds_cow (data kept: its location overlaps that of sales_cow.orders_cow" in out, out
    assert "sales_cow" not in [d["Name"] for d in glue.get_databases()["DatabaseList"]]


REST_WRITER = {"catalog_type": "rest", "catalog_name": "lake", "rest_catalog_url": "https://polaris.internal/api/catalog",
               "oauth2_uri": "https://polaris.internal/api/catalog/v1/oauth/tokens", "credential": "id:Rest-Secret-9",
               "scope": "PRINCIPAL_ROLE:ALL"}


@pytest.mark.parametrize("writer, extra, checked", [
    # Polaris / Lakekeeper: the warehouse is the catalog's name; the files' bucket comes from WAREHOUSE_BUCKET
    ({**REST_WRITER, "iceberg_s3_path": "lake_warehouse"}, "SubnetIds=subnet-1",
     "warehouse lake_warehouse (a REST warehouse name; its files in s3://lake/warehouse)"),
    ({**REST_WRITER, "iceberg_s3_path": "s3://lake/warehouse"}, "SubnetIds=subnet-1", "warehouse s3://lake/warehouse"),
    # Glue's Iceberg REST endpoint in the stack's region: reached without a VPC
    ({**REST_WRITER, "rest_catalog_url": "https://glue.us-east-1.amazonaws.com/iceberg", "iceberg_s3_path": "123:s3",
      "rest_signing_v_4": True, "rest_signing_name": "glue", "aws_region": "us-east-1"}, "",
     "warehouse 123:s3 (a REST warehouse name; its files in s3://lake/warehouse)"),
])
def test_the_deploy_preflight_accepts_the_rest_secrets_of_each_kind(aws_env, writer, extra, checked):
    from infra import preflight

    sm = boto3.client("secretsmanager", region_name="us-east-1")
    arn = sm.create_secret(Name="olake/rest", SecretString=json.dumps({"type": "ICEBERG", "writer": writer}))["ARN"]
    args = preflight.parser().parse_args(["--stack", "s", "--warehouse-bucket", "lake", "--warehouse-prefix",
                                          "warehouse", "--secret-arn", arn, "--namespaces", "sales",
                                          "--extra-params", extra])
    lines = preflight.check(args, sm)
    assert checked in lines and f"secret {arn} (rest catalog)" in lines, lines
    assert "Rest-Secret-9" not in json.dumps(lines)


def test_the_deploy_preflight_reads_the_secret_once(aws_env, capsys):
    from infra import preflight
    from testkit import iam

    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="lake")
    boto3.client("glue", region_name="us-east-1").create_database(DatabaseInput={"Name": "sales"})
    sm = boto3.client("secretsmanager", region_name="us-east-1")
    body = {"type": "ICEBERG", "writer": {"catalog_type": "glue", "iceberg_s3_path": "s3://lake/warehouse"}}
    arn = sm.create_secret(Name="olake/once", SecretString=json.dumps(body))["ARN"]
    with iam.api_calls() as seen:
        code = preflight.main(["--stack", "s", "--warehouse-bucket", "lake", "--warehouse-prefix", "warehouse",
                               "--secret-arn", arn, "--namespaces", "sales", "--region", "us-east-1"])
    assert code == 0, capsys.readouterr()
    reads = [params["SecretId"] for action, params, _ in seen if action == "secretsmanager:GetSecretValue"]
    assert reads == [arn]


def test_the_deploy_preflight_refuses_a_rest_secret_outside_aws_without_a_vpc(aws_env):
    from infra import awsenv, preflight

    sm = boto3.client("secretsmanager", region_name="us-east-1")
    body = {"type": "ICEBERG", "writer": {**REST_WRITER, "iceberg_s3_path": "lake_warehouse"}}
    arn = sm.create_secret(Name="olake/rest2", SecretString=json.dumps(body))["ARN"]
    args = preflight.parser().parse_args(["--stack", "s", "--warehouse-bucket", "lake", "--secret-arn", arn,
                                          "--namespaces", "sales"])
    with pytest.raises(awsenv.SetupError, match="the job must reach its REST endpoint from a VPC"):
        preflight.check(args, sm)


@pytest.mark.parametrize("answer, error, code", [
    ({"status": "refused", "reason": "namespace 'crm' is not one of this stack's source namespaces"}, False, 2),
    ({"status": "invalid_config", "reason": "writer.iceberg_s3_path is required"}, False, 2),
    ({"errorMessage": "Task timed out after 30.00 seconds"}, True, 2),
    ({"status": "skipped", "reason": "nothing new"}, False, 0),
])
def test_run_now_says_a_refusal_in_one_line_on_stderr_naming_the_stack(monkeypatch, capsys, answer, error, code):
    import io

    from infra import awsenv

    class Session:
        def client(self, name):
            outputs = {"Stacks": [{"Outputs": [{"OutputKey": "TriggerFunctionName", "OutputValue": "fn"}]}]}
            payload = {"Payload": io.BytesIO(json.dumps(answer).encode()), **({"FunctionError": "Unhandled"}
                                                                               if error else {})}
            return type("C", (), {"describe_stacks": lambda self, **kw: outputs,
                                  "invoke": lambda self, **kw: payload})()

    monkeypatch.setattr(awsenv, "session", lambda region=None: Session())
    assert run_now.main(["--stack", "olake-prod", "--namespace", "crm", "--no-wait"]) == code
    out, err = capsys.readouterr()
    if code == 2:
        assert out == "" and len(err.strip().splitlines()) == 1, (out, err)
        assert err.startswith("run_now: error: the trigger of stack olake-prod ") and "STACK=" not in out
    else:
        assert json.loads(out)["status"] == "skipped" and err == ""


def test_lake_formation_governance_is_seen_and_the_grants_named_in_one_line(aws_env):
    from infra import lakeformation

    lf, glue = boto3.client("lakeformation"), boto3.client("glue")
    glue.create_database(DatabaseInput={"Name": "sales"})
    glue.create_database(DatabaseInput={"Name": "crm"})
    assert lakeformation.check(lf, glue, "prod", ["sales", "crm"], "lake", "warehouse") == ""  # IAM-only: nothing
    lf.register_resource(ResourceArn="arn:aws:s3:::lake", UseServiceLinkedRole=True)
    line = lakeformation.check(lf, glue, "prod", ["sales", "crm"], "lake", "warehouse")
    assert line.startswith("Lake Formation governs this lake (arn:aws:s3:::lake is a registered data location): "
                           "grant stack prod's job role (output JobRoleArn) DESCRIBE on databases sales, crm")
    for grant in ("databases sales_cow, crm_cow", "DATA_LOCATION_ACCESS on s3://lake/warehouse",
                  "trigger role DESCRIBE"):
        assert grant in line and "\n" not in line
    lf.deregister_resource(ResourceArn="arn:aws:s3:::lake")
    glue.update_database(Name="crm", DatabaseInput={"Name": "crm", "CreateTableDefaultPermissions": []})
    assert "database crm gives new tables no IAM-only permission" in lakeformation.check(
        lf, glue, "prod", ["sales", "crm"], "lake", "warehouse")
    lf.put_data_lake_settings(DataLakeSettings={"DataLakeAdmins": [], "CreateTableDefaultPermissions": []})
    assert "the account's default permissions for new tables are not IAM-only" in lakeformation.check(
        lf, glue, "prod", ["sales"], "lake", "warehouse")


def test_lake_formation_signs_on_literal_settings():
    from infra import lakeformation

    iam = {"CreateTableDefaultPermissions": [{"Principal": {"DataLakePrincipalIdentifier": "IAM_ALLOWED_PRINCIPALS"},
                                              "Permissions": ["ALL"]}]}
    assert lakeformation.signs(iam, ["arn:aws:s3:::lake/other", "arn:aws:s3:::lakehouse"], {"sales": None},
                               "lake", "warehouse") == []  # a sibling prefix and another bucket do not cover it
    assert lakeformation.signs(iam, ["arn:aws:s3:::lake/warehouse/"], {}, "lake", "warehouse") == [
        "arn:aws:s3:::lake/warehouse/ is a registered data location"]


def test_a_deployer_who_cannot_read_lake_formation_is_told_not_refused():
    from infra import lakeformation

    class Denied:
        def get_data_lake_settings(self, **kw):
            from botocore.exceptions import ClientError
            raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "GetDataLakeSettings")

    line = lakeformation.check(Denied(), None, "prod", ["sales"], "lake", "")
    assert line.startswith("could not check Lake Formation (AccessDeniedException); if it governs the lake, grant")
