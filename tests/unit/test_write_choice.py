"""How a change set is written into the mirror (core/pruning.py choose_write), on literal inputs."""
import pytest

from olake_cow.core.formats import FORMATS
from olake_cow.core.modes import MirrorFormat
from olake_cow.core.pruning import (
    KEYS_LISTED,
    KEYS_PER_FILE_TO_COUNT,
    SMALL_MIRROR_BYTES,
    KeyMerge,
    MergeShape,
    Rebuild,
    WholeRewrite,
    choose_write,
)

pytestmark = pytest.mark.unit


def shape(files=4, touched=None, everything=True, size=SMALL_MIRROR_BYTES // 2, intervals=(("1", "9"),)):
    touched = touched if touched is not None else (files if everything else files - 1)
    return MergeShape(intervals=intervals, touched=touched, files=max(files, touched), bytes=size)


@pytest.mark.parametrize("args, choice", [
    # a rebuild whatever the shape
    ((shape(), True, False, 10, True), Rebuild()),
    # nothing known of the change: a MERGE, unlisted
    ((None, True, False, None), KeyMerge()),
    ((shape(), False, False, None), KeyMerge()),
    # cow, small unpartitioned mirror, every file may hold a key: one file rewritten whole
    ((shape(), True, False, 10), WholeRewrite()),
    ((shape(size=SMALL_MIRROR_BYTES * 2), True, False, 10), KeyMerge()),  # too big for one file
    ((shape(everything=False), True, False, 10), KeyMerge()),  # some file out of the keys' reach
    ((shape(), True, False, KEYS_LISTED + 1), KeyMerge()),  # too many keys to filter by
    # cow, partitioned: whole only once a count shows every file touched, with enough keys a file
    ((shape(files=4), True, True, 4 * KEYS_PER_FILE_TO_COUNT), WholeRewrite(if_every_file_touched=True)),
    ((shape(files=4), True, True, 4 * KEYS_PER_FILE_TO_COUNT - 1), KeyMerge()),
    # a mirror with no snapshot yet has nothing to rewrite
    ((shape(), True, False, 10, False, False), KeyMerge()),
    # dv: the keys listed before the join while keys x touched files stay small
    ((shape(files=8), False, False, 5_000), KeyMerge(listed=True)),
    ((shape(files=1_000), False, False, 5_000), KeyMerge(listed=False)),
    ((shape(intervals=()), False, False, 10), KeyMerge(listed=False)),
])
def test_each_change_set_gets_the_write_its_shape_calls_for(args, choice):
    """The second argument of each row: True a cow mirror's rules, False a dv mirror's."""
    rules = FORMATS[MirrorFormat.COW if args[1] else MirrorFormat.DV]
    assert choose_write(args[0], rules, *args[2:]) == choice
