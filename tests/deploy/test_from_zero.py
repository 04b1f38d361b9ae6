"""The README's deploy steps, from a clean copy of the repository without .venv, through `make`,
against a moto server as far as moto allows: the secret, the bucket's EventBridge setting, the job
package uploaded under code/<hash>/, `sam build`, the `sam deploy` command (printed, not run: moto
cannot run the stack's resources), `run_now` against a missing stack, and `make destroy`.

Only the deploy environment (.venv-deploy: SAM CLI, cfn-lint, boto3) is used, never .venv."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys

import boto3
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY_VENV = os.path.join(ROOT, ".venv-deploy")
REGION = "eu-west-1"

pytestmark = [pytest.mark.deploy, pytest.mark.slow,
              pytest.mark.skipif(not os.path.exists(os.path.join(DEPLOY_VENV, ".installed")),
                                 reason="needs .venv-deploy (make deploy-tools)")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def moto_url():
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """The files a commit would hold (tracked or not ignored; no .venv), modification times kept."""
    out = tmp_path_factory.mktemp("clone")
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        src = os.path.join(ROOT, f)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(os.path.join(out, f)), exist_ok=True)
            shutil.copy2(src, os.path.join(out, f))
    assert not os.path.exists(out / ".venv")
    return out


@pytest.fixture(scope="module")
def env(moto_url, tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR")}
    # Java and any Python but the deploy environment's are shadowed by stubs that record a call and
    # fail: the deploy steps must not need them.
    stubs = home / "stubs"
    stubs.mkdir()
    for tool in ("java", "python", "python3", "spark-submit"):
        (stubs / tool).write_text(f"#!/bin/sh\necho {tool} >> {home}/used\nexit 97\n")
        (stubs / tool).chmod(0o755)
    keep["PATH"] = os.pathsep.join([str(stubs), keep.get("PATH", "")])
    return {**keep, "HOME": str(home), "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": REGION, "AWS_ENDPOINT_URL": moto_url, "AWS_CONFIG_FILE": str(home / "none"),
            "AWS_SHARED_CREDENTIALS_FILE": str(home / "none"), "SAM_CLI_TELEMETRY": "0",
            "DEPLOY_VENV": DEPLOY_VENV}


def make(clone, env, *args, **extra_env):
    run_env = {k: v for k, v in {**env, **extra_env}.items() if v is not None}
    done = subprocess.run(["make", "--no-print-directory", f"DEPLOY_VENV={DEPLOY_VENV}", *args], cwd=clone,
                          env=run_env, capture_output=True, text=True, timeout=900)
    return done.returncode, done.stdout + done.stderr


def client(name, moto_url):
    return boto3.client(name, region_name=REGION, endpoint_url=moto_url, aws_access_key_id="testing",
                        aws_secret_access_key="testing")


DESTINATION = {"type": "ICEBERG", "writer": {"catalog_type": "glue", "iceberg_s3_path": "s3://lake/warehouse",
                                             "aws_region": REGION}}


def test_the_readme_deploy_steps_run_from_a_clean_clone(clone, env, moto_url):
    s3 = client("s3", moto_url)
    s3.create_bucket(Bucket="lake", CreateBucketConfiguration={"LocationConstraint": REGION})
    (clone / "destination.json").write_text(json.dumps(DESTINATION))

    # 1. the secret
    code, out = make(clone, env, "secret", "FILE=destination.json")
    assert code == 0, out
    arn = re.search(r"arn:aws:secretsmanager:\S+", out).group(0)
    assert f":{REGION}:" in arn
    stored = client("secretsmanager", moto_url).get_secret_value(SecretId=arn)["SecretString"]
    assert json.loads(stored) == DESTINATION

    # 2. the bucket's EventBridge notifications (moto keeps them out of GetBucketNotificationConfiguration)
    code, out = make(clone, env, "bucket-events", "BUCKET=lake")
    assert code == 0, out
    from moto.s3.models import s3_backends

    assert s3_backends["123456789012"]["aws"].buckets["lake"].notification_configuration.event_bridge == {}

    # 3. package, upload, sam build, and the sam deploy command (not run: moto cannot create the stack)
    code, out = make(clone, env, "deploy", WAREHOUSE_BUCKET="lake", WAREHOUSE_PREFIX="warehouse",
                     NAMESPACES="sales", SECRET_ARN=arn, DEPLOY_DRY_RUN="1")
    assert code == 0, out
    version = re.search(r"code version (\w+)", out).group(1)
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket="lake", Prefix="olake-cow/code/")["Contents"]}
    assert keys == {f"olake-cow/code/{version}/main.py", f"olake-cow/code/{version}/olake_cow.zip"}
    assert os.path.exists(clone / ".aws-sam" / "build" / "TriggerFunction" / "olake_trigger" / "handler.py")
    deploy_cmd = out.split("would run:")[1]
    assert f"--region {REGION}" in deploy_cmd and f"CodeVersion={version}" in deploy_cmd
    assert not os.path.exists(clone / ".venv")  # nothing created the development environment
    assert not os.path.exists(os.path.join(env["HOME"], "used")), open(os.path.join(env["HOME"], "used")).read()

    # 4. run_now against a stack that is not there: one line that says so, naming the stack asked for
    code, out = make(clone, env, "run-now", "NAMESPACE=sales", "STACK=olake-cow-dev")
    assert code == 2 and "Traceback" not in out and "stack 'olake-cow-dev' does not exist" in out, out
    code, out = make(clone, env, "destroy", "STACK=olake-cow-dev")
    assert code == 2 and "stack 'olake-cow-dev' does not exist" in out, out

    # 5. teardown of what the stack does not own (the stack itself is not in moto)
    code, out = make(clone, env, "destroy", "DESTROY_ARGS=--skip-stack --remove-artifacts --remove-secret "
                     f"--disable-bucket-events --artifacts s3://lake/olake-cow --secret {arn} --bucket lake")
    assert code == 2 and "--yes" in out, out  # data is removed only when confirmed
    s3.put_object(Bucket="lake", Key="warehouse/sales/orders/metadata/v1.metadata.json", Body=b"{}")  # OLake's
    code, out = make(clone, env, "destroy", "DESTROY_ARGS=--skip-stack --remove-artifacts --remove-secret "
                     f"--disable-bucket-events --artifacts s3://lake/olake-cow --secret {arn} --bucket lake --yes")
    assert code == 0, out
    assert s3.list_objects_v2(Bucket="lake", Prefix="olake-cow/").get("KeyCount") == 0
    assert s3.list_objects_v2(Bucket="lake", Prefix="warehouse/").get("KeyCount") == 1  # untouched
    assert "DeletedDate" in client("secretsmanager", moto_url).describe_secret(SecretId=arn)
    notifications = s3_backends["123456789012"]["aws"].buckets["lake"].notification_configuration
    assert notifications is None or notifications.event_bridge is None


@pytest.mark.parametrize("args, extra, why", [
    (["secret", "FILE=destination.json"], {"AWS_REGION": None}, "no AWS region: set AWS_REGION"),
    (["secret"], {}, "set FILE="),
    (["deploy"], {}, "set WAREHOUSE_BUCKET SECRET_ARN NAMESPACES"),
    (["bucket-events", "BUCKET=no-such-bucket"], {}, "no-such-bucket"),
])
def test_a_missing_setting_or_an_aws_error_is_one_line_that_says_what_to_fix(clone, env, args, extra, why):
    (clone / "destination.json").write_text(json.dumps(DESTINATION))
    code, out = make(clone, env, *args, **extra)
    assert code == 2, out
    assert why in out and "Traceback" not in out, out


def test_make_deploy_checks_the_secret_and_the_warehouse_before_anything_is_uploaded(clone, env, moto_url):
    s3 = client("s3", moto_url)
    if "lake2" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket="lake2", CreateBucketConfiguration={"LocationConstraint": REGION})
    here = client("secretsmanager", moto_url)
    elsewhere = boto3.client("secretsmanager", region_name="us-east-2", endpoint_url=moto_url,
                             aws_access_key_id="testing", aws_secret_access_key="testing")
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
        code, out = make(clone, env, "deploy", **{**base, **extra})
        assert code == 2 and why in out and "Traceback" not in out, (extra, out)
        assert "packaging the job" not in out  # refused before anything was uploaded
    code, out = make(clone, env, "bucket-events", "BUCKET=s3://lake2/wh")
    assert code == 2 and "must be a bucket name, not a URI or path: use 'lake2'" in out, out


def test_every_infra_script_has_a_complete_help():
    for script in sorted(os.listdir(os.path.join(ROOT, "infra"))):
        if not script.endswith(".py") or script == "awsenv.py":
            continue
        done = subprocess.run([os.path.join(DEPLOY_VENV, "bin", "python"), os.path.join(ROOT, "infra", script),
                               "--help"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "Exit codes:" in done.stdout and "usage:" in done.stdout, script
        # every paragraph of the description ends a sentence (no text cut mid-sentence)
        intro = done.stdout.split("usage:")[1].split("\n\n", 1)[1].split("options:")[0]
        for para in intro.strip().split("\n\n"):
            if not para.startswith("    "):
                assert para.rstrip().endswith((".", ":", ")")), f"{script}: {para!r}"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
