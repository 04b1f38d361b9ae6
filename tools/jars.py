"""Fetches the Iceberg jars a local run needs, by their Maven coordinates, pinned with checksums.

    python tools/jars.py DEST [--spark 3|4]      (make setup runs it with DEST=.venv/jars)
    python tools/jars.py DEST --rest-fixture     (make test: the REST reference server, DEST/rest-fixture)
    python tools/jars.py DEST --nessie           (make test: Nessie's server, DEST/nessie)
    python tools/jars.py DEST --test-fs          (make test: the tests' bare local file system, DEST/test-fs)

On EMR the release ships Iceberg; locally, every path (make demo, the tests, the bench, the class
archive's training run) reads the jars from DEST. They are resolved with the Ivy that pyspark
ships (its default resolver is Maven Central; no host is named here), cached in Ivy's own cache
(`~/.ivy2/cache`, or IVY_CACHE), copied to DEST and checked against the SHA-256 pinned in infra/iceberg_jars.py; a
DEST that already holds the pinned jars is left as it is, so nothing is downloaded twice.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Dict

from infra.iceberg_jars import STACKS, Jar, sha256
from testkit.servers import BARE_LOCAL_FS, BARE_LOCAL_FS_DIR, NESSIE, NESSIE_DIR, NESSIE_FILE, REST_FIXTURE_DIR

# The Apache Iceberg REST reference server, for the tests: RESTCatalogServer (the main class of the
# apache/iceberg-rest-fixture image) is published as iceberg-open-api's `test-fixtures` jar, with the
# servlet and adapter in iceberg-core's `tests` jar; the runtime jar the image bundles is not on
# Maven Central, so the server runs from these modules and their dependencies, resolved with Ivy and
# checked against tools/rest-fixture.sha256 (every jar of the class path).
REST_FIXTURE_VERSION = "1.10.1"
REST_FIXTURE_LOCK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rest-fixture.sha256")
_IVY_MODULE = """<ivy-module version="2.0" xmlns:m="http://ant.apache.org/ivy/maven">
  <info organisation="olake-cow" module="rest-fixture"/>
  <dependencies>
    <dependency org="org.apache.iceberg" name="iceberg-core" rev="{v}" conf="default->master,runtime">
      <artifact name="iceberg-core" type="jar" ext="jar"/>
      <artifact name="iceberg-core" type="jar" ext="jar" m:classifier="tests"/>
    </dependency>
    <dependency org="org.apache.iceberg" name="iceberg-open-api" rev="{v}" transitive="false">
      <artifact name="iceberg-open-api" type="jar" ext="jar" m:classifier="test-fixtures"/>
    </dependency>
    <dependency org="org.apache.iceberg" name="iceberg-aws" rev="{v}" conf="default->master" transitive="false"/>
    <dependency org="org.apache.iceberg" name="iceberg-aws-bundle" rev="{v}" conf="default->master"
                transitive="false"/>
    <dependency org="org.apache.avro" name="avro" rev="1.12.0" conf="default->master"/>
    <dependency org="dev.failsafe" name="failsafe" rev="3.3.2" conf="default->master"/>
    <dependency org="org.eclipse.jetty" name="jetty-servlet" rev="11.0.25" conf="default->master,runtime"/>
    <dependency org="org.xerial" name="sqlite-jdbc" rev="3.50.3.0" conf="default->master,runtime"/>
    <dependency org="org.slf4j" name="slf4j-simple" rev="2.0.17" conf="default->master,runtime"/>
    <dependency org="org.apache.hadoop" name="hadoop-client-api" rev="3.3.6" conf="default->master"/>
    <dependency org="org.apache.hadoop" name="hadoop-client-runtime" rev="3.3.6" conf="default->master,runtime"/>
  </dependencies>
</ivy-module>
"""


_CLASSIFIED_MODULE = """<ivy-module version="2.0" xmlns:m="http://ant.apache.org/ivy/maven">
  <info organisation="olake-cow" module="classified"/>
  <dependencies>
    <dependency org="{j.group}" name="{j.artifact}" rev="{j.version}" transitive="false">
      <artifact name="{j.artifact}" type="jar" ext="jar" m:classifier="{c}"/>
    </dependency>
  </dependencies>
</ivy-module>
"""


def ivy_jar() -> str:
    import pyspark

    found = sorted(glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "ivy-*.jar")))
    if not found:
        raise SystemExit("jars: pyspark ships no Ivy jar (pyspark/jars/ivy-*.jar)")
    return found[-1]


def ivy(args: "list[str]", what: str, retrieve: str) -> None:
    """Runs pyspark's Ivy (cached in IVY_CACHE or ~/.ivy2/cache) and retrieves into `retrieve`."""
    cache = os.environ.get("IVY_CACHE") or os.path.join(os.path.expanduser("~"), ".ivy2", "cache")
    cmd = ["java", "-jar", ivy_jar(), *args, "-confs", "default", "-cache", cache,
           "-retrieve", os.path.join(retrieve, "[artifact]-[revision](-[classifier]).[ext]")]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join(done.stdout.strip().splitlines()[-12:])
        raise SystemExit(f"jars: could not resolve {what}:\n{tail}")


