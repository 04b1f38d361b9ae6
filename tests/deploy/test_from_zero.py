"""The README's deploy steps, from a clean copy of the repository without .venv, through `make`,
against a moto server as far as moto allows: the secret, the bucket's EventBridge setting, the job
package uploaded under code/<hash>/, `sam build`, the `sam deploy` command (printed, not run: moto
cannot run the stack's resources), `run_now` against a missing stack, and `make destroy`.

Only the deploy environment (.venv-deploy: SAM CLI, cfn-lint, boto3) is used, never .venv."""
import json
import os
import re
import subprocess
import sys

import pytest

from infra.iceberg_jars import SPARK4_RUNTIME

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY_VENV = os.path.join(ROOT, ".venv-deploy")
REGION = "eu-west-1"

pytestmark = [pytest.mark.deploy, pytest.mark.slow,
              pytest.mark.skipif(not os.path.exists(os.path.join(DEPLOY_VENV, ".installed")),
                                 reason="needs .venv-deploy (make deploy-tools)")]


DESTINATION = {"type": "ICEBERG", "writer": {"catalog_type": "glue", "iceberg_s3_path": "s3://lake/warehouse",
                                             "aws_region": REGION}}


def test_the_readme_deploy_steps_run_from_a_clean_clone(clone, env, make, client):
    s3 = client("s3")
    s3.create_bucket(Bucket="lake", CreateBucketConfiguration={"LocationConstraint": REGION})
    (clone / "destination.json").write_text(json.dumps(DESTINATION))

    # 1. the secret
    code, out = make("secret", "FILE=destination.json")
    assert code == 0, out
    arn = re.search(r"arn:aws:secretsmanager:\S+", out).group(0)
    assert f":{REGION}:" in arn
    stored = client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]
    assert json.loads(stored) == DESTINATION

    # 2. the bucket's EventBridge notifications (moto keeps them out of GetBucketNotificationConfiguration)
    code, out = make("bucket-events", "BUCKET=lake")
    assert code == 0, out
    from moto.s3.models import s3_backends

    assert s3_backends["123456789012"]["aws"].buckets["lake"].notification_configuration.event_bridge == {}

    # 3. package, upload, sam build, and the sam deploy command (not run: moto cannot create the stack)
    code, out = make("deploy", WAREHOUSE_BUCKET="lake", WAREHOUSE_PREFIX="warehouse",
                     NAMESPACES="sales", SECRET_ARN=arn, DEPLOY_DRY_RUN="1")
    assert code == 0, out
    version = re.search(r"code version (\w+)", out).group(1)
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket="lake", Prefix="olake-cow/")["Contents"]}
    own = "olake-cow/olake-cow"  # the stack's own prefix, claimed by its marker
    assert keys == {f"{own}/code/{version}/main.py", f"{own}/code/{version}/olake_cow.zip",
                    f"{own}/.olake-cow-stack.json"}
    assert os.path.exists(clone / ".aws-sam" / "build" / "TriggerFunction" / "olake_trigger" / "handler.py")
    deploy_cmd = out.split("would run:")[1]
    assert f"--region {REGION}" in deploy_cmd and f"CodeVersion={version}" in deploy_cmd
    assert not os.path.exists(clone / ".venv")  # nothing created the development environment
    assert not os.path.exists(os.path.join(env["HOME"], "used")), open(os.path.join(env["HOME"], "used")).read()

    # 4. run_now against a stack that is not there: one line that says so, naming the stack asked for
    code, out = make("run-now", "NAMESPACE=sales", "STACK=olake-cow-dev")
    assert code == 2 and "Traceback" not in out and "stack 'olake-cow-dev' does not exist" in out, out
    code, out = make("destroy", "STACK=olake-cow-dev")
    assert code == 2 and "stack 'olake-cow-dev' does not exist" in out, out

    # 5. teardown of what the stack does not own (the stack itself is not in moto)
    skip = ("DESTROY_ARGS=--skip-stack --remove-artifacts --remove-secret --disable-bucket-events "
            f"--artifacts s3://lake/olake-cow/olake-cow --warehouse s3://lake/warehouse --secret {arn} --bucket lake")
    code, out = make("destroy", skip)
    assert code == 2 and "--yes" in out, out  # data is removed only when confirmed
    s3.put_object(Bucket="lake", Key="warehouse/sales/orders/metadata/v1.metadata.json", Body=b"{}")  # OLake's
    code, out = make("destroy", skip + " --yes")
    assert code == 0, out
    assert s3.list_objects_v2(Bucket="lake", Prefix="olake-cow/").get("KeyCount") == 0
    assert s3.list_objects_v2(Bucket="lake", Prefix="warehouse/").get("KeyCount") == 1  # untouched
    assert "DeletedDate" in client("secretsmanager").describe_secret(SecretId=arn)
    notifications = s3_backends["123456789012"]["aws"].buckets["lake"].notification_configuration
    assert notifications is None or notifications.event_bridge is None


