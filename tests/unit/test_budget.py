"""The python engine's budget from metadata alone: a merge's bytes (change set and mirror files), a
first build's (every file of the source snapshot it reads), and the express lane, which builds no
mirror (its function's role creates no table)."""
import pytest

from olake_cow.core.budget import FIRST_BUILD_ON_EMR, Budget, estimate, over_budget
from olake_cow.core.snapshots import MISSING, Summary, state_from_metadata
from testkit.aws import fixture

pytestmark = pytest.mark.unit


def _states():
    source = state_from_metadata(fixture("ro_source_new_commit.metadata.json"))
    mirror = state_from_metadata(fixture("ro_mirror_after_job.metadata.json"))
    return source, mirror


def test_a_first_build_is_the_source_snapshots_files_and_the_lane_leaves_it_to_emr():
    source, _ = _states()
    whole = source.snapshot(source.current_id).summary_int(Summary.TOTAL_FILES_SIZE)
    assert whole > 0 and estimate(source, MISSING) == whole
    assert over_budget(source, MISSING, Budget(max_bytes=whole)) is None
    over = over_budget(source, MISSING, Budget(max_bytes=whole - 1))
    assert over is not None and "the first build may read" in over and "the source's files" in over
    assert over_budget(source, MISSING, Budget(first_builds=False)) == FIRST_BUILD_ON_EMR
    assert estimate(MISSING, MISSING) == 0  # a source with no snapshot yet: nothing to read


def test_a_merge_is_the_change_sets_files_and_the_mirrors_and_the_lane_takes_it():
    source, mirror = _states()
    work = estimate(source, mirror)
    held = mirror.snapshot(mirror.current_id).summary_int(Summary.TOTAL_FILES_SIZE)
    assert work is not None and work > held
    assert over_budget(source, mirror, Budget(max_bytes=work, first_builds=False)) is None
    over = over_budget(source, mirror, Budget(max_bytes=work - 1))
    assert over is not None and "the merge may read" in over and "change set and mirror files" in over


def test_a_rebuild_is_the_source_snapshots_files_and_the_lane_may_take_it():
    """A rebuild of a mirror that holds rows reads the whole source and only drops the mirror's
    files; it creates no table, so the express lane's budget may hold it."""
    source, mirror = _states()
    whole = source.snapshot(source.current_id).summary_int(Summary.TOTAL_FILES_SIZE)
    assert estimate(source, mirror, rebuild=True) == whole != estimate(source, mirror)
    assert over_budget(source, mirror, Budget(max_bytes=whole, first_builds=False), rebuild=True) is None
    over = over_budget(source, mirror, Budget(max_bytes=whole - 1), rebuild=True)
    assert over is not None and "the rebuild may read" in over and "the source's files" in over
