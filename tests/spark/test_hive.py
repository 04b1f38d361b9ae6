"""A Hive metastore catalog: a real metastore (Thrift) started from the jars pyspark ships, on Derby;
the job's main scenarios run on it in both mirror formats."""
import pytest
from tests.spark.catalog_scenarios import build_update_delete_verify, recreated_source

from testkit import hive

pytestmark = [pytest.mark.spark]


@pytest.fixture(scope="module")
def metastore():
    why = hive.available()
    if why:
        pytest.skip(why)
    server = hive.HiveMetastore().start()
    yield server
    server.stop()


@pytest.fixture(params=["cow", "dv"])
def hive_lake(request, metastore, make_lake, tmp_root):
    import os

    destination = {"type": "ICEBERG", "writer": {
        "catalog_type": "hive", "catalog_name": "hivecat", "hive_uri": metastore.uri,
        "iceberg_s3_path": "file://" + os.path.join(tmp_root, "hive-warehouse")}}
    return make_lake(destination, "hive", "readonly", request.param)


def test_hive_first_build_incremental_updates_and_deletes_and_verify(hive_lake):
    build_update_delete_verify(hive_lake)


def test_hive_recreated_source_rebuilds_the_mirror(hive_lake):
    recreated_source(hive_lake)
