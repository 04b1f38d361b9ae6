"""The merge on real Spark + Iceberg, in every source mode and mirror format (the `lake` fixture),
checked against the independent model and read by Spark, pyiceberg, DuckDB and iceberg-rust."""
import datetime as dt
import decimal
import random

import pytest
from tests.spark.catalog_scenarios import recreated_source

from testkit.lakes import make, rows
from testkit.local import spec_string

pytestmark = [pytest.mark.spark]


def test_upserts_and_tombstones_are_mirrored(lake):
    make(lake)
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"},
                             {"_olake_id": "2", "_op_type": "d"},
                             {"_olake_id": "50", "_op_type": "c", "v": 50, "s": "new"}])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    tomb = [r for r in lake.mirror_rows("t") if r["_olake_id"] == "2"]
    assert tomb and tomb[0]["_op_type"] == "d"


def test_hard_delete_mode_removes_tombstoned_keys(lake):
    make(lake)
    lake.writer.commit("t", [{"_olake_id": "3", "_op_type": "d"}, {"_olake_id": "4", "_op_type": "u", "v": 4}])
    assert lake.run("--delete-mode", "hard") == 0
    lake.assert_mirror_matches("t", "hard")
    lake.writer.commit("t", [{"_olake_id": "5", "_op_type": "d"}])
    assert lake.run("--delete-mode", "hard") == 0
    lake.assert_mirror_matches("t", "hard")
    assert "5" not in {r["_olake_id"] for r in lake.mirror_rows("t")}


def test_mirror_drops_keys_deleted_without_tombstone(lake):
    make(lake)
    assert lake.run() == 0
    lake.writer.commit("t", pure_deletes=["7", "8"])
    lake.writer.commit("t", [{"_olake_id": "9", "_op_type": "c", "v": 9}], pure_deletes=["10"])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    assert not {"7", "8", "10"} & {r["_olake_id"] for r in lake.mirror_rows("t")}


def test_deletes_survive_another_tools_rewrite_that_drops_their_delete_files(lake):
    """Found by the CI soak: rewrite_data_files drops equality-delete files older than every data
    file left. In truncate mode those deletes target rows that are only in the mirror; they must
    still reach it."""
    lake = lake
    make(lake)
    assert lake.run() == 0
    for n in (2, 5, 8, 11):
        lake.writer.commit("t", [{"_olake_id": str(n), "_op_type": "d"},
                                 {"_olake_id": f"new{n}", "_op_type": "c", "v": n}], pure_deletes=[str(n + 1)])
    lake.writer.rewrite_files("t")
    replace = [s for s in lake.source("t").snapshots if s.operation == "replace"][-1]
    assert replace.summary_int("removed-equality-delete-files") > 0  # the case under test happened
    lake.writer.commit("t", [{"_olake_id": "14", "_op_type": "u", "v": 140}])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")


def test_dropped_deletes_of_keys_outside_the_change_sets_files_reach_the_mirror(lake, monkeypatch):
    """Found by the soak (truncate, dv): the deleted keys ("0", "9") lie outside the key bounds of
    every file left in the change set ("3".."5"), and a change set whose keys are not collected is
    merged by its key range from file metrics: that range must cover the dropped delete files."""
    from olake_cow.spark import merge

    monkeypatch.setattr(merge, "KEYS_COLLECTED", 0)  # the key-range path of a large change set
    make(lake)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "3", "_op_type": "u", "v": 30}], pure_deletes=["0"])
    lake.writer.commit("t", [{"_olake_id": "4", "_op_type": "u", "v": 40}], pure_deletes=["9"])
    lake.writer.rewrite_files("t")
    lake.writer.commit("t", [{"_olake_id": "5", "_op_type": "u", "v": 50}])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    assert not {"0", "9"} & {r["_olake_id"] for r in lake.mirror_rows("t")}


