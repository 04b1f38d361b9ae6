"""One local Spark session per test run; lakes on a hadoop catalog and on a JDBC catalog backed
by a real PostgreSQL server (started here)."""
import itertools
import os
import uuid
from typing import Optional

import pytest
from testkit import pg
from testkit.local import fresh_state, local_session, mirror_problems, read_rows, write_destination, writer_session
from testkit.olake_writer import OlakeWriter

from olake_cow.cli import main as job_main
from olake_cow.core.identifiers import qualified
from olake_cow.spark.iceberg import IcebergTables
from olake_cow.spark.session import local_iceberg_jar

_ns = itertools.count(1)
HADOOP, JDBC = "hcat", "pgcat"


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


@pytest.fixture(scope="session")
def destinations(tmp_root, postgres):
    return {
        "hadoop": {"type": "ICEBERG", "writer": {"catalog_type": "hadoop", "catalog_name": HADOOP,
                                                 "iceberg_s3_path": os.path.join(tmp_root, "hwh")}},
        "jdbc": {"type": "ICEBERG", "writer": {
            "catalog_type": "jdbc", "catalog_name": JDBC, "jdbc_url": postgres.jdbc_url,
            "jdbc_username": "iceberg", "jdbc_password": "pg-Secret-123",
            "iceberg_s3_path": os.path.join(tmp_root, "jwh")}},
    }


@pytest.fixture(scope="session")
def spark(destinations):
    jars = ",".join([local_iceberg_jar(), pg.JDBC_JAR])
    root, _ = local_session(destinations["hadoop"], {"spark.jars": jars,
                                                     "spark.driver.extraClassPath": pg.JDBC_JAR})
    yield root
    root.stop()


class Lake:
    """A fresh namespace in one catalog, an OLake-like writer, and the job's command line in one
    source mode. In readonly mode every run also checks that it left the source untouched."""

    def __init__(self, spark, destination, tmp_root, kind, mode="readonly", fmt="cow"):
        self.kind, self.mode, self.fmt = kind, mode, fmt
        self.dest = destination
        self.catalog = destination["writer"]["catalog_name"]
        # Unique across module copies and processes: the JDBC catalog outlives one test.
        self.ns = f"{kind}_ns{next(_ns)}_{uuid.uuid4().hex[:6]}"
        self.cow_ns = self.ns + "_cow"
        root, self.cfg = local_session(destination)
        self.root = root
        self.writer = OlakeWriter(writer_session(root, self.cfg), self.catalog, self.ns, remember=True)
        self.dest_path = write_destination(os.path.join(tmp_root, f"{self.ns}.json"), destination)
        self.tables = IcebergTables(writer_session(root, self.cfg), self.catalog)

    def run(self, *args: str) -> int:
        mode = [] if "--source-mode" in args else ["--source-mode", self.mode]
        if self.fmt != "cow" and "--mirror-format" not in args:
            mode += ["--mirror-format", self.fmt]
        before = self.source_metadata() if self.mode == "readonly" else None
        code = self.run_raw(*mode, *args)
        if before is not None:
            assert self.source_metadata() == before, "a readonly run changed the source's metadata"
        return code

    def run_raw(self, *args: str) -> int:
        """The job's command line exactly as given (no --source-mode added)."""
        return job_main(["--destination-details", self.dest_path, "--source-namespace", self.ns,
                         "--quiet", *args])

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

    def assert_mirror_matches(self, table: str, mode: str = "keep", at: Optional[int] = None) -> None:
        """Mirror (read by Spark and by pyiceberg) == resolved source from the independent model
        (now, or right after source snapshot `at`)."""
        expected = self.writer.model(table).expected(mode) if at is None else self.writer.expected_at(table, at, mode)
        assert expected is not None, f"source snapshot {at} was not made by the writer"
        _, problems = mirror_problems(self.writer.spark, self.mirror_q(table), self.mirror(table), expected, self.fmt)
        assert not problems, "\n".join(problems)


MODES = ("readonly", "truncate")


@pytest.fixture(params=[(kind, mode) for kind in ("hadoop", "jdbc") for mode in MODES],
                ids=lambda p: f"{p[0]}-{p[1]}")
def lake(request, spark, destinations, tmp_root):
    """Every catalog in every source mode."""
    kind, mode = request.param
    return Lake(spark, destinations[kind], tmp_root, kind, mode)


@pytest.fixture(params=MODES)
def hlake(request, spark, destinations, tmp_root):
    """Hadoop-catalog lake in each source mode (tests that need just one catalog)."""
    return Lake(spark, destinations["hadoop"], tmp_root, "hadoop", request.param)


@pytest.fixture(params=["hadoop", "jdbc"])
def klake(request, spark, destinations, tmp_root):
    """Each catalog, readonly mode (behaviour that does not depend on the source mode)."""
    return Lake(spark, destinations[request.param], tmp_root, request.param, "readonly")


@pytest.fixture(params=["hadoop", "jdbc"])
def tlake(request, spark, destinations, tmp_root):
    """Each catalog, truncate mode (truncate-only behaviour)."""
    return Lake(spark, destinations[request.param], tmp_root, request.param, "truncate")


@pytest.fixture
def rlake(spark, destinations, tmp_root):
    """Hadoop-catalog lake in readonly mode (readonly-only behaviour)."""
    return Lake(spark, destinations["hadoop"], tmp_root, "hadoop", "readonly")


@pytest.fixture(params=MODES)
def dvlake(request, spark, destinations, tmp_root):
    """Hadoop-catalog lake with a dv mirror (format version 3, deletion vectors), each source mode."""
    return Lake(spark, destinations["hadoop"], tmp_root, "hadoop", request.param, "dv")


@pytest.fixture
def make_lake(spark, destinations, tmp_root):
    """Factory: a lake on a given destination dict (e.g. one with extra settings)."""
    return lambda destination, kind, mode="readonly", fmt="cow": Lake(spark, destination, tmp_root, kind, mode, fmt)
