"""One local Spark session per test run, and lakes to run the job on.

Which fixture a test takes says what its behaviour depends on:
  lake          the merge itself: every source mode x every mirror format, on one catalog (a merge
                does not depend on the catalog)
  rlake, tlake  behaviour of one source mode (readonly, truncate), in both mirror formats
  catalog_lake  what the catalog does (namespaces, listing, drop and recreate, commits, names): the
                Hadoop and the JDBC (PostgreSQL) catalog; Glue + S3 and Hive have their own modules
Warehouses are file:// URIs, as on object stores: every reader (iceberg-rust included) needs a scheme."""
import itertools
import json
import os
import uuid
from typing import Dict, Optional

import pytest

from olake_cow.cli import main as job_main
from olake_cow.core.identifiers import qualified
from olake_cow.spark.catalog import IcebergCatalog
from olake_cow.spark.session import local_aws_jars, local_iceberg_jar
from testkit import pg
from testkit.local import (
    bare_local_fs,
    fresh_state,
    local_session,
    mirror_problems,
    read_rows,
    write_destination,
    writer_session,
)
from testkit.olake_writer import OlakeWriter

_ns = itertools.count(1)
# The engine a Lake's runs ask for unless a test names one: Spark, which the trigger's EMR runs use
# on every catalog; test_engines.py parametrises both. OLAKE_COW_TEST_ENGINE=auto runs the suite
# under the command line's own default.
TEST_ENGINE = os.environ.get("OLAKE_COW_TEST_ENGINE", "spark")
HADOOP, JDBC = "hcat", "pgcat"
MODES, FORMATS = ("readonly", "truncate"), ("cow", "dv")


@pytest.fixture(scope="session")
def postgres():
    why = pg.available()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is required in CI: {why}")
        pytest.skip(why)
    server = pg.PostgresServer().start()
    yield server
    server.stop()


def file_uri(path: str) -> str:
    return "file://" + os.path.abspath(path)


@pytest.fixture(scope="session")
def destinations(tmp_root, postgres):
    return {
        "hadoop": {"type": "ICEBERG", "writer": {"catalog_type": "hadoop", "catalog_name": HADOOP,
                                                 "iceberg_s3_path": file_uri(os.path.join(tmp_root, "hwh"))}},
        "jdbc": {"type": "ICEBERG", "writer": {
            "catalog_type": "jdbc", "catalog_name": JDBC, "jdbc_url": postgres.jdbc_url,
            "jdbc_username": "iceberg", "jdbc_password": "pg-Secret-123",
            "iceberg_s3_path": file_uri(os.path.join(tmp_root, "jwh"))}},
    }


@pytest.fixture(scope="session")
def spark(destinations):
    """The session every test shares: Iceberg, the PostgreSQL driver, and the AWS SDK jars (Glue and
    S3FileIO, for test_glue.py) on the driver's class path; Hive locks off (test_hive.py runs a
    metastore on Derby, which has no lock support); no whole-stage code generation; file:// on the
    bare local file system (testkit.servers.BARE_LOCAL_FS)."""
    aws = local_aws_jars()
    if not aws and os.environ.get("CI"):
        pytest.fail("the AWS SDK jars are required in CI: make setup fetches iceberg-aws-bundle (tools/jars.py)")
    bare, bare_conf = bare_local_fs()
    if not bare and os.environ.get("CI"):
        pytest.fail("the bare local file system is required in CI: make test-stack fetches it (jars.py --test-fs)")
    classpath = os.pathsep.join([pg.JDBC_JAR] + aws + bare)
    root, _ = local_session(destinations["hadoop"], {
        "spark.jars": ",".join([local_iceberg_jar(), pg.JDBC_JAR]), "spark.driver.extraClassPath": classpath,
        "spark.hadoop.iceberg.engine.hive.lock-enabled": "false",
        # Tests run thousands of queries over a few rows each, where compiling a whole stage costs
        # more than running it: test_mirror's subset took 105 CPU-s without it, 124 with. Spark's
        # interpreted plans give the same rows; the job's cold runs, the soak and bench keep it on.
        "spark.sql.codegen.wholeStage": "false",
        # file:// without a `chmod` fork per file written (testkit.servers): test_mirror and
        # test_readonly on two workers took 326 s and 471 CPU-s instead of 398 s and 588 CPU-s.
        **bare_conf})
    yield root
    root.stop()