def test_duplicate_visible_rows_keep_the_latest_change(lake):
    make(lake)
    assert lake.run() == 0
    # OLake #1189: insert then update of one key in one commit, both rows left visible
    lake.writer.commit("t", [{"_olake_id": "30", "_op_type": "c", "v": 1},
                             {"_olake_id": "30", "_op_type": "u", "v": 2},
                             {"_olake_id": "3", "_op_type": "u", "v": 31},
                             {"_olake_id": "3", "_op_type": "u", "v": 32}], dedupe=False)
    visible = [r for r in lake.writer.spark.table(lake.writer.q("t")).collect() if r["_olake_id"] == "30"]
    assert len(visible) == 2  # the source really holds the duplicate
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    keys = [r["_olake_id"] for r in lake.mirror_rows("t")]
    assert len(keys) == len(set(keys))


def test_schema_changes_reach_the_mirror(lake):
    make(lake)
    assert lake.run() == 0
    lake.writer.add_column("t", "extra", "string")
    lake.writer.widen_column("t", "v", "bigint")
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 2**40, "extra": "e"},
                             {"_olake_id": "77", "_op_type": "c", "v": 7, "extra": "n"}])
    assert lake.run() == 0
    fields = {f.name: f.dataType.simpleString() for f in lake.writer.spark.table(lake.mirror_q("t")).schema}
    assert fields["v"] == "bigint" and fields["extra"] == "string"
    lake.assert_mirror_matches("t")


def test_a_column_the_source_dropped_stays_in_the_mirror_null_in_later_rows(lake):
    """The mirror keeps a column its source dropped (its readers may still select it): rows written
    after the drop hold null there, the others keep their values."""
    make(lake)
    assert lake.run() == 0
    lake.writer.spark.sql(f"ALTER TABLE {lake.writer.q('t')} DROP COLUMN s")
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100},
                             {"_olake_id": "80", "_op_type": "c", "v": 80}])
    assert lake.run() == 0
    got = {r["_olake_id"]: (r["v"], r["s"]) for r in lake.mirror_rows("t")}
    expected = {str(i): (i, f"s{i}") for i in range(20)}
    expected.update({"1": (100, None), "80": (80, None)})
    assert got == expected


def test_a_renamed_source_column_is_renamed_in_the_mirror(lake):
    """Iceberg renames keep the column's field id and values: the mirror follows the rename (twice,
    the second while a run had nothing to merge), so old rows keep their values under the new name."""
    make(lake)
    assert lake.run() == 0
    lake.writer.rename_column("t", "v", "w")
    assert lake.run() == 0
    lake.writer.rename_column("t", "w", "amount")
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "amount": 100, "s": "x"},
                             {"_olake_id": "78", "_op_type": "c", "amount": 78, "s": "n"}])
    assert lake.run() == 0
    columns = [f.name for f in lake.writer.spark.table(lake.mirror_q("t")).schema]
    assert "amount" in columns and "v" not in columns and "w" not in columns, columns
    lake.assert_mirror_matches("t")


def test_nested_schema_changes_reach_the_mirror(lake):
    """Changes inside nested types that Iceberg allows: a field added to a struct, int -> long in a
    struct, a list element and a map value widened."""
    lake = lake
    lake.writer.create_table("n", [("v", "int"), ("st", "struct<a:int,b:string>"), ("arr", "array<int>"),
                                   ("mp", "map<string,float>")])
    lake.writer.backfill("n", [{"_olake_id": str(i), "v": i, "st": {"a": i, "b": f"b{i}"}, "arr": [i, i + 1],
                                "mp": {"k": 0.5}} for i in range(10)])
    assert lake.run() == 0
    q = lake.writer.q("n")
    for ddl in ("ADD COLUMN st.c string", "ALTER COLUMN st.a TYPE bigint", "ALTER COLUMN arr.element TYPE bigint",
                "ALTER COLUMN mp.value TYPE double"):
        lake.writer.spark.sql(f"ALTER TABLE {q} {ddl}")
    lake.writer.commit("n", [{"_olake_id": "1", "_op_type": "u", "v": 1, "st": {"a": 2**40, "b": "x", "c": "new"},
                              "arr": [2**40], "mp": {"k": 0.25}},
                             {"_olake_id": "20", "_op_type": "c", "v": 20, "st": {"a": 5, "b": "y", "c": "z"},
                              "arr": [], "mp": {}}])
    assert lake.run() == 0
    mirror = {f.name: f.dataType.simpleString() for f in lake.writer.spark.table(lake.mirror_q("n")).schema}
    assert mirror["st"] == "struct<a:bigint,b:string,c:string>"
    assert mirror["arr"] == "array<bigint>" and mirror["mp"] == "map<string,double>"
    # iceberg-rust 0.11 cannot read a data file written before a field was added to a struct (any table,
    # a plain Spark one too: "Incorrect number of arrays for StructArray fields"); a dv mirror keeps such files.
    lake.assert_mirror_matches("n", engines=("pyiceberg", "duckdb"))


