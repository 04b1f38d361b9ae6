"""The python engine's file writes: what a merge keeps of the rows it rewrites, and the Parquet
setting it writes with unless the mirror sets its own (no JVM needed)."""
import pyarrow as pa
import pytest
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.types import LongType, NestedField, StringType

from olake_cow.python_engine.manifests import without_keys
from olake_cow.python_engine.merge import DICT_SIZE, DICT_SIZE_BYTES, _write_metadata


def _meta(**properties):
    schema = Schema(NestedField(1, "_olake_id", StringType(), required=False), NestedField(2, "v", LongType()))
    return new_table_metadata(schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "file:///w/t", properties)


def test_files_are_written_with_a_small_dictionary_unless_the_mirror_sets_one():
    meta = _meta(**{"write.target-file-size-bytes": "1000"})
    written = _write_metadata(meta)
    assert written.properties[DICT_SIZE] == str(DICT_SIZE_BYTES) == "262144"
    assert written.properties["write.target-file-size-bytes"] == "1000"
    assert DICT_SIZE not in meta.properties  # a copy: nothing of it reaches the mirror's properties
    own = _meta(**{DICT_SIZE: "4194304"})
    assert _write_metadata(own).properties[DICT_SIZE] == "4194304"


@pytest.mark.parametrize("dropped", [set(), {"k3"}, {"k0", "k4", "k5", "k9", "absent"}, {f"k{i}" for i in range(10)}])
def test_a_rewrite_keeps_every_other_row_in_its_order(dropped):
    keys = [f"k{i}" for i in (3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 0, 8, 7)]
    rows = pa.Table.from_batches([pa.record_batch([pa.array(keys[a:a + 4]), pa.array(range(a, min(a + 4, len(keys))))],
                                                  names=["_olake_id", "v"]) for a in range(0, len(keys), 4)])
    kept = without_keys(rows, sorted(dropped))
    expected = [(k, i) for i, k in enumerate(keys) if k not in dropped]
    assert list(zip(kept.column("_olake_id").to_pylist(), kept.column("v").to_pylist())) == expected
    assert kept.schema == rows.schema


def _in_a_new_process(code, **env):
    """The default pool is process-wide and chosen once: each case runs in a process of its own."""
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True,
                          check=True)
    return done.stdout.split()


POOLS = ("import pyarrow as pa; print(pa.default_memory_pool().backend_name); {call}; "
         "a = pa.array(range(100_000)); print(pa.default_memory_pool().backend_name, "
         "pa.system_memory_pool().bytes_allocated() >= a.nbytes)")


def test_a_python_engine_run_allocates_arrow_memory_from_the_c_library():
    call = ("from olake_cow.python_engine.table_run import run_python_tables; "
            "run_python_tables(None, type('Cfg', (), {'secret_values': lambda self: []})(), None, [], None)")
    before, after, from_system = _in_a_new_process(POOLS.format(call=call), ARROW_DEFAULT_MEMORY_POOL="")
    assert before != "system"  # pyarrow's own default: the run changed it
    assert (after, from_system) == ("system", "True")


def test_a_pool_the_user_chose_is_kept():
    from olake_cow.python_engine.allocator import POOL_ENV

    call = "from olake_cow.python_engine.allocator import use_system_allocator; print(use_system_allocator())"
    chose, returned, after, from_system = _in_a_new_process(POOLS.format(call=call), **{POOL_ENV: "mimalloc"})
    assert chose == returned == after == "mimalloc"
    assert from_system == "False"


def _entry(spec_id, region, name):
    from olake_cow.python_engine.manifests import Entry

    return Entry(live=name, data_file=None, spec_id=spec_id, partition=(region,))


def test_a_partitioned_rewrite_writes_each_partition_with_its_own_upserts():
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    from olake_cow.python_engine.merge import _by_partition

    schema = Schema(NestedField(1, "_olake_id", StringType(), required=False), NestedField(2, "region", StringType()))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"), spec_id=0)
    meta = new_table_metadata(schema, spec, UNSORTED_SORT_ORDER, "file:///w/t", {})
    current = meta.default_spec_id
    eu, us, old_eu = _entry(current, "eu", "eu.parquet"), _entry(current, "us", "us.parquet"), _entry(
        current + 7, "eu", "old.parquet")  # a file of another spec: its partition tuple may mean something else
    upserts = pa.table({"_olake_id": ["1", "2", "3", "4", "5"], "region": ["us", "eu", "ap", "eu", "ap"]})
    groups = [([e.live for e in entries], sorted(t.column("_olake_id").to_pylist()), t.schema == upserts.schema)
              for entries, t in _by_partition(meta, [eu, old_eu, us], upserts)]
    assert groups == [(["eu.parquet"], ["2", "4"], True), (["old.parquet"], [], True), (["us.parquet"], ["1"], True),
                      ([], ["3", "5"], True)]
    plain = new_table_metadata(schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "file:///w/t", {})
    assert [([e.live for e in entries], t.num_rows) for entries, t in _by_partition(plain, [eu, us], upserts)] == [
        (["eu.parquet", "us.parquet"], 5)]


def test_a_partitioned_build_is_split_a_partition_a_table_each_sorted_by_key():
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import BucketTransform, IdentityTransform

    from olake_cow.python_engine.merge import _per_partition

    schema = Schema(NestedField(1, "_olake_id", StringType(), required=False),
                    NestedField(2, "region", StringType(), required=False))
    spec = PartitionSpec(PartitionField(1, 1000, BucketTransform(4), "b"),
                         PartitionField(2, 1001, IdentityTransform(), "region"), spec_id=0)
    meta = new_table_metadata(schema, spec, UNSORTED_SORT_ORDER, "file:///w/t", {})
    keys = [str(k) for k in range(60, 0, -1)]  # not sorted: each part comes out sorted
    regions = [("eu", "us", None)[k % 3] for k in range(60)]
    rows = pa.table({"_olake_id": keys, "region": regions})
    # Each row's partition by the scalar transform (Python's murmur3), apart from the Arrow kernels
    bucket = BucketTransform(4).transform(StringType())
    expected = {}
    for key, region in zip(keys, regions):
        expected.setdefault((bucket(key), region), []).append(key)
    parts = _per_partition(meta, rows)
    assert sorted(p.column("_olake_id").to_pylist() for p in parts) == sorted(sorted(v) for v in expected.values())
    assert all(p.schema == rows.schema for p in parts)
    assert _per_partition(meta, rows.slice(0, 0)) == []


def test_a_partition_arrow_cannot_sort_leaves_the_split_to_pyiceberg():
    import uuid

    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import UUIDType

    from olake_cow.python_engine.merge import _per_partition

    schema = Schema(NestedField(1, "_olake_id", StringType(), required=False),
                    NestedField(2, "u", UUIDType(), required=False))
    meta = new_table_metadata(schema, PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "u"), spec_id=0),
                              UNSORTED_SORT_ORDER, "file:///w/t", {})
    rows = pa.table({"_olake_id": ["2", "1", "3"],
                     "u": pa.array([uuid.UUID(int=k % 2).bytes for k in range(3)], pa.uuid())})
    [whole] = _per_partition(meta, rows)
    assert whole.column("_olake_id").to_pylist() == ["1", "2", "3"]
