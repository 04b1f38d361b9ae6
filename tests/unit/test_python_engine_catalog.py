"""Which destinations the python engine serves, and the database URL it opens (no server needed)."""
import pytest

from olake_cow.core.config import parse_destination
from olake_cow.core.errors import ConfigError
from olake_cow.python_engine.catalog import engine_refusal, open_catalog, sqlalchemy_url


def _jdbc(url, **extra):
    return parse_destination({"type": "ICEBERG", "writer": {
        "catalog_type": "jdbc", "catalog_name": "c", "jdbc_url": url, "iceberg_s3_path": "s3://b/w", **extra}})


def test_a_postgresql_url_becomes_libpq_settings_with_the_configs_credentials():
    url = sqlalchemy_url(_jdbc("jdbc:postgresql://db.example:6432/lake?ssl=true&ApplicationName=olake",
                               jdbc_username="u", jdbc_password="p@ss/word"))
    assert url.startswith("postgresql+psycopg2://u:p%40ss%2Fword@db.example:6432/lake?")
    assert "sslmode=require" in url and "application_name=olake" in url and "ssl=" not in url


@pytest.mark.parametrize("url, said", [
    ("jdbc:mysql://h/db", "on mysql"),
    ("jdbc:sqlite:/tmp/c.db", "on sqlite"),
    ("jdbc:postgresql://h/db?currentSchema=other", "'currentSchema'"),
])
def test_what_it_cannot_open_is_refused_by_name(url, said):
    why = engine_refusal(_jdbc(url))
    assert why is not None and said in why
    with pytest.raises(ConfigError, match="run it with --engine spark"):
        open_catalog(_jdbc(url))


def test_hadoop_and_hive_stay_on_spark():
    for writer in ({"catalog_type": "hadoop", "iceberg_s3_path": "file:///w"},
                   {"catalog_type": "hive", "hive_uri": "thrift://h:9083", "iceberg_s3_path": "s3://b/w"}):
        assert "serves glue, jdbc and rest" in engine_refusal(parse_destination({"type": "ICEBERG", "writer": writer}))
    assert engine_refusal(_jdbc("jdbc:postgresql://h:5432/db?sslmode=verify-full")) is None