def test_the_mirror_follows_the_sources_partition_spec_and_sort_order(lake):
    lake = lake
    lake.writer.create_table("p", [("v", "int"), ("region", "string")], partition_by=["bucket(4, _olake_id)"])
    lake.writer.backfill("p", [{"_olake_id": str(i), "v": i, "region": "eu" if i % 2 else "us"} for i in range(20)])
    assert lake.run() == 0
    q = lake.writer.q("p")
    lake.writer.spark.sql(f"ALTER TABLE {q} DROP PARTITION FIELD bucket(4, _olake_id)")
    lake.writer.spark.sql(f"ALTER TABLE {q} ADD PARTITION FIELD region")
    lake.writer.spark.sql(f"ALTER TABLE {q} WRITE ORDERED BY v DESC NULLS LAST")
    # OLake never evolves a spec: equality deletes of older rows would land in the new spec's
    # partitions, so this writer only inserts from here on, then changes its own new rows.
    lake.writer.commit("p", [{"_olake_id": str(i), "_op_type": "c", "v": i, "region": "eu"} for i in range(50, 55)])
    lake.writer.commit("p", [{"_olake_id": "51", "_op_type": "u", "v": 510, "region": "eu"}], pure_deletes=["52"])
    assert lake.run() == 0
    tables = lake.tables
    assert spec_string(tables, lake.cow_ns, "p_cow") == spec_string(tables, lake.ns, "p") == "identity(region)"
    order = tables.load(lake.cow_ns, "p_cow").sortOrder()
    assert [(str(f.direction().name()), str(f.nullOrder().name())) for f in order.fields()] == [("DESC", "NULLS_LAST")]
    lake.assert_mirror_matches("p")


def test_mirror_keeps_the_source_partition_spec_and_its_formats_write_mode(lake):
    lake.writer.create_table("p", [("v", "int"), ("region", "string")],
                             partition_by=["region", "bucket(4, _olake_id)"])
    lake.writer.backfill("p", [{"_olake_id": str(i), "v": i, "region": "eu" if i % 2 else "us"}
                               for i in range(40)])
    assert lake.run() == 0
    lake.writer.commit("p", [{"_olake_id": "1", "_op_type": "u", "v": 1, "region": "us"},  # moves partition
                             {"_olake_id": "2", "_op_type": "d", "region": "us"}], pure_deletes=["5"])
    assert lake.run() == 0
    lake.assert_mirror_matches("p")
    tables = lake.tables
    assert spec_string(tables, lake.cow_ns, "p_cow") == spec_string(tables, lake.ns, "p")
    props = lake.mirror("p").properties
    assert props["write.merge.mode"] == ("copy-on-write" if lake.fmt == "cow" else "merge-on-read")
    assert lake.mirror("p").format_version == (2 if lake.fmt == "cow" else 3)
    t = tables.load(lake.cow_ns, "p_cow")
    assert not t.sortOrder().isUnsorted()


