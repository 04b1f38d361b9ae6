"""OLake's three delete modes and its migrator (testkit/olake_writer.py): a source written with
equality deletes (up to v0.9), position deletes (v0.10, format 2) or deletion vectors (v0.11,
format 3), or switched from equality deletes to position deletes or vectors by one commit in the
middle of its life (as a `replace` rewrite, the migrator's shape, or a row delta), is mirrored
exactly, in every source mode and mirror format. The expected rows come from the writer's own model,
not from the job."""
import pytest

from testkit.lakes import rows

pytestmark = [pytest.mark.spark]


def cdc(lake, table, offset):
    """One sync's worth of OLake commits: updates, tombstones, inserts, a key written twice in one
    commit (older copy deleted by position), and a key updated in two commits; in equality mode also
    a pure delete (a Flink-style writer's; OLake's position modes write tombstones)."""
    w = lake.writer
    third = str(offset + 3)
    equality = w.delete_modes[table] == "equality"
    w.commit(table, [{"_olake_id": str(offset + 1), "_op_type": "u", "v": 1000 + offset, "s": "u"},
                     {"_olake_id": str(offset + 2), "_op_type": "d"},
                     {"_olake_id": str(500 + offset), "_op_type": "c", "v": 500, "s": "new"}]
             + ([] if equality else [{"_olake_id": third, "_op_type": "d"}]),
             pure_deletes=[third] if equality else [])
    w.commit(table, [{"_olake_id": str(offset + 4), "_op_type": "u", "v": 1, "s": "first"},
                     {"_olake_id": str(offset + 4), "_op_type": "u", "v": 2, "s": "second"},
                     {"_olake_id": str(offset + 1), "_op_type": "u", "v": 3000 + offset, "s": "again"}])


def delete_files(lake, table):
    """The content kinds and formats of the source's live delete files."""
    meta = lake.writer.spark.sql(f"SELECT content, file_format FROM {lake.writer.q(table)}.delete_files").collect()
    return sorted({(r["content"], r["file_format"]) for r in meta})


# Each delete mode in both source modes (the source's reader is per mode), and with both mirror
# formats (the writer is per format): six of the twelve combinations. The REST reference server runs
# all three delete modes again (tests/spark/test_rest.py).
DELETE_MODE_CASES = [(("readonly", "cow"), "dv"), (("truncate", "dv"), "dv"),
                     (("readonly", "dv"), "equality"), (("truncate", "cow"), "equality"),
                     (("readonly", "cow"), "position"), (("truncate", "dv"), "position")]


@pytest.mark.parametrize("lake, delete_mode", DELETE_MODE_CASES, indirect=["lake"],
                         ids=[f"{m}-{f}-{d}" for (m, f), d in DELETE_MODE_CASES])
def test_a_source_written_in_each_of_olakes_delete_modes_is_mirrored_exactly(lake, delete_mode):
    w = lake.writer
    w.create_table("t", [("v", "int"), ("s", "string")], delete_mode=delete_mode)
    w.backfill("t", rows(0, 40), chunk=20)
    assert lake.run() == 0
    cdc(lake, "t", 0)
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    cdc(lake, "t", 10)
    w.commit("t", [{"_olake_id": "20", "_op_type": "d"}])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    if lake.mode == "readonly":  # truncate mode empties the source each run
        kinds = {c for c, _ in delete_files(lake, "t")}
        assert kinds == ({2, 1} if delete_mode == "equality" else {1})  # 2: equality, 1: position
        assert {f for _, f in delete_files(lake, "t")} == ({"PUFFIN"} if delete_mode == "dv" else {"PARQUET"}) | (
            {"PARQUET"} if delete_mode == "equality" else set())


# Each target mode and each commit shape once in every (source mode, mirror format) pair: four of
# the eight combinations (all eight were seen to pass at 63e2c9a).
SWITCH_CASES = [(("readonly", "cow"), "position", "rewrite"), (("readonly", "dv"), "dv", "row_delta"),
                (("truncate", "cow"), "dv", "row_delta"), (("truncate", "dv"), "position", "rewrite")]


@pytest.mark.parametrize("lake, to, commit", SWITCH_CASES, indirect=["lake"],
                         ids=[f"{m}-{f}-{to}-{c}" for (m, f), to, c in SWITCH_CASES])
def test_a_switch_from_equality_deletes_in_the_middle_of_a_tables_life_is_mirrored_exactly(lake, to, commit):
    w = lake.writer
    w.create_table("t", [("v", "int"), ("s", "string")], format_version=3 if to == "dv" else 2)
    w.backfill("t", rows(0, 40), chunk=20)
    assert lake.run() == 0
    cdc(lake, "t", 0)
    assert lake.run() == 0
    cdc(lake, "t", 10)  # equality deletes the mirror has not merged yet
    switched = w.switch_delete_mode("t", to, commit)
    assert 2 not in {c for c, _ in delete_files(lake, "t")}  # no equality delete is left
    cdc(lake, "t", 20)  # commits in the new mode, in the same change set as the switch
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    if lake.mode == "readonly":
        operation = lake.source("t").snapshot(switched).operation
        assert operation == "replace" if commit == "rewrite" else operation in ("delete", "overwrite"), operation
    cdc(lake, "t", 25)
    assert lake.run() == 0
    lake.assert_mirror_matches("t")


def test_a_partitioned_source_in_dv_mode_with_a_switch_is_mirrored_exactly(rlake):
    lake = rlake
    w = lake.writer
    w.create_table("t", [("v", "int"), ("s", "string")], partition_by=["bucket(4, _olake_id)"], format_version=3)
    w.backfill("t", rows(0, 60), chunk=30)
    cdc(lake, "t", 0)
    assert lake.run() == 0
    w.switch_delete_mode("t", "dv")
    cdc(lake, "t", 30)
    assert lake.run() == 0
    lake.assert_mirror_matches("t")


def test_the_migrator_changes_no_row_of_the_source(rlake):
    """The switch replaces delete files only: the resolved source before and after it is the same,
    read by Spark (an independent check of the writer itself)."""
    lake = rlake
    w = lake.writer
    w.create_table("t", [("v", "int"), ("s", "string")], format_version=3)
    w.backfill("t", rows(0, 30))
    cdc(lake, "t", 0)
    cdc(lake, "t", 5)
    before = sorted(tuple(r) for r in w.spark.table(w.q("t")).collect())
    w.switch_delete_mode("t", "dv")
    after = sorted(tuple(r) for r in w.spark.table(w.q("t")).collect())
    assert after == before and len(after) == len(w.model("t").rows)
