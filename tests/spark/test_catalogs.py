"""What depends on the catalog, on the Hadoop (file system) and JDBC (PostgreSQL) catalogs: listing and
creating namespaces, several tables in one run, names, a dropped and recreated source, commits, secrets.
Glue + S3 and a Hive metastore have their own modules (test_glue.py, test_hive.py)."""
import pytest
from tests.spark.catalog_scenarios import recreated_source

from olake_cow.spark.catalog import IcebergCatalog
from testkit.lakes import make

pytestmark = [pytest.mark.spark]


def test_several_tables_and_one_failure_does_not_stop_the_others(catalog_lake):
    make(catalog_lake, "a")
    make(catalog_lake, "b")
    # a table the job refuses (a bigint key): that table fails, the others are mirrored
    catalog_lake.writer.spark.sql(f"CREATE TABLE {catalog_lake.writer.q('bad_key')} (_olake_id bigint) USING iceberg")
    catalog_lake.writer.spark.sql(f"INSERT INTO {catalog_lake.writer.q('bad_key')} VALUES (1)")
    assert catalog_lake.run() == 1
    catalog_lake.assert_mirror_matches("a")
    catalog_lake.assert_mirror_matches("b")
    assert catalog_lake.run("--tables", "a,b") == 0


def test_missing_namespace_is_a_clear_error(catalog_lake, capsys):
    assert catalog_lake.run("--tables", "nope") == 2  # a missing table is bad input
    out = capsys.readouterr()
    assert "does not exist" in out.out + out.err
    assert catalog_lake.run() == 2
    assert "namespace" in capsys.readouterr().err


def test_iceberg_tables_reads_state_without_spark_jobs(catalog_lake):
    make(catalog_lake)
    state = IcebergCatalog(catalog_lake.writer.spark, catalog_lake.catalog).state(catalog_lake.ns, "t")
    assert state.exists and state.current_id and state.uuid


def test_no_secret_value_reaches_output_summary_or_launch_conf(spark, destinations, make_lake, tmp_root, capsys,
                                                                caplog):
    import copy
    import json
    import os

    dest = copy.deepcopy(destinations["jdbc"])
    secrets = {"jdbc_password": "pg-Secret-123", "aws_access_key": "AKIASECRETKEY0001",
               "aws_secret_key": "wJalrSecretValue/abc", "aws_session_token": "SessTokenValue42"}
    dest["writer"].update(secrets)
    lake = make_lake(dest, "jdbc")
    make(lake)
    summary_path = os.path.join(tmp_root, f"{lake.ns}-summary.json")
    assert lake.run("--summary-out", summary_path) == 0
    assert lake.run("--tables", "missing_table", "--summary-out", summary_path) == 2
    out = capsys.readouterr()
    with open(summary_path, encoding="utf-8") as f:
        summary = f.read()
    launch = json.dumps(dict(spark.sparkContext.getConf().getAll()))
    logs = "\n".join(r.getMessage() for r in caplog.records)
    for value in secrets.values():
        for where, text in (("stdout", out.out), ("stderr", out.err), ("summary", summary),
                            ("launch conf", launch), ("logs", logs)):
            assert value not in text, f"secret leaked into {where}"
    assert "AWS_SECRET_ACCESS_KEY" not in os.environ


def test_tables_of_one_run_create_the_mirror_namespace_at_once(catalog_lake):
    """Found by the soak: parallel tables racing to create the mirror namespace (JDBC catalog)."""
    from concurrent.futures import ThreadPoolExecutor

    from testkit.local import writer_session

    ns = catalog_lake.ns + "_race"

    def create(_):
        IcebergCatalog(writer_session(catalog_lake.root, catalog_lake.cfg), catalog_lake.catalog).create_namespace(ns)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(8)))
    assert catalog_lake.tables.namespace_exists(ns)


def test_a_recreated_source_rebuilds_the_mirror_on_jdbc(jdbc_lake):
    recreated_source(jdbc_lake)  # the Hadoop catalog's case is test_mirror's, in every mode and format


HOSTILE = ["we'ird", "back`tick", "dot.ted", "sp ace", "ünï-cödé", "x; DROP TABLE y"]


def test_hostile_table_names_work(catalog_lake):
    lake = catalog_lake
    for name in HOSTILE:
        make(lake, name)
        lake.writer.commit(name, [{"_olake_id": "1", "_op_type": "u", "v": 9}], pure_deletes=["2"])
    assert lake.run("--tables", ",".join(HOSTILE)) == 0
    for name in HOSTILE:
        lake.assert_mirror_matches(name, engines=("pyiceberg",))


@pytest.mark.parametrize("ns", ["we'ird ns", "back`tick", "dot.ted", "ünï-cödé", "x; DROP TABLE y"])
def test_hostile_namespace_names_work(catalog_lake, ns):
    lake = catalog_lake
    lake.ns, lake.cow_ns = f"{ns} {lake.ns}", f"{ns} {lake.ns}_cow"
    lake.writer.namespace = lake.ns
    make(lake)
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 10}], pure_deletes=["2"])
    assert lake.run() == 0
    lake.assert_mirror_matches("t", engines=("pyiceberg",))


def test_a_table_that_is_not_olake_is_skipped_with_a_note_and_left_alone(catalog_lake):
    lake = catalog_lake
    make(lake)
    lake.writer.spark.sql(f"CREATE TABLE {lake.writer.q('plain')} (id bigint) USING iceberg")
    lake.writer.spark.sql(f"INSERT INTO {lake.writer.q('plain')} VALUES (1)")
    before = lake.tables.state(lake.ns, "plain").metadata_location
    code, result = lake.run_summary("--tables", "plain", table="plain")
    assert code == 0 and result["status"] == "skipped" and "no _olake_id column" in result["notes"][0]
    assert lake.tables.state(lake.ns, "plain").metadata_location == before
    assert not lake.tables.state(lake.cow_ns, "plain_cow").exists
    code, result = lake.run_summary(table="t")  # a whole namespace: the OLake table is mirrored beside it
    assert code == 0 and result["status"] == "merged"


def test_a_non_string_or_null_key_is_refused_in_one_line(catalog_lake):
    lake = catalog_lake
    lake.tables.create_namespace(lake.ns)
    for name, key_type, key in (("bigkey", "bigint", "1"), ("nullkey", "string", "NULL")):
        lake.writer.spark.sql(f"CREATE TABLE {lake.writer.q(name)} (_olake_id {key_type}, _op_type string, "
                              "_olake_timestamp timestamp, _cdc_timestamp timestamp) USING iceberg")
        lake.writer.spark.sql(f"INSERT INTO {lake.writer.q(name)} VALUES ({key}, 'r', now(), now())")
        code, result = lake.run_summary("--tables", name, table=name)
        assert code == 1 and result["status"] == "failed" and "\n" not in result["error"], result
        assert ("of type long" if key_type == "bigint" else "_olake_id is NULL") in result["error"]
        assert not lake.tables.state(lake.cow_ns, f"{name}_cow").exists