def test_idle_run_commits_nothing(lake):
    make(lake)
    assert lake.run() == 0
    before = (lake.source("t"), lake.mirror("t"))
    assert lake.run() == 0
    assert lake.run() == 0
    after = (lake.source("t"), lake.mirror("t"))
    assert before[0].current_id == after[0].current_id and len(before[0].snapshots) == len(after[0].snapshots)
    assert before[1].current_id == after[1].current_id and len(before[1].snapshots) == len(after[1].snapshots)
    assert before[1].metadata_location == after[1].metadata_location


@pytest.mark.spark_only("Spark sessions")
def test_only_a_table_with_work_opens_a_spark_session(lake, monkeypatch):
    """An unchanged table is settled from its metadata through the run's catalog: in a namespace
    of hundreds of tables, an idle table must not pay for a Spark session of its own."""
    from olake_cow.spark import table_job

    make(lake, "t")
    make(lake, "u")
    assert lake.run() == 0
    opened = []
    real = table_job.table_session
    monkeypatch.setattr(table_job, "table_session", lambda *a: opened.append(1) or real(*a))
    assert lake.run() == 0
    assert opened == []
    lake.writer.commit("t", [{"_olake_id": "3", "_op_type": "u", "v": 300, "s": "x"},
                             {"_olake_id": "4", "_op_type": "d"}])
    assert lake.run() == 0
    assert opened == [1]
    lake.assert_mirror_matches("t")
    lake.assert_mirror_matches("u")


def test_recreated_source_rebuilds_the_mirror(lake):
    recreated_source(lake)


def test_dry_run_commits_nothing(lake, capsys):
    make(lake)
    before = lake.source_metadata()
    assert lake.run("--dry-run") == 0
    out = capsys.readouterr().out
    assert ("truncate the source" if lake.mode == "truncate" else "the source is only read") in out
    assert lake.mirror("t").exists is False
    assert lake.source_metadata() == before


def test_checkpoint_found_in_a_long_history(lake):
    make(lake)
    for i in range(7):
        lake.writer.commit("t", [{"_olake_id": str(i), "_op_type": "u", "v": 1000 + i}])
        assert lake.run() == 0
    lake.assert_mirror_matches("t")
    assert len(lake.mirror("t").snapshots) >= 7
    before = lake.mirror("t").current_id
    assert lake.run() == 0
    assert lake.mirror("t").current_id == before


def test_mirror_maintenance_keeps_the_checkpoint(lake):
    make(lake)
    for i in range(3):
        lake.writer.commit("t", [{"_olake_id": str(i), "_op_type": "u", "v": 500 + i}])
        assert lake.run() == 0
    cat = lake.catalog
    ident = f"{lake.cow_ns}.t_cow"
    lake.writer.spark.sql(f"CALL {cat}.system.rewrite_data_files(table => '{ident}', "
                          "options => map('rewrite-all', 'true'))")
    cur = lake.mirror("t").current_id
    lake.writer.spark.sql(f"CALL {cat}.system.expire_snapshots(table => '{ident}', "
                          f"older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)")
    assert [s.snapshot_id for s in lake.mirror("t").snapshots] == [cur]
    assert lake.run() == 0
    assert lake.mirror("t").current_id == cur  # nothing replayed, nothing committed
    lake.writer.commit("t", [{"_olake_id": "11", "_op_type": "u", "v": 11}], pure_deletes=["12"])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")


# How a backlog resolves is the planner's and the per-key rule's (one per source mode); the mirror
# format only changes the write, which every other test here covers in both formats.
@pytest.mark.parametrize("lake", [("readonly", "cow"), ("truncate", "dv")], indirect=True,
                         ids=["readonly-cow", "truncate-dv"])
