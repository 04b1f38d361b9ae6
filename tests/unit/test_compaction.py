"""What compaction asks Iceberg for: files of the mirror's key ranges (core/maintenance.py
compaction_file_bytes), through the rewrite_data_files procedure call the job makes."""
import re

import pytest

from olake_cow.core.maintenance import COMPACTED_PROPERTY, FOLDED_PROPERTY, MaintenanceOptions, MaintenanceResult
from olake_cow.core.modes import MirrorFormat
from olake_cow.core.snapshots import Snapshot, TableState
from olake_cow.spark.maintenance import Maintainer, TablePair, _maintain_mirror

pytestmark = pytest.mark.unit
MB = 1024 * 1024


class _Rows:
    def collect(self):
        return []


class _Session:
    def __init__(self):
        self.sql_seen = []

    def sql(self, text):
        self.sql_seen.append(text)
        return _Rows()


class _Catalog:
    catalog_name = "lake"

    def __init__(self, state):
        self._state = state
        self.properties_set = {}

    def state(self, ns, name):
        return self._state

    def set_properties(self, ns, name, values):
        self.properties_set.update(values)


def _mirror(files, size, props=None):
    summary = {"total-data-files": str(files), "total-files-size": str(size), "total-records": "1000000"}
    return TableState(True, "u", 7, (Snapshot(7, None, 0, "overwrite", summary, 7),), props or {})


def _compaction_target(state):
    session, catalog = _Session(), _Catalog(state)
    _maintain_mirror(Maintainer(session, "lake", catalog), catalog, TablePair("s", "t", "s_cow", "t"),
                     MaintenanceOptions(compact_files=True), MirrorFormat.COW, MaintenanceResult(), ("s", "t"))
    # The files it left are recorded, so that the due rule waits for more (the fake rewrites nothing).
    assert catalog.properties_set == {COMPACTED_PROPERTY: state.snapshot(7).summary["total-data-files"],
                                      FOLDED_PROPERTY: "0"}
    calls = [q for q in session.sql_seen if "rewrite_data_files" in q]
    assert len(calls) == 1 and "'sort'" in calls[0]
    return int(re.search(r"'target-file-size-bytes', '(\d+)'", calls[0]).group(1))


def test_compaction_writes_files_of_the_mirrors_key_ranges_not_of_the_target_size():
    assert _compaction_target(_mirror(40, 55 * MB)) == 55 * MB // 9  # 9 ranges of 6 MB, not one 55 MB file
    assert _compaction_target(_mirror(200, 880 * MB)) == 880 * MB // 32
    big = _mirror(200, 10_000 * MB, {"write.target-file-size-bytes": str(64 * MB)})
    assert _compaction_target(big) == 10_000 * MB // 157  # by the mirror's own target size
