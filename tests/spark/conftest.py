"""One local Spark session per test run; lakes on a hadoop catalog and on a JDBC catalog backed
by a real PostgreSQL server (started here)."""
import itertools
import os
import uuid

import pytest
from testkit import pg
from testkit.local import fresh_state, local_session, mirror_problems, read_rows, write_destination, writer_session
from testkit.olake_writer import OlakeWriter

from olake_cow.cli import main as job_main
from olake_cow.iceberg import IcebergTables
from olake_cow.identifiers import qualified
from olake_cow.spark_session import local_iceberg_jar

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
    """A fresh namespace in one catalog, an OLake-like writer, and the job's command line."""

    def __init__(self, spark, destination, tmp_root, kind):
        self.kind = kind
        self.dest = destination
        self.catalog = destination["writer"]["catalog_name"]
        # Unique across module copies and processes: the JDBC catalog outlives one test.
        self.ns = f"{kind}_ns{next(_ns)}_{uuid.uuid4().hex[:6]}"
        self.cow_ns = self.ns + "_cow"
        root, self.cfg = local_session(destination)
        self.root = root
        self.writer = OlakeWriter(writer_session(root, self.cfg), self.catalog, self.ns)
        self.dest_path = write_destination(os.path.join(tmp_root, f"{self.ns}.json"), destination)
        self.tables = IcebergTables(writer_session(root, self.cfg), self.catalog)

    def run(self, *args: str) -> int:
        return job_main(["--destination-details", self.dest_path, "--source-namespace", self.ns,
                         "--quiet", *args])

    def mirror_q(self, table: str) -> str:
        return qualified(self.catalog, self.cow_ns, f"{table}_cow")

    def source(self, table: str):
        return fresh_state(self.tables, self.ns, table)

    def mirror(self, table: str):
        return fresh_state(self.tables, self.cow_ns, f"{table}_cow")

    def mirror_rows(self, table: str):
        return read_rows(self.writer.spark, self.mirror_q(table))

    def assert_mirror_matches(self, table: str, mode: str = "keep") -> None:
        """Mirror (read by Spark and by pyiceberg) == resolved source from the independent model."""
        _, problems = mirror_problems(self.writer.spark, self.mirror_q(table), self.mirror(table),
                                      self.writer.model(table).expected(mode))
        assert not problems, "\n".join(problems)


@pytest.fixture(params=["hadoop", "jdbc"])
def lake(request, spark, destinations, tmp_root):
    return Lake(spark, destinations[request.param], tmp_root, request.param)


@pytest.fixture
def hlake(spark, destinations, tmp_root):
    """Hadoop-catalog lake only (for tests that need just one catalog)."""
    return Lake(spark, destinations["hadoop"], tmp_root, "hadoop")


@pytest.fixture
def make_lake(spark, destinations, tmp_root):
    """Factory: a lake on a given destination dict (e.g. one with extra settings)."""
    return lambda destination, kind: Lake(spark, destination, tmp_root, kind)
