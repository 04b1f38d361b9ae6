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