@pytest.mark.parametrize("args, extra, why", [
    (["secret", "FILE=destination.json"], {"AWS_REGION": None}, "no AWS region: set AWS_REGION"),
    (["secret"], {}, "set FILE="),
    (["deploy"], {}, "set WAREHOUSE_BUCKET SECRET_ARN NAMESPACES"),
    (["bucket-events", "BUCKET=no-such-bucket"], {}, "no-such-bucket"),
])
def test_a_missing_setting_or_an_aws_error_is_one_line_that_says_what_to_fix(clone, make, args, extra, why):
    (clone / "destination.json").write_text(json.dumps(DESTINATION))
    code, out = make(*args, **extra)
    assert code == 2, out
    assert why in out and "Traceback" not in out, out


def test_make_deploy_checks_the_secret_and_the_warehouse_before_anything_is_uploaded(make, client, tmp_path):
    s3 = client("s3")
    if "lake2" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket="lake2", CreateBucketConfiguration={"LocationConstraint": REGION})
    here = client("secretsmanager")
    elsewhere = client("secretsmanager", "us-east-2")
    body = json.dumps({"type": "ICEBERG", "writer": {"catalog_type": "glue", "iceberg_s3_path": "s3://lake2/wh"}})
    arn_here = here.create_secret(Name="preflight/here", SecretString=body)["ARN"]
    arn_elsewhere = elsewhere.create_secret(Name="preflight/there", SecretString=body)["ARN"]
    missing = arn_here.replace("preflight/here", "preflight/none")
    base = {"WAREHOUSE_BUCKET": "lake2", "WAREHOUSE_PREFIX": "wh", "NAMESPACES": "sales", "DEPLOY_DRY_RUN": "1"}
    cases = [
        ({"SECRET_ARN": arn_elsewhere}, "SECRET_ARN is in us-east-2 but the stack deploys to eu-west-1"),
        ({"SECRET_ARN": missing}, "does not exist in eu-west-1"),
        ({"SECRET_ARN": arn_here, "WAREHOUSE_PREFIX": "other"}, "writer.iceberg_s3_path is s3://lake2/wh but "
                                                               "WAREHOUSE_BUCKET/WAREHOUSE_PREFIX name s3://lake2/other"),
        ({"SECRET_ARN": arn_here, "WAREHOUSE_BUCKET": "s3://lake2/wh"}, "WAREHOUSE_BUCKET must be a bucket name"),
        ({"SECRET_ARN": arn_here, "NAMESPACES": "Sales"}, "namespace name 'Sales' cannot be used with a glue"),
    ]
    for extra, why in cases:
        code, out = make("deploy", **{**base, **extra})
        assert code == 2 and why in out and "Traceback" not in out, (extra, out)
        assert "packaging the job" not in out  # refused before anything was uploaded
    code, out = make("bucket-events", "BUCKET=s3://lake2/wh")
    assert code == 2 and "must be a bucket name, not a URI or path: use 'lake2'" in out, out
    # emr-spark-8.1.0 runs the pinned Spark 4.1 runtime: a jar that is not it, byte for byte, is refused
    # before anything is uploaded
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / SPARK4_RUNTIME.file).write_bytes(b"not Iceberg")
    code, out = make("deploy", **{**base, "SECRET_ARN": arn_here, "EXTRA_PARAMS": "EmrReleaseLabel=emr-spark-8.1.0",
                                  "SPARK4_JARS": str(jars)})
    assert code == 2 and f"{SPARK4_RUNTIME.file} has SHA-256" in out and "Traceback" not in out, out
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="lake2").get("Contents", []) if "/code/" in o["Key"]] == []


def test_every_infra_script_has_a_complete_help():
    for script in sorted(os.listdir(os.path.join(ROOT, "infra"))):
        path = os.path.join(ROOT, "infra", script)
        if not script.endswith(".py") or "__main__" not in open(path, encoding="utf-8").read():
            continue  # a library of the scripts (awsenv, ownership)
        # as the make targets run them: a module of the infra package, the repository on PYTHONPATH
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "emr_job"), ROOT]))
        done = subprocess.run([os.path.join(DEPLOY_VENV, "bin", "python"), "-m", f"infra.{script[:-3]}", "--help"],
                              capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        assert "Exit codes:" in done.stdout and "usage:" in done.stdout, script
        # every paragraph of the description ends a sentence (no text cut mid-sentence)
        intro = done.stdout.split("usage:")[1].split("\n\n", 1)[1].split("options:")[0]
        intro = intro.split("positional arguments:")[0]
        for para in intro.strip().split("\n\n"):
            if not para.startswith("    "):
                assert para.rstrip().endswith((".", ":", ")")), f"{script}: {para!r}"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