def test_a_backlog_of_many_commits_is_merged_in_one_run(lake):
    """Twelve OLake commits since the last run: keys updated in several of them, deleted then
    written again, written then deleted, tombstoned then updated; one run merges them all."""
    make(lake)
    lake.writer.backfill("t", rows(20, 100), chunk=20)
    assert lake.run() == 0
    rng = random.Random(12)
    for i in range(12):
        keys = rng.sample(range(100), 12)
        batch = [{"_olake_id": str(k), "_op_type": "u", "v": 1000 * i + k, "s": f"c{i}"} for k in keys[:6]]
        batch += [{"_olake_id": str(k), "_op_type": "d"} for k in keys[6:8]]
        batch += [{"_olake_id": f"n{i}", "_op_type": "c", "v": i}, {"_olake_id": "7", "_op_type": "u", "v": i}]
        lake.writer.commit("t", batch, pure_deletes=[str(k) for k in keys[8:10]] + ([f"n{i - 1}"] if i % 3 else []))
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    assert lake.mirror_source_snapshot("t") == lake.writer.current_id("t") or lake.mode == "truncate"


def test_a_key_deleted_several_ways_in_one_change_set_is_deleted_once(lake):
    """The same key in several deletes of one change set (pure deletes in two commits; an update
    whose new row a user's DELETE removed, then a pure delete; two tombstones): each key is merged
    once (a MERGE fails when a mirror row matches two change rows)."""
    make(lake)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "7", "_op_type": "d"}, {"_olake_id": "8", "_op_type": "u", "v": 80}],
                       pure_deletes=["5", "6"])
    lake.writer.delete_where("t", "v = 80", lambda r: r.get("v") == 80)
    lake.writer.commit("t", [{"_olake_id": "7", "_op_type": "d"}], pure_deletes=["5", "8"])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    assert not {"5", "6", "8"} & {r["_olake_id"] for r in lake.mirror_rows("t")}


def test_a_backlog_in_hard_delete_mode_removes_every_tombstoned_key(lake):
    make(lake)
    assert lake.run("--delete-mode", "hard") == 0
    for i in range(5):
        lake.writer.commit("t", [{"_olake_id": str(i), "_op_type": "d"},
                                 {"_olake_id": str(10 + i), "_op_type": "u", "v": 100 + i},
                                 {"_olake_id": f"n{i}", "_op_type": "c", "v": i}])
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "c", "v": 1}, {"_olake_id": "n2", "_op_type": "d"}])
    assert lake.run("--delete-mode", "hard") == 0
    lake.assert_mirror_matches("t", "hard")
    keys = {r["_olake_id"] for r in lake.mirror_rows("t")}
    assert "1" in keys and not {"0", "2", "3", "4", "n2"} & keys  # 1 was deleted, then inserted again


RICH = [("i", "int"), ("l", "bigint"), ("d", "double"), ("f", "float"), ("dec", "decimal(18,4)"), ("b", "boolean"),
        ("dt", "date"), ("ts", "timestamp"), ("tsn", "timestamp_ntz"), ("bin", "binary"),
        ("st", "struct<a:int,b:string,c:struct<x:double>>"), ("arr", "array<string>"), ("mp", "map<string,int>"),
        ("arrs", "array<struct<p:int,q:string>>")]


def rich_row(k: int, op: str, nulls: bool):
    if nulls:  # every column but the key null, as in a tombstone or a sparse source row
        return {"_olake_id": str(k), "_op_type": op}
    return {"_olake_id": str(k), "_op_type": op, "i": k, "l": 2**40 + k, "d": k / 3, "f": 1.5, "b": k % 2 == 0,
            "dec": decimal.Decimal(f"{k}.1234"), "dt": dt.date(2024, 1, 1) + dt.timedelta(days=k),
            "ts": dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=k),
            "tsn": dt.datetime(2024, 1, 1, 12) + dt.timedelta(seconds=k), "bin": bytes([k % 256, 0, 1]),
            "st": {"a": k, "b": None if k % 3 else "b", "c": None if k % 2 else {"x": 0.5}},
            "arr": ["x", None, str(k)], "mp": {"k": k, "z": None}, "arrs": [{"p": k, "q": None}, None]}


