"""Destination-config rules shared by the job and the trigger."""
import json
import re

import pytest

from olake_cow.core.config import catalog_properties, jdbc_driver_jar, parse_destination, redact
from olake_cow.core.errors import ConfigError

pytestmark = pytest.mark.unit


def dest(**writer):
    return json.dumps({"type": "ICEBERG", "writer": writer})


@pytest.mark.parametrize("text, message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    (json.dumps({"type": "ICEBERG"}), "no 'writer' object"),
    (json.dumps({"type": "PARQUET", "writer": {}}), "type must be ICEBERG"),
    (json.dumps({"type": "ICEBERG", "writer": "x"}), "'writer' must be a JSON object"),
    (dest(catalog_type="oracle", iceberg_s3_path="s3://b"), "catalog_type 'oracle' is not supported"),
    (dest(catalog_type="jdbc", iceberg_s3_path="s3://b"), "writer.jdbc_url is required"),
    (dest(catalog_type="hive", iceberg_s3_path="s3://b"), "writer.hive_uri is required"),
    (dest(catalog_type="lakekeeper", iceberg_s3_path="wh"), "writer.rest_catalog_url is required"),
    (dest(catalog_type="glue"), "writer.iceberg_s3_path is required"),
    (dest(catalog_type="glue", iceberg_s3_path=7), "writer.iceberg_s3_path must be a string"),
    (dest(catalog_type="glue", iceberg_s3_path="s3://b", s3_use_ssl="maybe"), "s3_use_ssl must be true"),
    (dest(catalog_type="glue", iceberg_s3_path="s3://b", catalog_name="a.b"), "catalog_name"),
    (dest(catalog_type="jdbc", iceberg_s3_path="/w", jdbc_url="postgres://x"), "must start with 'jdbc:'"),
    (dest(catalog_type="hive", iceberg_s3_path="/w", hive_uri="thrift://h", hive_clients="x"),
     "hive_clients must be an integer"),
])
def test_invalid_configs_name_the_problem(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_destination(text)


def test_a_bare_writer_object_is_accepted():
    cfg = parse_destination({"catalog_type": "glue", "iceberg_s3_path": "bucket/wh/"})
    assert (cfg.catalog_type, cfg.catalog_name, cfg.warehouse) == ("glue", "olake_iceberg", "s3://bucket/wh")


@pytest.mark.parametrize("config, why", [
    ({"catalog_typ": "jdbc", "iceberg_s3_path": "/w"}, "unknown key writer.catalog_typ in the destination config; "
                                                       "did you mean writer.catalog_type?"),
    ({"catalog_type": "glue", "iceberg_s3_path": "s3://b", "glue_regoin": "eu-west-1"},
     "did you mean writer.glue_region?"),
    ({"catalog_type": "glue", "iceberg_s3_path": "s3://b", "x_new": 1}, "unknown key writer.x_new in the destination "
                                                                        "config; the keys are: arrow_writes,"),
])
def test_an_unknown_writer_key_is_an_error_that_names_the_nearest_key(config, why):
    with pytest.raises(ConfigError, match=re.escape(why)):
        parse_destination({"type": "ICEBERG", "writer": config})


def test_an_unknown_key_beside_the_writer_is_an_error():
    with pytest.raises(ConfigError, match=re.escape("unknown key tpye in the destination config; did you mean type?")):
        parse_destination({"tpye": "ICEBERG", "writer": {"catalog_type": "glue", "iceberg_s3_path": "s3://b"}})


GOOD = {"type": "ICEBERG", "writer": {"catalog_type": "hadoop", "iceberg_s3_path": "/w"}}


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32"])
def test_a_config_saved_with_a_byte_order_mark_is_read(encoding):
    assert parse_destination(json.dumps(GOOD).encode(encoding)).warehouse == "/w"


@pytest.mark.parametrize("raw, why", [
    (json.dumps(GOOD).encode("utf-16-le"), "looks like UTF-16 without a byte-order mark"),
    (b'{"type": "ICEBERG", "writer": {"catalog_type": "\xe9"}}', "is not UTF-8 text (invalid byte 0xe9 at offset 48)"),
])
def test_a_config_in_another_encoding_is_named(raw, why):
    with pytest.raises(ConfigError, match=re.escape(why)):
        parse_destination(raw)


@pytest.mark.parametrize("alias", ["rest", "lakekeeper", "s3tables", "unity", "polaris", "biglake"])
def test_rest_aliases_mean_rest(alias):
    cfg = parse_destination(dest(catalog_type=alias, rest_catalog_url="http://h:8181", iceberg_s3_path="wh"))
    assert cfg.catalog_type == "rest" and cfg.warehouse == "wh"


def test_nessie_is_refused_before_spark_starts():
    """Its server serves each table with its current snapshot only (tests/spark/test_rest.py shows it)."""
    with pytest.raises(ConfigError, match=r"catalog lake is Nessie \(writer.catalog_type\).*nothing was written"):
        parse_destination(dest(catalog_type="Nessie", catalog_name="lake", rest_catalog_url="http://h:19120/iceberg/main",
                               iceberg_s3_path="wh"))


def test_s3a_warehouse_becomes_s3():
    cfg = parse_destination(dest(catalog_type="glue", iceberg_s3_path="s3a://b/p"))
    assert cfg.warehouse == "s3://b/p"


def test_secrets_go_to_the_secret_properties_only():
    cfg = parse_destination(dest(catalog_type="jdbc", jdbc_url="jdbc:postgresql://h/db",
                                 jdbc_username="u", jdbc_password="pw-123", iceberg_s3_path="s3://b",
                                 aws_access_key="AKIAXXX", aws_secret_key="sk-456",
                                 aws_session_token="tok-789"))
    public, secret = catalog_properties(cfg)
    joined = json.dumps(public)
    for value in ("pw-123", "AKIAXXX", "sk-456", "tok-789"):
        assert value not in joined
        assert value in secret.values()
    assert public["io-impl"].endswith("S3FileIO")


def test_rest_token_and_credential_are_secret():
    cfg = parse_destination(dest(catalog_type="rest", rest_catalog_url="http://h", iceberg_s3_path="wh",
                                 token="t0ken", credential="id:s3cret"))
    public, secret = catalog_properties(cfg)
    assert secret == {"token": "t0ken", "credential": "id:s3cret"}
    assert "t0ken" not in json.dumps(public)


def test_sigv4_signs_with_the_destinations_static_keys_when_it_has_them():
    base = dict(catalog_type="rest", rest_catalog_url="http://h", iceberg_s3_path="wh", rest_signing_v_4=True,
                rest_signing_name="s3tables", aws_region="eu-west-1")
    public, secret = catalog_properties(parse_destination(dest(**base, aws_access_key="AKIAX", aws_secret_key="sk-1",
                                                               aws_session_token="tok-2")))
    assert (public["rest.sigv4-enabled"], public["rest.signing-name"], public["rest.signing-region"]) == \
        ("true", "s3tables", "eu-west-1")
    assert {k: v for k, v in secret.items() if k.startswith("rest.")} == {
        "rest.access-key-id": "AKIAX", "rest.secret-access-key": "sk-1", "rest.session-token": "tok-2"}
    assert "sk-1" not in json.dumps(public)
    # without static keys the signer takes the job role or the AWS profile
    public, secret = catalog_properties(parse_destination(dest(**base)))
    assert public["rest.sigv4-enabled"] == "true" and not any(k.startswith("rest.") for k in secret)


@pytest.mark.parametrize("value, asked", [(True, True), ("true", True), (False, False), (None, False)])
def test_vended_credentials_are_asked_for_only_when_the_destination_says_so(value, asked):
    writer = dict(catalog_type="polaris", rest_catalog_url="http://h", iceberg_s3_path="wh")
    if value is not None:
        writer["rest_vended_credentials"] = value
    public, _ = catalog_properties(parse_destination(dest(**writer)))
    assert (public.get("header.X-Iceberg-Access-Delegation") == "vended-credentials") is asked


def test_secret_values_include_password_in_jdbc_url():
    cfg = parse_destination(dest(catalog_type="jdbc", iceberg_s3_path="/w",
                                 jdbc_url="jdbc:postgresql://h/db?user=a&password=urlpass"))
    assert "urlpass" in cfg.secret_values()
    assert "urlpass" not in redact("connect jdbc:postgresql://h/db?password=urlpass", cfg.secret_values())


def test_repr_of_config_hides_the_writer():
    cfg = parse_destination(dest(catalog_type="glue", iceberg_s3_path="s3://b", aws_access_key="AKIAX",
                                 aws_secret_key="zzz-secret"))
    assert "zzz-secret" not in repr(cfg)


def test_jdbc_driver_comes_from_the_os_java_folder_or_the_config():
    pg = parse_destination(dest(catalog_type="jdbc", jdbc_url="jdbc:postgresql://h/d", iceberg_s3_path="/w"))
    lite = parse_destination(dest(catalog_type="jdbc", jdbc_url="jdbc:sqlite:/tmp/x.db", iceberg_s3_path="/w"))
    own = parse_destination(dest(catalog_type="jdbc", jdbc_url="jdbc:mysql://h/d", iceberg_s3_path="/w",
                                 jdbc_driver_jar="s3://b/mysql.jar"))
    assert jdbc_driver_jar(pg) == "/usr/share/java/postgresql.jar"
    assert jdbc_driver_jar(lite) == "/usr/share/java/sqlite-jdbc.jar"
    assert jdbc_driver_jar(own) == "s3://b/mysql.jar"
    with pytest.raises(ConfigError, match="mysql"):
        jdbc_driver_jar(parse_destination(dest(catalog_type="jdbc", jdbc_url="jdbc:mysql://h/d",
                                               iceberg_s3_path="/w")))


def test_relative_hadoop_warehouse_is_a_local_path():
    import os

    cfg = parse_destination({"catalog_type": "hadoop", "iceberg_s3_path": "wh/x"})
    assert cfg.warehouse == os.path.abspath("wh/x")
