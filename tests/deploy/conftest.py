"""What the deploy tests share: a moto server, a clean copy of the repository, and `make` run in it
with only the deploy environment (Java and any other Python shadowed by stubs that fail)."""
import os
import shutil
import subprocess
import urllib.request

import pytest
from tests.deploy.deploy_env import DEPLOY_VENV, REGION, ROOT

from testkit.ports import free_port


@pytest.fixture(scope="module")
def moto_url():
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    url = f"http://127.0.0.1:{port}"
    # moto's state is one per process: a module that ran before in this worker must leave nothing
    urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST"), timeout=30).close()
    yield url
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


@pytest.fixture(scope="module")
def make(clone, env):
    """`make TARGET ...` in the clean copy: (exit code, output). Keyword arguments are environment
    variables (None removes one)."""
    def run(*args, **extra_env):
        run_env = {k: v for k, v in {**env, **extra_env}.items() if v is not None}
        done = subprocess.run(["make", "--no-print-directory", f"DEPLOY_VENV={DEPLOY_VENV}", *args], cwd=clone,
                              env=run_env, capture_output=True, text=True, timeout=900)
        return done.returncode, done.stdout + done.stderr
    return run


@pytest.fixture(scope="module")
def client(moto_url):
    import boto3

    def make_client(name, region=REGION):
        return boto3.client(name, region_name=region, endpoint_url=moto_url, aws_access_key_id="testing",
                            aws_secret_access_key="testing")
    return make_client