def test_rich_column_types_with_nulls(lake):
    # The python engine leaves a list of structs to Spark (test_engines.py): its run here is without one.
    drop = {"arrs"} if lake.engine == "python" else set()

    def row(k: int, op: str, nulls: bool):
        return {c: v for c, v in rich_row(k, op, nulls).items() if c not in drop}

    lake.writer.create_table("r", [c for c in RICH if c[0] not in drop])
    lake.writer.backfill("r", [row(k, "r", k % 3 == 0) for k in range(60)], chunk=30)
    assert lake.run() == 0
    lake.assert_mirror_matches("r")
    lake.writer.commit("r", [row(k, "u", k % 2 == 0) for k in range(0, 60, 4)]  # values to nulls and back
                       + [{"_olake_id": str(k), "_op_type": "d"} for k in range(1, 60, 9)]
                       + [row(k, "c", k % 5 == 0) for k in range(60, 70)], pure_deletes=["7", "8"])
    assert lake.run() == 0
    lake.assert_mirror_matches("r")


def test_a_change_touching_most_keys(lake):
    """One commit updates 90% of the keys and deletes 5% (the rest by pure equality deletes)."""
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 2000), chunk=500)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": str(k), "_op_type": "u", "v": -k, "s": "most"} for k in range(2000)
                             if k % 10]
                       + [{"_olake_id": str(k), "_op_type": "d"} for k in range(0, 2000, 20)]
                       + [{"_olake_id": f"n{k}", "_op_type": "c", "v": k} for k in range(50)],
                       pure_deletes=[str(k) for k in range(10, 2000, 20)])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    lake.writer.commit("t", [{"_olake_id": str(k), "_op_type": "u", "v": k, "s": "again"} for k in range(1, 2000, 2)])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")


@pytest.mark.parametrize("version", [2, 3])
def test_a_users_delete_of_rows_written_since_the_last_run(lake, version):
    """A user's DELETE FROM (position deletes, or deletion vectors on v3) of rows OLake wrote since
    the last run: an update (its new row deleted, its older row deleted by OLake) and an insert."""
    lake.writer.create_table("t", [("v", "int"), ("s", "string")], format_version=version)
    lake.writer.backfill("t", rows(0, 20))
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "3", "_op_type": "u", "v": 300},
                             {"_olake_id": "4", "_op_type": "u", "v": 400},
                             {"_olake_id": "77", "_op_type": "c", "v": 770}], dedupe=version == 2)
    lake.writer.delete_where("t", "v = 300 OR v = 770", lambda r: r.get("v") in (300, 770))
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    assert not {"3", "77"} & {r["_olake_id"] for r in lake.mirror_rows("t")}


def test_a_full_build_writes_disjoint_key_ranges_of_the_resolved_rows(rlake, monkeypatch):
    # A source of 2,000 rows whose history rewrote and deleted keys: with ranges of 1 KB allowed the
    # build writes up to 32 key ranges; their bounds come from a sample of the files as stored
    # (deleted keys among them), the rows from the resolved source, one per key.
    from olake_cow.core import filesize

    monkeypatch.setattr(filesize, "MIN_RANGE_BYTES", 1024)
    lake = rlake
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 2000), chunk=500)
    rng = random.Random(7)
    for n in range(3):
        keys = rng.sample(range(2000), 300)
        lake.writer.commit("t", [{"_olake_id": str(k), "_op_type": "u", "v": 10_000 * (n + 1) + k} for k in keys[:200]],
                           pure_deletes=[str(k) for k in keys[200:]])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    ranges = sorted(tuple(r) for r in lake.writer.spark.sql(
        "SELECT readable_metrics.`_olake_id`.lower_bound, readable_metrics.`_olake_id`.upper_bound "
        f"FROM {lake.mirror_q('t')}.files").collect())
    assert len(ranges) >= 8, ranges
    assert all(hi < next_lo for (_, hi), (next_lo, _) in zip(ranges, ranges[1:])), ranges  # disjoint, in key order