def resolve(jar: Jar, dest: str, classifier: str = "") -> str:
    """One jar through Ivy (cached), copied to dest; its checksum checked. A classified artifact
    (Nessie's `runner`) is asked for through a one-dependency Ivy module."""
    name = f"{jar.artifact}-{jar.version}-{classifier}.jar" if classifier else jar.file
    with tempfile.TemporaryDirectory(prefix="olake-cow-jars-") as tmp:
        args = ["-dependency", jar.group, jar.artifact, jar.version, "-notransitive", "-types", "jar"]
        if classifier:
            module = os.path.join(tmp, "ivy.xml")
            with open(module, "w", encoding="utf-8") as f:
                f.write(_CLASSIFIED_MODULE.format(j=jar, c=classifier))
            args = ["-ivy", module, "-types", "jar"]
        ivy(args, jar.coordinate, os.path.join(tmp, "lib"))
        got = os.path.join(tmp, "lib", name)
        if not os.path.exists(got):
            raise SystemExit(f"jars: Ivy retrieved no {name} for {jar.coordinate}")
        actual = sha256(got)
        if actual != jar.sha256:
            raise SystemExit(f"jars: {jar.coordinate} has SHA-256 {actual}, pinned {jar.sha256}")
        os.makedirs(dest, exist_ok=True)
        target = os.path.join(dest, name)
        shutil.copyfile(got, target + ".part")
        os.replace(target + ".part", target)
    return target


def install(dest: str, spark: str) -> int:
    jars = STACKS[spark]
    os.makedirs(dest, exist_ok=True)
    wanted = {j.file for j in jars}
    for stale in glob.glob(os.path.join(dest, "*.jar")):
        if os.path.basename(stale) not in wanted:
            os.remove(stale)
    for jar in jars:
        path = os.path.join(dest, jar.file)
        if os.path.exists(path) and sha256(path) == jar.sha256:
            continue
        print(f"jars: fetching {jar.coordinate}", flush=True)
        resolve(jar, dest)
    with open(os.path.join(dest, ".installed"), "w", encoding="utf-8") as f:
        f.write("\n".join(j.coordinate for j in jars) + "\n")
    return len(jars)


def read_lock() -> Dict[str, str]:
    with open(REST_FIXTURE_LOCK, encoding="utf-8") as f:
        return dict(reversed(line.split()) for line in f if line.strip() and not line.startswith("#"))


def install_rest_fixture(dest: str) -> int:
    """The REST reference server's class path in dest/rest-fixture, every jar checked against the lock."""
    folder = os.path.join(dest, REST_FIXTURE_DIR)
    lock = read_lock()
    stamp = os.path.join(folder, ".installed")
    if os.path.exists(stamp) and all(os.path.exists(os.path.join(folder, n)) for n in lock):
        return len(lock)
    print(f"jars: fetching the Iceberg REST reference server {REST_FIXTURE_VERSION} and its class path", flush=True)
    with tempfile.TemporaryDirectory(prefix="olake-cow-rest-") as tmp:
        module = os.path.join(tmp, "ivy.xml")
        with open(module, "w", encoding="utf-8") as f:
            f.write(_IVY_MODULE.format(v=REST_FIXTURE_VERSION))
        got_dir = os.path.join(tmp, "lib")
        ivy(["-ivy", module, "-types", "jar", "bundle"], "the REST reference server", got_dir)
        got = {n: sha256(os.path.join(got_dir, n)) for n in os.listdir(got_dir)}
        if got != lock:
            diff = sorted(set(got.items()) ^ set(lock.items()))
            raise SystemExit(f"jars: the REST reference server's class path differs from {REST_FIXTURE_LOCK}: {diff}")
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(got_dir, folder)
    with open(stamp, "w", encoding="utf-8") as f:
        f.write(f"iceberg-open-api {REST_FIXTURE_VERSION} test-fixtures\n")
    return len(lock)


def install_pinned(jar: Jar, target: str, what: str, classifier: str = "") -> str:
    """One jar the tests pin (testkit/servers.py) at `target`, unless it is there with its SHA-256."""
    if os.path.exists(target) and sha256(target) == jar.sha256:
        return target
    print(f"jars: fetching {what}", flush=True)
    return resolve(jar, os.path.dirname(target), classifier)


def main(argv: "list[str]") -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dest")
    parser.add_argument("--spark", choices=sorted(STACKS), default="3", help="the Spark line (3: 3.5, 4: 4.1)")
    parser.add_argument("--rest-fixture", action="store_true",
                        help="the Iceberg REST reference server (for the tests) instead of the Spark jars")
    parser.add_argument("--nessie", action="store_true", help="Nessie's server (for the tests) instead")
    parser.add_argument("--test-fs", action="store_true",
                        help="the bare local file system the tests' Spark session writes file:// through, instead")
    args = parser.parse_args(argv)
    if args.test_fs:
        path = install_pinned(BARE_LOCAL_FS, os.path.join(args.dest, BARE_LOCAL_FS_DIR, BARE_LOCAL_FS.file),
                              BARE_LOCAL_FS.coordinate)
        print(f"jars: the tests' bare local file system in {path}")
        return 0
    if args.nessie:
        path = install_pinned(NESSIE, os.path.join(args.dest, NESSIE_DIR, NESSIE_FILE),
                              f"Nessie's server {NESSIE.version} (about 245 MB, once)", "runner")
        print(f"jars: Nessie's server in {path}")
        return 0
    if args.rest_fixture:
        count = install_rest_fixture(args.dest)
        print(f"jars: the REST reference server ({count} jars) in {os.path.join(args.dest, REST_FIXTURE_DIR)}")
        return 0
    count = install(args.dest, args.spark)
    print(f"jars: {count} pinned jars for Spark {args.spark} in {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
