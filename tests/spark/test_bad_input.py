"""Bad input through the real command line: each gets a clear error naming the problem, and
nothing is committed (the source's metadata and the mirror namespace are untouched)."""
import json
import os

import pytest

pytestmark = [pytest.mark.spark]


def seeded(lake):
    lake.writer.create_table("t", [("v", "int")])
    lake.writer.backfill("t", [{"_olake_id": str(i), "v": i} for i in range(5)])
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 10}], pure_deletes=["2"])
    return lake.source("t").metadata_location


def assert_nothing_committed(lake, before):
    assert lake.source("t").metadata_location == before
    assert not lake.tables.namespace_exists(lake.cow_ns)


@pytest.mark.parametrize("content, why", [
    ("{not json", "not valid JSON"),
    (json.dumps({"type": "ICEBERG"}), "no 'writer' object"),
    (json.dumps({"type": "ICEBERG", "writer": {"catalog_type": "oracle", "iceberg_s3_path": "/w"}}),
     "catalog_type 'oracle' is not supported"),
    (json.dumps({"type": "ICEBERG", "writer": {"catalog_type": "jdbc", "iceberg_s3_path": "/w"}}),
     "writer.jdbc_url is required"),
    (json.dumps({"type": "ICEBERG", "writer": {"catalog_type": "glue", "iceberg_s3_path": ["s3://b"]}}),
     "writer.iceberg_s3_path must be a string"),
    (json.dumps({"type": "ICEBERG", "writer": {"catalog_type": "rest", "rest_catalog_url": "http://x",
                                               "iceberg_s3_path": "wh", "token": 5}}), "writer.token must be"),
])
def test_malformed_destination_configs(rlake, tmp_path, capsys, content, why):
    before = seeded(rlake)
    path = tmp_path / "dest.json"
    path.write_text(content)
    from olake_cow.cli import main

    assert main(["--destination-details", str(path), "--source-namespace", rlake.ns, "--quiet"]) == 2
    assert why in capsys.readouterr().err
    assert_nothing_committed(rlake, before)


def test_unreadable_config_file_is_named(rlake, tmp_path, capsys):
    from olake_cow.cli import main

    missing = os.path.join(str(tmp_path), "nope.json")
    assert main(["--destination-details", missing, "--source-namespace", "x"]) == 2
    assert f"cannot read --destination-details {missing}" in capsys.readouterr().err


@pytest.mark.parametrize("args, why", [
    (["--tables", "a\x00b"], "table name 'a\\x00b' contains '\\x00'"),
    (["--tables", "a/b"], "contains '/'"),
    (["--tables", " , "], "--tables is empty"),
    (["--tables", "t\u200b"], "contains '\\u200b'"),
    (["--cow-namespace", "x" * 300], "longer than 255"),
    (["--parallelism", "0"], "--parallelism must be at least 1"),
    (["--target-file-size-mb", "0"], "--target-file-size-mb must be at least 1"),
    (["--spark-conf", "novalue"], "is not KEY=VALUE"),
])
def test_bad_names_and_options(rlake, capsys, args, why):
    before = seeded(rlake)
    assert rlake.run(*args) == 2
    assert why in capsys.readouterr().err
    assert_nothing_committed(rlake, before)


def test_cow_namespace_equal_to_source_is_refused(rlake, capsys):
    before = seeded(rlake)
    assert rlake.run("--cow-namespace", rlake.ns) == 2
    assert "--cow-namespace must differ" in capsys.readouterr().err
    assert rlake.source("t").metadata_location == before


def test_a_table_that_is_not_olake_is_refused_and_left_alone(rlake, capsys):
    seeded(rlake)
    rlake.writer.spark.sql(f"CREATE TABLE {rlake.catalog}.`{rlake.ns}`.plain (id bigint) USING iceberg")
    rlake.writer.spark.sql(f"INSERT INTO {rlake.catalog}.`{rlake.ns}`.plain VALUES (1)")
    before = rlake.tables.state(rlake.ns, "plain").metadata_location
    assert rlake.run("--tables", "plain") == 1
    assert "no _olake_id column" in capsys.readouterr().out
    assert rlake.tables.state(rlake.ns, "plain").metadata_location == before


@pytest.mark.parametrize("ns", ["we'ird ns", "back`tick", "dot.ted", "ünï-cödé", "x; DROP TABLE y"])
def test_hostile_namespace_names_work(spark, destinations, make_lake, ns):
    lake = make_lake(destinations["hadoop"], "hadoop")
    lake.ns, lake.cow_ns = f"{ns} {lake.ns}", f"{ns} {lake.ns}_cow"
    lake.writer.namespace = lake.ns
    seeded(lake)
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