class Lake:
    """A fresh namespace in one catalog, an OLake-like writer, and the job's command line in one
    source mode and mirror format. In readonly mode every run also checks that it left the source
    untouched."""

    def __init__(self, spark, destination, tmp_root, kind, mode="readonly", fmt="cow",
                 io: Optional[Dict[str, str]] = None):
        self.kind, self.mode, self.fmt, self.io = kind, mode, fmt, io
        self.engine: Optional[str] = TEST_ENGINE
        self.dest = destination
        self.catalog = destination["writer"]["catalog_name"]
        # Unique across module copies and processes: the JDBC catalog outlives one test.
        self.ns = f"{kind}_ns{next(_ns)}_{uuid.uuid4().hex[:6]}"
        self.cow_ns = self.ns + "_cow"
        root, self.cfg = local_session(destination)
        self.root = root
        self.writer = OlakeWriter(writer_session(root, self.cfg), self.catalog, self.ns, remember=True)
        self.dest_path = write_destination(os.path.join(tmp_root, f"{self.ns}.json"), destination)
        self.tables = IcebergCatalog(writer_session(root, self.cfg), self.catalog)

    def run(self, *args: str, repair_ok: bool = False) -> int:
        mode = [] if "--source-mode" in args else ["--source-mode", self.mode]
        if self.fmt != "cow" and "--mirror-format" not in args:
            mode += ["--mirror-format", self.fmt]
        before = self.source_metadata() if self.mode == "readonly" else None
        code = self.run_raw(*mode, *args, repair_ok=repair_ok)
        if before is not None:
            assert self.source_metadata() == before, "a readonly run changed the source's metadata"
        return code

    def run_summary(self, *args: str, table: str = "t"):
        """(exit code, the summary entry of `table`) of a run with `args`."""
        path = f"{self.dest_path}.summary-{uuid.uuid4().hex[:8]}.json"
        code = self.run("--summary-out", path, *args, repair_ok=True)  # the caller reads `repaired`
        with open(path, encoding="utf-8") as f:
            self.last_summary = json.load(f)  # the whole run's, for what is not per table
        return code, next(t for t in self.last_summary["tables"] if t["table"] == table)

    def run_raw(self, *args: str, repair_ok: bool = False) -> int:
        """The job's command line exactly as given (no --source-mode added); this lake's config and
        namespace unless `args` name them (the job refuses an option given twice). Unless
        `repair_ok`, a run that rebuilt a mirror "of someone's change" fails the test: only a test
        that made such a change expects one, and says so (a run mistaking the job's own commits for
        another's rebuilds silently, and the mirror still matches)."""
        own = [] if "--destination-details" in args else ["--destination-details", self.dest_path]
        own += [] if "--source-namespace" in args else ["--source-namespace", self.ns]
        own += [] if "--engine" in args or not self.engine else ["--engine", self.engine]  # None: the default
        summary = args[args.index("--summary-out") + 1] if "--summary-out" in args else ""
        if not summary and not repair_ok:
            summary = f"{self.dest_path}.run-{uuid.uuid4().hex[:8]}.json"
            own += ["--summary-out", summary]
        code = job_main([*own, "--quiet", *args])
        if not repair_ok and os.path.exists(summary):
            with open(summary, encoding="utf-8") as f:
                repaired = [(t["table"], t.get("notes")) for t in json.load(f).get("tables") or [] if t.get("repaired")]
            assert not repaired, f"a run repaired a mirror nobody else changed (repair_ok not set): {repaired}"
        return code

    def source_metadata(self):
        """Every source table's metadata file: a commit of any kind writes a new one."""
        if not self.tables.namespace_exists(self.ns):
            return {}
        return {t: self.source(t).metadata_location for t in self.tables.list_tables(self.ns)}

    def mirror_q(self, table: str) -> str:
        return qualified(self.catalog, self.cow_ns, f"{table}_cow")

    def source(self, table: str):
        return fresh_state(self.tables, self.ns, table)

    def mirror(self, table: str):
        return fresh_state(self.tables, self.cow_ns, f"{table}_cow")

    def mirror_rows(self, table: str):
        return read_rows(self.writer.spark, self.mirror_q(table))

    def mirror_source_snapshot(self, table: str) -> int:
        """The source snapshot whose content the mirror holds (truncate mode: a boundary's parent)."""
        from olake_cow.core.checkpoint import find_checkpoint

        checkpoint = find_checkpoint(self.mirror(table))
        assert checkpoint is not None, "the mirror holds nothing"
        if checkpoint.sequence_number is not None:
            return checkpoint.snapshot_id
        return self.source(table).snapshot(checkpoint.snapshot_id).parent_id

    def assert_mirror_matches(self, table: str, mode: str = "keep", at: Optional[int] = None, engines=None) -> None:
        """Mirror == resolved source from the independent model (now, or right after source snapshot
        `at`), read by Spark, pyiceberg, DuckDB and iceberg-rust (`engines`: a subset of the last three)."""
        expected = self.writer.model(table).expected(mode) if at is None else self.writer.expected_at(table, at, mode)
        assert expected is not None, f"source snapshot {at} was not made by the writer"
        _, problems = mirror_problems(self.writer.spark, self.mirror_q(table), self.mirror(table), expected, self.fmt,
                                      engines=engines, io=self.io)
        assert not problems, "\n".join(problems)


