"""AWS Glue + S3, the catalog most OLake users deploy, on a moto server: Iceberg's own GlueCatalog and
S3FileIO (the AWS SDK v2 of iceberg-aws-bundle, tools/jars.py), no Hadoop S3 file system at all, so any
read that bypassed Iceberg's FileIO would fail here ("No FileSystem for scheme s3"). The mirrors are
read back from S3 by Spark, pyiceberg, DuckDB (httpfs) and iceberg-rust."""
import pytest
from tests.spark.catalog_scenarios import build_update_delete_verify, recreated_source

from olake_cow.spark.session import local_aws_jars
from testkit.servers import MotoServer

pytestmark = [pytest.mark.spark, pytest.mark.skipif(not local_aws_jars(), reason="AWS SDK jars not installed "
                                                    "(make setup)")]
REGION, KEY = "us-east-1", "testing"


@pytest.fixture(scope="module")
def moto_s3_glue(spark):
    server = MotoServer("lake", KEY, REGION).start()
    # The Glue client takes its credentials from the default chain (Iceberg has no static-key
    # property for it): Java system properties, read when the catalog first builds its client.
    system = spark._jvm.java.lang.System
    for prop, value in (("aws.accessKeyId", KEY), ("aws.secretAccessKey", KEY), ("aws.region", REGION)):
        system.setProperty(prop, value)
    yield server.url
    server.stop()


@pytest.fixture(params=["cow", "dv"])
def glue_lake(request, moto_s3_glue, make_lake):
    url = moto_s3_glue
    destination = {"type": "ICEBERG", "writer": {
        "catalog_type": "glue", "catalog_name": "gluecat", "iceberg_s3_path": "s3://lake/warehouse",
        "aws_region": REGION, "glue_endpoint": url, "s3_endpoint": url,
        "aws_access_key": KEY, "aws_secret_key": KEY}}
    io = {"s3.endpoint": url, "s3.access-key-id": KEY, "s3.secret-access-key": KEY, "s3.region": REGION,
          "s3.path-style-access": "true"}
    return make_lake(destination, "glue", "readonly", request.param, io)


def test_glue_and_s3_first_build_incremental_updates_and_deletes_and_verify(glue_lake):
    build_update_delete_verify(glue_lake)
    location = glue_lake.mirror("t").metadata_location
    assert location.startswith("s3://lake/warehouse/"), location


def test_glue_and_s3_recreated_source_rebuilds_the_mirror(glue_lake):
    recreated_source(glue_lake)
