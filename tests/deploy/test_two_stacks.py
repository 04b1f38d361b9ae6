"""Two olake-cow stacks on one warehouse bucket, deployed, run and destroyed through the README's
commands against a moto server (testkit/moto_stack.py says what is stood in for): each stack's
destroy leaves the other stack and every object of OLake's exactly as they were, and keeps the
shared secret and bucket notifications while the other stack uses them."""
import json
import os
import re

import pytest
from tests.deploy.deploy_env import DEPLOY_VENV, REGION

from testkit import iam
from testkit.moto_stack import MotoStacks

pytestmark = [pytest.mark.deploy, pytest.mark.slow,
              pytest.mark.skipif(not os.path.exists(os.path.join(DEPLOY_VENV, ".installed")),
                                 reason="needs .venv-deploy (make deploy-tools)")]
BUCKET = "shared-lake"
DESTINATION = {"type": "ICEBERG", "writer": {"catalog_type": "glue", "iceberg_s3_path": f"s3://{BUCKET}/warehouse",
                                             "aws_region": REGION}}


def test_two_stacks_on_one_bucket_never_touch_each_other(clone, moto_url, client):
    moto = MotoStacks(moto_url, REGION, root=str(clone), deploy_venv=DEPLOY_VENV)
    # OLake's lake: three namespaces, one of them mirrored by neither stack
    moto.seed_lake(BUCKET, "warehouse", {"sales": ["orders", "refunds"], "crm": ["contacts"], "hr": ["people"]})
    (clone / "destination.json").write_text(json.dumps(DESTINATION))
    code, out = moto.make("secret", "FILE=destination.json")
    assert code == 0, out
    arn = re.search(r"arn:aws:secretsmanager:\S+", out).group(0)
    assert moto.make("bucket-events", f"BUCKET={BUCKET}")[0] == 0
    common = {"WAREHOUSE_BUCKET": BUCKET, "WAREHOUSE_PREFIX": "warehouse", "SECRET_ARN": arn}

    # deploy: each stack claims its own artifacts location; a prefix another stack claimed is refused
    code, out = moto.deploy("stack-a", NAMESPACES=" sales, ", **common)  # a trailing comma, spaces
    assert code == 0, out
    assert moto.stack_parameters("stack-a")["SourceNamespaces"] == "sales"
    code, out = moto.deploy("stack-b", NAMESPACES="crm", ARTIFACTS_PREFIX="olake-cow/stack-a", **common)
    assert code == 2 and "is the artifacts location of stack 'stack-a'" in out, out
    # one source, one truncating stack: stack-a mirrors sales readonly
    code, out = moto.deploy("stack-c", NAMESPACES="sales", EXTRA_PARAMS="SourceMode=truncate", **common)
    assert code == 2 and "namespace sales is mirrored by stack 'stack-a' in readonly mode" in out, out
    # a second readonly stack of sales writes the same mirrors: with another delete mode, refused
    code, out = moto.deploy("stack-c", NAMESPACES="sales", EXTRA_PARAMS="DeleteMode=hard", **common)
    assert code == 2 and "mirrored by stack 'stack-a' with DeleteMode='keep'" in out, out
    maintenance = '{"expire_mirror_hours": 168, "compact_files": true}'  # spaces and JSON in one parameter
    code, out = moto.deploy("stack-b", NAMESPACES="crm",
                            EXTRA_PARAMS=f"MirrorFormat=dv ScheduleMaintenance={maintenance}", **common)
    assert code == 0, out
    assert moto.stack_parameters("stack-b")["ScheduleMaintenance"] == maintenance
    env_a, env_b = moto.trigger_env("stack-a"), moto.trigger_env("stack-b")
    assert env_a["SUMMARY_S3_URI"] == f"s3://{BUCKET}/olake-cow/stack-a/summaries"
    assert env_b["POWERTOOLS_SERVICE_NAME"] == "stack-b" and env_b["SCHEDULER_GROUP"] == "stack-b-debounce"

    # run-now: each stack mirrors its own namespace and refuses the other's
    ran_a = moto.run_now("stack-a", "sales", force=True)
    ran_b = moto.run_now("stack-b", "crm", force=True)
    assert ran_a["status"] == ran_b["status"] == "started", (ran_a, ran_b)
    assert ran_a["end"]["status"] == "finished" and ran_a["end"]["summary_status"] == "succeeded"
    with pytest.raises(Exception, match="namespace 'crm' is not one of this stack's source namespaces"):
        moto.run_now("stack-a", "crm")
    # IAM, resource by resource: each trigger's calls are granted by its own stack's role, not by the other's
    for stack, other in (("stack-a", "stack-b"), ("stack-b", "stack-a")):
        calls = moto.calls[stack]
        assert iam.ungranted(calls, moto.role_policies(stack, "TriggerRole")) == [], stack
        assert iam.ungranted(calls, moto.role_policies(other, "TriggerRole")), (stack, other)
    a_objects = moto.objects(BUCKET, "olake-cow/stack-a/")
    assert any("/summaries/sales/" in k for k in a_objects) and any("/logs/" in k for k in a_objects)
    b_before = moto.objects(BUCKET, "olake-cow/stack-b/")
    olake_before = {k: v for k, v in moto.objects(BUCKET, "warehouse/").items() if not k.startswith(
        ("warehouse/sales_cow/", "warehouse/crm_cow/"))}
    crm_mirror_before = moto.objects(BUCKET, "warehouse/crm_cow/")
    assert olake_before and crm_mirror_before and moto.objects(BUCKET, "warehouse/sales_cow/")

    # a user's own (non-Iceberg) table in the mirror database, its data outside the warehouse
    user_data = client("s3").put_object(Bucket=BUCKET, Key="userdata/notes/part-0.csv", Body=b"mine")["ETag"]
    client("glue").create_table(DatabaseName="sales_cow", TableInput={
        "Name": "notes", "TableType": "EXTERNAL_TABLE", "StorageDescriptor": {"Location": f"s3://{BUCKET}/userdata/notes"}})

    # destroy stack a with every removal asked for
    code, out = moto.destroy("stack-a", "--remove-artifacts", "--remove-mirrors", "--remove-secret",
                             "--disable-bucket-events", "--yes")
    assert code == 0, out
    assert "kept sales_cow.notes and its database: not an Iceberg table in S3" in out, out
    assert client("glue").get_table(DatabaseName="sales_cow", Name="notes")["Table"]["Name"] == "notes"
    assert moto.objects(BUCKET, "userdata/") == {"userdata/notes/part-0.csv": user_data}
    assert moto.objects(BUCKET, "olake-cow/stack-a/") == {}
    assert moto.objects(BUCKET, "warehouse/sales_cow/") == {}  # a's mirrors, gone with their data
    assert moto.objects(BUCKET, "olake-cow/stack-b/") == b_before  # b's code, marker, summaries, logs
    assert moto.objects(BUCKET, "warehouse/crm_cow/") == crm_mirror_before
    assert {k: v for k, v in moto.objects(BUCKET, "warehouse/").items()
            if not k.startswith("warehouse/crm_cow/")} == olake_before  # OLake's objects, exactly
    assert "kept the secret" in out and "stack(s) stack-b read it" in out, out
    assert "kept the EventBridge notifications" in out, out
    assert "DeletedDate" not in client("secretsmanager").describe_secret(SecretId=arn)
    assert _bucket_events_on(BUCKET)
    stacks = {s["StackName"]: s["StackStatus"] for s in client("cloudformation").list_stacks()["StackSummaries"]}
    assert stacks["stack-a"] == "DELETE_COMPLETE" and stacks["stack-b"] == "CREATE_COMPLETE"
    assert sorted(d["Name"] for d in client("glue").get_databases()["DatabaseList"] if d["Name"].endswith("_cow")) == [
        "crm_cow", "sales_cow"]  # sales_cow holds the user's table
    assert [t["Name"] for t in client("glue").get_tables(DatabaseName="sales_cow")["TableList"]] == ["notes"]
    assert moto.run_now("stack-b", "crm", force=True)["status"] == "started"  # b still works

    # destroy stack b: the last user of the secret and the notifications removes them
    b_before = moto.objects(BUCKET, "olake-cow/stack-b/")
    code, out = moto.destroy("stack-b", "--remove-artifacts", "--remove-mirrors", "--remove-secret",
                             "--disable-bucket-events", "--yes")
    assert code == 0, out
    assert moto.objects(BUCKET, "olake-cow/") == {}
    assert moto.objects(BUCKET, "warehouse/") == olake_before  # everything left is OLake's, as it was
    assert "DeletedDate" in client("secretsmanager").describe_secret(SecretId=arn)
    assert not _bucket_events_on(BUCKET)


def _bucket_events_on(bucket: str) -> bool:
    from moto.s3.models import s3_backends

    config = s3_backends["123456789012"]["aws"].buckets[bucket].notification_configuration
    return bool(config is not None and config.event_bridge is not None)