def _lake(request, spark, destinations, tmp_root, kind="hadoop", mode="readonly", fmt="cow"):
    return Lake(spark, destinations[kind], tmp_root, kind, mode, fmt)


# The merge's variants: each source mode x each mirror format on the Spark engine, and what the
# python engine serves (readonly cow, on a catalog it opens) on it.
LAKE_VARIANTS = [(m, f, "spark") for m in MODES for f in FORMATS] + [("readonly", "cow", "python")]


def _variant_id(p):
    return f"{p[0]}-{p[1]}" + ("-python" if p[2] == "python" else "")


@pytest.fixture(params=LAKE_VARIANTS, ids=_variant_id)
def lake(request, spark, destinations, tmp_root):
    """Every source mode x every mirror format (Hadoop catalog), and the python engine's readonly cow
    (JDBC catalog): the merge's behaviour. A test about what only Spark does skips the python one
    (`spark_only`)."""
    return _variant(request, spark, destinations, tmp_root)


@pytest.fixture(params=[v for v in LAKE_VARIANTS if v[0] == "readonly"], ids=_variant_id)
def rlake_engines(request, spark, destinations, tmp_root):
    """The `lake` variants of readonly mode: each mirror format on Spark, and the python engine's."""
    return _variant(request, spark, destinations, tmp_root)


def _variant(request, spark, destinations, tmp_root):
    mode, fmt, engine = (*request.param, "spark")[:3]  # a test's own (mode, format) pairs are Spark's
    if engine == "python":
        marker = request.node.get_closest_marker("spark_only")
        if marker is not None:
            pytest.skip(f"the Spark engine's: {marker.args[0]}")
        python = Lake(spark, destinations["jdbc"], tmp_root, "jdbc", mode, fmt)
        python.engine = engine
        return python
    return _lake(request, spark, destinations, tmp_root, mode=mode, fmt=fmt)


@pytest.fixture(params=FORMATS)
def rlake(request, spark, destinations, tmp_root):
    """Readonly mode, each mirror format (readonly-only behaviour)."""
    return _lake(request, spark, destinations, tmp_root, mode="readonly", fmt=request.param)


@pytest.fixture(params=FORMATS)
def tlake(request, spark, destinations, tmp_root):
    """Truncate mode, each mirror format (truncate-only behaviour)."""
    return _lake(request, spark, destinations, tmp_root, mode="truncate", fmt=request.param)


@pytest.fixture(params=["hadoop", "jdbc"])
def catalog_lake(request, spark, destinations, tmp_root):
    """Each file-system and JDBC catalog, readonly cow (behaviour that depends on the catalog)."""
    return _lake(request, spark, destinations, tmp_root, kind=request.param)


@pytest.fixture
def jdbc_lake(spark, destinations, tmp_root):
    """The JDBC (PostgreSQL) catalog, readonly cow."""
    return Lake(spark, destinations["jdbc"], tmp_root, "jdbc", "readonly", "cow")


@pytest.fixture
def make_lake(spark, destinations, tmp_root):
    """Factory: a lake on a given destination dict (e.g. one with extra settings)."""
    return lambda destination, kind, mode="readonly", fmt="cow", io=None: Lake(spark, destination, tmp_root, kind,
                                                                              mode, fmt, io)



# --- servers several modules use (each module its own: module scope) --------------------------
@pytest.fixture(scope="module")
def moto_s3_glue_server(spark):
    """Glue and S3 on a moto server of this module's."""
    from testkit.catalogs import KEY, REGION
    from testkit.servers import MotoServer

    server = MotoServer("lake", KEY, REGION).start()
    # The Glue client takes its credentials from the default chain (Iceberg has no static-key
    # property for it): Java system properties, read when the catalog first builds its client.
    system = spark._jvm.java.lang.System
    for prop, value in (("aws.accessKeyId", KEY), ("aws.secretAccessKey", KEY), ("aws.region", REGION)):
        system.setProperty(prop, value)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def moto_s3_glue(moto_s3_glue_server):
    return moto_s3_glue_server.url


@pytest.fixture(scope="module")
def reference():
    """Iceberg's REST reference server, its files in S3 on a moto server, for this module."""
    from testkit.catalogs import KEY, REGION
    from testkit.servers import ReferenceServer, on_moto

    yield from on_moto(ReferenceServer, "s3://lake/rest-warehouse", KEY, REGION)
