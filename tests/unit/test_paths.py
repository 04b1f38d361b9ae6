"""The table of (source mode, mirror format) -> change source, reader and format (spark/paths.py):
every pair has a row whose reader reads its mode, and mypy refuses a row with another mode's reader."""
import os

import pytest

from olake_cow.core.changesource import ReadonlySource, TruncateSource
from olake_cow.core.modes import MirrorFormat, SourceMode
from olake_cow.spark.boundary_reader import BoundaryReader
from olake_cow.spark.history_reader import HistoryReader
from olake_cow.spark.paths import PATHS, path_for

pytestmark = pytest.mark.unit
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROW = """from olake_cow.core.changesource import {source}
from olake_cow.core.modes import MirrorFormat
from olake_cow.spark.{module} import {reader}
from olake_cow.spark.paths import TablePath

TablePath({source}(), {reader}, MirrorFormat.DV)
"""


@pytest.mark.parametrize("mode", list(SourceMode))
@pytest.mark.parametrize("fmt", list(MirrorFormat))
def test_every_pair_has_one_path_with_its_modes_change_source_and_reader(mode, fmt):
    path = path_for(mode, fmt)
    assert (path.mode, path.fmt) == (mode, fmt)
    expected = {SourceMode.READONLY: (ReadonlySource, HistoryReader),
                SourceMode.TRUNCATE: (TruncateSource, BoundaryReader)}[mode]
    assert (type(path.changes), path.reader) == expected
    assert path.cow == (fmt == MirrorFormat.COW)
    assert len(PATHS) == len(SourceMode) * len(MirrorFormat)


def test_a_row_with_another_modes_reader_is_a_type_error(tmp_path):
    mypy = pytest.importorskip("mypy.api")
    right = tmp_path / "right.py"
    right.write_text(ROW.format(source="ReadonlySource", module="history_reader", reader="HistoryReader"))
    swapped = tmp_path / "swapped.py"
    swapped.write_text(ROW.format(source="ReadonlySource", module="boundary_reader", reader="BoundaryReader"))
    out, err, _ = mypy.run(["--config-file", os.path.join(ROOT, "pyproject.toml"), "--no-error-summary",
                            "--cache-dir", str(tmp_path / "cache"), str(right), str(swapped)])
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert [e.split(":")[0] for e in errors] == [str(swapped)], out + err
    assert 'type parameter "T" of "TablePath"' in errors[0], errors
