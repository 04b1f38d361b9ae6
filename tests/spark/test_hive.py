"""A Hive metastore catalog: a real metastore (Thrift) started from the jars pyspark ships, on Derby;
the job's main scenarios run on it in both mirror formats."""
import pytest
from tests.spark.catalog_scenarios import (
    build_update_delete_verify,
    made_by_marker_alone,
    mirror_column_dropped,
    recreated_source,
    unusable_mirror_properties,
)

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


def _hive_lake(metastore, make_lake, tmp_root, fmt):
    import os

    destination = {"type": "ICEBERG", "writer": {
        "catalog_type": "hive", "catalog_name": "hivecat", "hive_uri": metastore.uri,
        "iceberg_s3_path": "file://" + os.path.join(tmp_root, "hive-warehouse")}}
    return make_lake(destination, "hive", "readonly", fmt)


@pytest.fixture(params=["cow", "dv"])
def hive_lake(request, metastore, make_lake, tmp_root):
    return _hive_lake(metastore, make_lake, tmp_root, request.param)


@pytest.fixture
def hive_cow_lake(metastore, make_lake, tmp_root):
    return _hive_lake(metastore, make_lake, tmp_root, "cow")


def test_hive_first_build_incremental_updates_and_deletes_and_verify(hive_lake):
    build_update_delete_verify(hive_lake)


def test_hive_recreated_source_rebuilds_the_mirror(hive_lake):
    recreated_source(hive_lake)


# A user's edits of the mirror, through the metastore (test_own.py runs them on the other catalogs)
def test_hive_a_table_carrying_only_the_made_by_marker_is_refused_and_kept(hive_cow_lake):
    made_by_marker_alone(hive_cow_lake)


def test_hive_a_column_dropped_from_a_readonly_mirror_is_repaired(hive_cow_lake):
    mirror_column_dropped(hive_cow_lake)


def test_hive_properties_a_user_set_to_what_the_job_cannot_use_are_reset(hive_cow_lake):
    unusable_mirror_properties(hive_cow_lake)
