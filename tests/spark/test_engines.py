"""The Python engine (--engine python: Arrow and pyiceberg, no JVM) and the Spark engine behind the
same core: each scenario, first build included, runs on both and the mirror must equal the OLake
writer's model, read by Spark, pyiceberg, DuckDB and iceberg-rust; both engines make the same mirror
and refuse the same places for it; the engines alternate on one mirror; what the Python engine does
not serve is refused in one line before anything is read (README, Engines)."""
import datetime as dt
import json
import os
from collections import Counter

import pytest
from tests.spark.conftest import Lake

from olake_cow.python_engine.catalog import opened_catalog
from olake_cow.spark.session import local_aws_jars
from testkit.catalogs import glue_destination, glue_io, reference_destination, reference_io, renamed
from testkit.lakes import first_build, olake_changes, rows

pytestmark = [pytest.mark.spark]
ENGINES = ["spark", "python"]


def _lake(spark, destinations, tmp_root, kind="jdbc"):
    return Lake(spark, destinations[kind], tmp_root, kind, "readonly", "cow")


def _metadata_log(lake, table="t"):
    """Every metadata file the mirror's commits wrote, oldest first."""
    with opened_catalog(lake.cfg) as catalog:
        t = catalog.load_table((lake.cow_ns, f"{table}_cow"))
    return [e.metadata_file for e in t.metadata.metadata_log] + [t.metadata_location]


def _merged_by(lake, engine, *args, mode="keep"):
    code, entry = lake.run_summary("--engine", engine, "--delete-mode", mode, *args)
    assert code == 0, entry
    assert entry["engine"] == engine and entry["status"] == "merged", entry
    lake.assert_mirror_matches("t", mode)
    return entry


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("delete_mode", ["equality", "position", "dv"])
def test_every_kind_of_change_in_each_of_olakes_delete_modes(spark, destinations, tmp_root, engine, delete_mode):
    lake = _lake(spark, destinations, tmp_root)
    first_build(lake, delete_mode, engine=engine)
    olake_changes(lake, 10, delete_mode)
    _merged_by(lake, engine)
    # another tool rewrites the source's files, then OLake commits again
    lake.writer.rewrite_files("t")
    olake_changes(lake, 30, delete_mode)
    entry = _merged_by(lake, engine)
    assert entry["files_rewritten"] >= 1  # copy-on-write: the files holding changed keys
    code, entry = lake.run_summary("--engine", engine)
    assert code == 0 and entry["status"] == "up_to_date", entry


@pytest.mark.skipif(not local_aws_jars(), reason="AWS SDK jars not installed (make setup)")
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("delete_mode", ["equality", "dv"])
def test_glue_and_s3(make_lake, moto_s3_glue, engine, delete_mode):
    lake = make_lake(renamed(glue_destination(moto_s3_glue), "gluepy"), "glue", "readonly", "cow",
                     glue_io(moto_s3_glue))
    first_build(lake, delete_mode, engine=engine)
    for base in (10, 30):
        olake_changes(lake, base, delete_mode)
        _merged_by(lake, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_rest_reference_server_with_oauth2(make_lake, reference, engine):
    lake = make_lake(reference_destination(reference, "refpy"), "rest", "readonly", "cow", reference_io(reference))
    first_build(lake, "position", engine=engine)
    for base in (10, 30):
        olake_changes(lake, base, "position")
        _merged_by(lake, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_hard_delete_mode_and_a_bucketed_source(spark, destinations, tmp_root, engine):
    lake = _lake(spark, destinations, tmp_root)
    lake.writer.create_table("t", [("v", "int"), ("s", "string")], partition_by=["bucket(4, _olake_id)"])
    lake.writer.backfill("t", [{"_olake_id": str(i), "v": i, "s": f"r{i}"} for i in range(80)])
    assert lake.run("--engine", engine, "--delete-mode", "hard") == 0
    lake.assert_mirror_matches("t", "hard", engines=["pyiceberg"])
    for base in (10, 40):
        olake_changes(lake, base)
        _merged_by(lake, engine, mode="hard")
        if engine == "python":  # a rewritten partition's rows and its upserts make one file
            assert sorted(_files_per_partition(lake).values()) == [1, 1, 1, 1]


def _files_per_partition(lake, table="t"):
    with opened_catalog(lake.cfg) as catalog:
        files = catalog.load_table((lake.cow_ns, f"{table}_cow")).inspect.data_files().to_pylist()
    return Counter(tuple(sorted(f["partition"].items())) for f in files)


def test_the_engines_take_over_each_others_mirror(spark, destinations, tmp_root):
    lake = _lake(spark, destinations, tmp_root)
    first_build(lake, "position")
    for i, engine in enumerate(["python", "spark", "python", "python", "spark", "python"]):
        olake_changes(lake, 10 * (i + 1), "position")
        _merged_by(lake, engine)


def test_a_merge_over_the_budget_goes_to_spark_with_auto_and_is_refused_with_python(spark, destinations,
                                                                                       tmp_root):
    lake = _lake(spark, destinations, tmp_root)
    first_build(lake)
    olake_changes(lake, 10)
    before = lake.mirror("t").current_id
    code, entry = lake.run_summary("--engine", "python", "--python-max-mb", "0")
    assert code == 2 and entry["status"] == "failed" and "budget" in entry["error"], entry
    assert lake.mirror("t").current_id == before
    code, entry = lake.run_summary("--engine", "auto", "--python-max-mb", "0")
    assert code == 0 and entry["engine"] == "spark" and "budget" in entry["engine_reason"], entry
    lake.assert_mirror_matches("t", engines=["pyiceberg"])
    olake_changes(lake, 20)
    code, entry = lake.run_summary("--engine", "auto")
    assert code == 0 and entry["engine"] == "python", entry
    lake.assert_mirror_matches("t", engines=["pyiceberg"])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("delete_mode", ["equality", "position", "dv"])
def test_a_first_build_of_a_source_that_already_holds_every_kind_of_change(spark, destinations, tmp_root, engine,
                                                                           delete_mode):
    """The whole source snapshot, its deletes of each kind resolved (duplicate keys included) and its
    files written before and after a column was added, is the first build: the mirror equals the
    model, and the next syncs merge into it."""
    lake = _lake(spark, destinations, tmp_root)
    lake.writer.create_table("t", [("v", "int"), ("s", "string")], delete_mode=delete_mode)
    lake.writer.backfill("t", [{"_olake_id": str(i), "v": i, "s": f"r{i}"} for i in range(60)])
    olake_changes(lake, 10, delete_mode)
    lake.writer.add_column("t", "extra", "string")
    lake.writer.commit("t", [{"_olake_id": "11", "_op_type": "u", "v": 11, "extra": "e"}])
    olake_changes(lake, 20, delete_mode)
    entry = _merged_by(lake, engine)
    assert entry["rows_upserted"] == len(lake.writer.model("t").expected()), entry
    olake_changes(lake, 30, delete_mode)
    _merged_by(lake, engine)


def _made_like(table):
    """What a mirror is made of, but for what names its own source and run."""
    t = table.metadata
    runs = ("olake-cow.source-table", "olake-cow.data-snapshot", "olake-cow.staged-snapshot")  # ids of its commits
    props = {k: v for k, v in t.properties.items() if "checkpoint" not in k and k not in runs}
    return (str(t.schema()), [(str(f.transform), f.name) for f in t.spec().fields], str(t.sort_order()),
            t.format_version, props, table.location().rsplit("/", 2)[-1])


def test_the_python_engine_makes_the_mirror_the_spark_engine_makes(spark, destinations, tmp_root):
    """One OLake table in two namespaces (a day-partitioned source with a sort order of its own), each
    mirror first built by another engine: the same schema, spec, sort order, properties and layout,
    and either engine merges into the other's mirror."""
    built = {}
    for engine in ENGINES:
        lake = _lake(spark, destinations, tmp_root)
        lake.writer.create_table("t", [("v", "int"), ("d", "date")], partition_by=["days(d)"])
        lake.writer.spark.sql(f"ALTER TABLE {lake.writer.q('t')} WRITE ORDERED BY v DESC NULLS LAST")
        lake.writer.backfill("t", [{"_olake_id": str(i), "v": i, "d": dt.date(2026, 11, 1 + i % 3)}
                                  for i in range(30)])
        lake.writer.commit("t", [{"_olake_id": "4", "_op_type": "u", "v": 40, "d": dt.date(2026, 11, 2)}])
        _merged_by(lake, engine)
        built[engine] = lake
    made = {}
    for engine, lake in built.items():
        with opened_catalog(lake.cfg) as catalog:
            made[engine] = _made_like(catalog.load_table((lake.cow_ns, "t_cow")))
    for a, b in zip(made["spark"], made["python"]):
        assert a == b, (a, b)
    for engine, lake in built.items():
        other = "python" if engine == "spark" else "spark"
        lake.writer.commit("t", [{"_olake_id": "7", "_op_type": "d"}, {"_olake_id": "99", "_op_type": "c", "v": 1,
                                                                        "d": dt.date(2026, 11, 3)}])
        _merged_by(lake, other)


@pytest.mark.parametrize("engine", ENGINES)
def test_neither_engine_creates_a_mirror_where_it_is_not_its_own(spark, destinations, tmp_root, engine):
    """A source namespace as the mirror namespace, a location inside the source's namespace folder,
    or one that already holds someone's files: exit 2, nothing created (not even the namespace), the
    files kept; then the mirror is built where it may be."""
    mine, theirs = _lake(spark, destinations, tmp_root), _lake(spark, destinations, tmp_root)
    for lake in (mine, theirs):
        lake.writer.create_table("t", [("v", "int")])
        lake.writer.backfill("t", [{"_olake_id": "1", "v": 1}])
    before = theirs.source_metadata()
    code, entry = mine.run_summary("--engine", engine, "--cow-namespace", theirs.ns)
    assert code == 2 and f"{theirs.ns} holds OLake's table t: it is a source namespace" in entry["error"], entry
    assert theirs.source_metadata() == before and theirs.tables.list_tables(theirs.ns) == ["t"]
    source_folder = "file://" + mine.source("t").metadata_location.split("/t/metadata/")[0].replace("file:", "")
    code, entry = mine.run_summary("--engine", engine, "--cow-base-location", source_folder)
    assert code == 2 and "inside its source namespace's folder" in entry["error"], entry
    assert not mine.tables.namespace_exists(mine.cow_ns)
    folder = os.path.join(str(tmp_root), f"{mine.ns}-elsewhere")
    os.makedirs(os.path.join(folder, "t_cow", "data"))
    theirs_file = os.path.join(folder, "t_cow", "data", "theirs.parquet")
    with open(theirs_file, "wb") as f:
        f.write(b"someone else's bytes")
    code, entry = mine.run_summary("--engine", engine, "--cow-base-location", f"file://{folder}")
    assert code == 2 and "already holds files: nothing was created" in entry["error"], entry
    assert open(theirs_file, "rb").read() == b"someone else's bytes"
    assert not mine.tables.namespace_exists(mine.cow_ns)
    _merged_by(mine, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_source_with_a_null_key_is_refused_before_any_mirror_is_made(spark, destinations, tmp_root, engine):
    lake = _lake(spark, destinations, tmp_root)
    lake.tables.create_namespace(lake.ns)
    lake.writer.spark.sql(f"CREATE TABLE {lake.writer.q('t')} (_olake_id string, _op_type string, "
                          "_olake_timestamp timestamp, _cdc_timestamp timestamp) USING iceberg")
    lake.writer.spark.sql(f"INSERT INTO {lake.writer.q('t')} VALUES ('1', 'r', now(), now()), "
                          "(NULL, 'r', now(), now())")
    code, entry = lake.run_summary("--engine", engine)
    assert code == 1 and entry["engine"] == engine and "_olake_id is NULL" in entry["error"], entry
    assert not lake.tables.namespace_exists(lake.cow_ns)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_dry_run_of_a_first_build_describes_it_and_makes_nothing(spark, destinations, tmp_root, engine):
    lake = _lake(spark, destinations, tmp_root)
    lake.writer.create_table("t", [("v", "int")])
    lake.writer.backfill("t", [{"_olake_id": str(i), "v": i} for i in range(5)])
    code, entry = lake.run_summary("--engine", engine, "--dry-run")
    assert code == 0 and entry["status"] == "dry_run" and entry["engine"] == engine, entry
    assert any("first build" in line for line in entry["plan"]), entry["plan"]
    assert not lake.tables.namespace_exists(lake.cow_ns)


@pytest.mark.parametrize("then", ENGINES)
def test_a_python_first_build_killed_before_its_write_is_finished_by_either_engine(spark, destinations, tmp_root,
                                                                                  monkeypatch, then):
    """The mirror is created in a commit of its own, its rows in a second: a run that dies between the
    two leaves an empty mirror of the job's own (no files that would block its creation), which the
    next run of either engine fills, with the column the source gained meanwhile."""
    from olake_cow.python_engine import table_run

    lake = _lake(spark, destinations, tmp_root)
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", [{"_olake_id": str(i), "v": i, "s": f"r{i}"} for i in range(20)])

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(table_run, "build_cow", killed)
    with pytest.raises(KeyboardInterrupt):
        lake.run("--engine", "python")
    monkeypatch.undo()
    mirror = lake.mirror("t")
    assert mirror.exists and mirror.current_id is None
    lake.writer.add_column("t", "extra", "string")
    lake.writer.commit("t", [{"_olake_id": "3", "_op_type": "u", "v": 30, "s": "x", "extra": "e"}])
    _merged_by(lake, then)
    assert {r["_olake_id"]: r["extra"] for r in lake.mirror_rows("t")}["3"] == "e"


@pytest.mark.parametrize("engine", ENGINES)
def test_new_widened_renamed_and_dropped_columns_reach_the_mirror_on_both_engines(spark, destinations, tmp_root,
                                                                                    engine):
    """OLake's table gains a column, widens one and renames one (another tool), and drops one: each
    engine's merge makes the mirror follow (the python engine in the merge's own commit). Old rows
    keep their values under the new name; the dropped column stays in the mirror, its old values
    kept and null in rows written after the drop."""
    lake = _lake(spark, destinations, tmp_root)
    first_build(lake, engine=engine)
    commits = len(_metadata_log(lake))
    lake.writer.add_column("t", "extra", "string")
    lake.writer.add_column("t", "gone", "int")
    lake.writer.widen_column("t", "v", "bigint")
    lake.writer.rename_column("t", "s", "label")
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 2**40, "extra": "e", "label": "x", "gone": 1},
                             {"_olake_id": "77", "_op_type": "c", "v": 7, "extra": "n", "label": "n", "gone": 2}])
    _merged_by(lake, engine)
    if engine == "python":  # the new schema and its rows in one commit
        assert len(_metadata_log(lake)) == commits + 1
    lake.writer.spark.sql(f"ALTER TABLE {lake.writer.q('t')} DROP COLUMN gone")
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 5, "extra": "f", "label": "y"},
                             {"_olake_id": "78", "_op_type": "c", "v": 8, "extra": "m", "label": "m"}])
    code, entry = lake.run_summary("--engine", engine)
    assert code == 0 and entry["engine"] == engine and entry["status"] == "merged", entry
    fields = {f.name: f.dataType.simpleString() for f in lake.writer.spark.table(lake.mirror_q("t")).schema}
    assert fields == {"_olake_id": "string", "v": "bigint", "label": "string", "extra": "string", "gone": "int",
                      "_op_type": "string", "_olake_timestamp": fields["_olake_timestamp"],
                      "_cdc_timestamp": fields["_cdc_timestamp"]}, fields
    got = {r["_olake_id"]: (r["v"], r["label"], r["extra"], r["gone"]) for r in lake.mirror_rows("t")}
    expected = {str(i): (i, f"r{i}", None, None) for i in range(60)}
    expected.update({"1": (5, "y", "f", None), "77": (7, "n", "n", 2), "78": (8, "m", "m", None)})
    assert got == expected
    lake.writer.commit("t", [{"_olake_id": "2", "_op_type": "u", "v": 9, "extra": "g", "label": "z"}])
    _merged_by(lake, "spark" if engine == "python" else "python")  # the other engine takes the mirror on


def _layout(lake, ns, table):
    """A table's partition spec and sort order as (transform, column[, field name]) terms."""
    with opened_catalog(lake.cfg) as catalog:
        t = catalog.load_table((ns, table))
    schema = t.schema()
    spec = sorted((str(f.transform), schema.find_column_name(f.source_id), f.name) for f in t.spec().fields
                  if str(f.transform) != "void")
    order = [(str(f.transform), schema.find_column_name(f.source_id), f.direction.name, f.null_order.name)
             for f in t.sort_order().fields]
    return spec, order


@pytest.mark.parametrize("engine", ENGINES)
def test_a_new_partition_spec_and_sort_order_reach_the_mirror_on_both_engines(spark, destinations, tmp_root,
                                                                              engine):
    """Someone repartitions OLake's table and gives it a sort order: each engine's merge gives the
    mirror the source's spec and order (the python engine in the merge's own commit), the files it
    rewrites leave the old spec, and the rows are the model's; the other engine then merges on."""
    lake = _lake(spark, destinations, tmp_root)
    first_build(lake, partition_by=["bucket(4, _olake_id)"], engine=engine)
    commits = len(_metadata_log(lake))
    q = lake.writer.q("t")
    lake.writer.spark.sql(f"ALTER TABLE {q} DROP PARTITION FIELD bucket(4, _olake_id)")
    lake.writer.spark.sql(f"ALTER TABLE {q} ADD PARTITION FIELD s")
    lake.writer.spark.sql(f"ALTER TABLE {q} ADD PARTITION FIELD truncate(2, _olake_id)")
    lake.writer.spark.sql(f"ALTER TABLE {q} WRITE ORDERED BY v DESC NULLS LAST")
    # Equality deletes land in the new spec's partitions and miss older rows (Iceberg's rule, why
    # OLake never evolves a spec): this writer inserts, then changes only rows written since; a
    # user's DELETE takes an older row.
    lake.writer.commit("t", [{"_olake_id": str(i), "_op_type": "c", "v": i, "s": "eu"} for i in range(100, 105)])
    lake.writer.delete_where("t", "v = 5", lambda r: r.get("v") == 5)
    entry = _merged_by(lake, engine)
    assert entry["files_rewritten"] >= 1, entry  # the old-spec file that held key 5
    if engine == "python":
        assert len(_metadata_log(lake)) == commits + 1
    spec, order = _layout(lake, lake.ns, "t")
    assert spec == [("identity", "s", "s"), ("truncate[2]", "_olake_id", "_olake_id_trunc_2")], spec
    assert order == [("identity", "v", "DESC", "NULLS_LAST")], order
    assert _layout(lake, lake.cow_ns, "t_cow") == (spec, order)
    lake.writer.commit("t", [{"_olake_id": "101", "_op_type": "u", "v": 7, "s": "eu"}], pure_deletes=["102"])
    _merged_by(lake, "spark" if engine == "python" else "python")
    assert _layout(lake, lake.cow_ns, "t_cow") == (spec, order)


def _refused_then_spark(lake, said):
    """`--engine python` refuses the table in one line naming `said`, the mirror untouched; auto gives
    it to Spark with that reason, and Spark's mirror is the model's. The Spark run's summary entry."""
    before = lake.mirror("t").metadata_location
    code, entry = lake.run_summary("--engine", "python")
    assert code == 2 and said in entry["error"] and "--engine spark" in entry["error"], entry
    assert lake.mirror("t").metadata_location == before
    code, entry = lake.run_summary("--engine", "auto")
    assert code == 0 and entry["engine"] == "spark" and said in entry["engine_reason"], entry
    lake.assert_mirror_matches("t")
    return entry


@pytest.mark.parametrize("engine", ENGINES)
def test_another_delete_mode_and_someones_commit_to_the_mirror_rebuild_it_in_place_on_both_engines(
        spark, destinations, tmp_root, engine):
    """A readonly mirror is rebuilt from OLake's table, in place: when another --delete-mode is
    asked, and when someone else commits to it (a user's DELETE). The summary says why, as on Spark
    (`repaired`, the note); the other engine merges into the rebuilt mirror."""
    lake = _lake(spark, destinations, tmp_root)
    first_build(lake, engine=engine)
    olake_changes(lake, 10)
    _merged_by(lake, engine)
    assert any(r["_op_type"] == "d" for r in lake.mirror_rows("t"))  # keep mode: a tombstone row
    olake_changes(lake, 20)
    entry = _merged_by(lake, engine, mode="hard")
    assert entry["repaired"] == 1 and any("--delete-mode hard was asked" in n for n in entry["notes"]), entry
    assert not any(r["_op_type"] == "d" for r in lake.mirror_rows("t"))
    lake.writer.spark.sql(f"DELETE FROM {lake.mirror_q('t')} WHERE v < 30")
    assert len(lake.mirror_rows("t")) < len(lake.writer.model("t").expected())
    code, entry = lake.run_summary("--engine", engine, "--delete-mode", "hard")
    assert code == 0 and entry["engine"] == engine and entry["status"] == "merged", entry
    assert entry["repaired"] == 1 and any("committed by someone else" in n for n in entry["notes"]), entry
    lake.assert_mirror_matches("t", "hard")
    olake_changes(lake, 30)
    _merged_by(lake, "spark" if engine == "python" else "python", mode="hard")


def test_a_mirror_whose_columns_someone_changed_is_made_anew_by_spark(spark, destinations, tmp_root):
    """A column someone dropped from the mirror: the mirror's table is dropped and created anew,
    which the python engine leaves to Spark (auto) or refuses (python, exit 2, nothing written)."""
    lake = _lake(spark, destinations, tmp_root)
    first_build(lake, engine="python")
    lake.writer.spark.sql(f"ALTER TABLE {lake.mirror_q('t')} DROP COLUMN s")
    assert _refused_then_spark(lake, "made anew")["repaired"] == 1


def test_a_rebuild_over_the_budget_goes_to_spark(spark, destinations, tmp_root):
    """A rebuild reads the whole source: the budget counts the source's files, not the change set's."""
    lake = _lake(spark, destinations, tmp_root)
    first_build(lake, n=2000, engine="python")
    code, entry = lake.run_summary("--engine", "auto", "--delete-mode", "hard", "--python-max-mb", "0")
    assert code == 0 and entry["engine"] == "spark" and "the rebuild may read" in entry["engine_reason"], entry
    lake.assert_mirror_matches("t", "hard")


def test_a_null_list_or_map_of_structs_is_left_to_spark_which_keeps_it_null(spark, destinations, tmp_root):
    """pyiceberg 0.12's Arrow projection (every read and write) turns a null list of structs, or a
    null map with struct values, into an empty one: the python engine refuses such a table in one line
    (nothing written) and auto gives it to Spark, whose mirror keeps the nulls."""
    lake = _lake(spark, destinations, tmp_root)
    lake.writer.create_table("t", [("v", "int"), ("st", "struct<n:int,l:array<struct<p:int>>>"),
                                   ("mp", "map<string,struct<q:int>>")])
    lake.writer.backfill("t", [{"_olake_id": "1", "v": 1, "st": {"n": 1, "l": None}, "mp": None},
                               {"_olake_id": "2", "v": 2, "st": {"n": 2, "l": [{"p": 2}]}, "mp": {"a": {"q": 2}}},
                               {"_olake_id": "3", "v": 3, "st": {"n": 3, "l": []}, "mp": {}}])
    code, entry = lake.run_summary("--engine", "python")
    assert code == 2 and "column st.l" in entry["error"] and "--engine spark" in entry["error"], entry
    assert not lake.mirror("t").exists
    code, entry = lake.run_summary("--engine", "auto")
    assert code == 0 and entry["engine"] == "spark" and "st.l" in entry["engine_reason"], entry
    got = {r["_olake_id"]: (r["st"]["l"], r["mp"]) for r in lake.mirror_rows("t")}
    assert got["1"] == (None, None) and got["3"] == ([], {}), got
    lake.assert_mirror_matches("t", engines=["duckdb"])


def test_runs_in_one_process_leave_no_catalog_connection_open(spark, destinations, tmp_root):
    """The merge function's Lambda runs the job again and again in one process: each python-engine
    run on a jdbc catalog closes its connections, or PostgreSQL soon refuses new clients."""
    import psycopg2

    lake = _lake(spark, destinations, tmp_root)
    first_build(lake, engine="python")
    url = lake.cfg.writer["jdbc_url"][len("jdbc:postgresql://"):]
    host, port = url.split("/")[0].split(":")

    def connections() -> int:
        with psycopg2.connect(host=host, port=int(port), user="iceberg", dbname="iceberg") as db:
            with db.cursor() as cur:
                cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = 'iceberg' "
                            "AND pid <> pg_backend_pid()")
                return int(cur.fetchone()[0])

    import gc

    before = connections()
    gc.disable()  # as in the job's own process (main.py): nothing may rely on the collector to close them
    try:
        for i in range(4):
            olake_changes(lake, 100 * (i + 1))
            _merged_by(lake, "python")
        assert connections() <= before
    finally:
        gc.enable()


@pytest.mark.parametrize("args, kind, said", [
    ((), "hadoop", "serves glue, jdbc and rest catalogs"),
    (("--mirror-format", "dv"), "jdbc", "--mirror-format dv"),
    (("--source-mode", "truncate"), "jdbc", "--source-mode truncate"),
    (("--verify",), "jdbc", "--verify"),
    (("--compact-files",), "jdbc", "maintenance"),
], ids=["hadoop", "dv", "truncate", "verify", "maintenance"])
def test_what_the_python_engine_does_not_serve_is_one_line_before_anything_is_read(
        spark, destinations, tmp_root, capsys, args, kind, said):
    lake = _lake(spark, destinations, tmp_root, kind)
    lake.writer.create_table("t", [("v", "int")])
    lake.writer.backfill("t", [{"_olake_id": "1", "v": 1}])
    before = lake.source_metadata()
    summary = os.path.join(str(tmp_root), f"{lake.ns}-refused.json")
    code = lake.run_raw("--engine", "python", "--summary-out", summary, *args)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and said in err[0] and "--engine spark" in err[0], err
    assert lake.source_metadata() == before and not os.path.exists(summary)
    assert not lake.tables.namespace_exists(lake.cow_ns)
    json.dumps(err)


@pytest.mark.parametrize("kind, engine", [("jdbc", "python"), ("hadoop", "spark")])
def test_with_no_engine_named_the_python_engine_runs_where_it_serves_and_spark_says_why_elsewhere(
        spark, destinations, tmp_root, kind, engine):
    """The command line's default is auto: a jdbc mirror is built and merged by the python engine; on
    a file-system catalog every table goes to Spark, its reason naming the catalog (no advice to
    use another engine: none was asked for)."""
    lake = _lake(spark, destinations, tmp_root, kind)
    lake.engine = None  # the job's own default
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 20))
    for _ in range(2):
        code, entry = lake.run_summary()
        assert code == 0 and entry["engine"] == engine and entry["status"] == "merged", entry
        if engine == "spark":
            assert "serves glue, jdbc and rest catalogs" in entry["engine_reason"], entry
            assert "--engine" not in entry["engine_reason"], entry
        lake.assert_mirror_matches("t", engines=["pyiceberg"])
        olake_changes(lake, 10)


def test_auto_leaves_maintenance_to_spark_and_runs_it(spark, destinations, tmp_root):
    lake = _lake(spark, destinations, tmp_root)
    first_build(lake)
    olake_changes(lake, 10)
    code, entry = lake.run_summary("--engine", "auto", "--compact-files")
    assert code == 0 and entry["engine"] == "spark" and "maintenance" in entry["engine_reason"], entry
    assert entry["maintenance"] is not None, entry
    lake.assert_mirror_matches("t", engines=["pyiceberg"])


def test_auto_over_a_whole_namespace_names_no_source_as_dropped(spark, destinations, tmp_root):
    """The python engine merges one table, Spark another (a list of structs, which it hands over):
    the run names no mirror as left behind by a dropped source (every source is still there)."""
    lake = _lake(spark, destinations, tmp_root)
    first_build(lake)
    lake.writer.create_table("u", [("v", "int")])
    lake.writer.backfill("u", [{"_olake_id": "1", "v": 1}])
    assert lake.run("--engine", "auto") == 0
    olake_changes(lake, 10)
    lake.writer.add_column("u", "l", "array<struct<p:int>>")
    lake.writer.commit("u", [{"_olake_id": "2", "_op_type": "c", "v": 2, "l": None}])
    code, entry = lake.run_summary("--engine", "auto")
    assert code == 0 and entry["engine"] == "python", entry
    assert {t["table"]: t["engine"] for t in lake.last_summary["tables"]} == {"t": "python", "u": "spark"}
    assert lake.last_summary["dropped_sources"] == [], lake.last_summary["dropped_sources"]
    lake.assert_mirror_matches("t", engines=["pyiceberg"])
    lake.assert_mirror_matches("u", engines=["duckdb"])  # pyiceberg would read the null list as []


def test_the_job_as_a_process_of_its_own_on_the_python_engine(spark, destinations, tmp_root):
    """`main.py` as the express lane's and a local user's process: a python-engine run ends
    without the interpreter's teardown, yet its exit code, its log lines and its summary are all
    out, and the mirror is the model's."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # output buffered, as on EMR
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(root, "emr_job"), root])
    lake = _lake(spark, destinations, tmp_root)
    first_build(lake)
    olake_changes(lake, 10)

    def process(*args: str) -> "subprocess.CompletedProcess[str]":
        return subprocess.run([sys.executable, os.path.join(root, "emr_job", "main.py"), "--destination-details",
                               lake.dest_path, "--source-namespace", lake.ns, "--engine", "python", *args],
                              env=env, capture_output=True, text=True, timeout=300)

    summary = os.path.join(str(tmp_root), f"{lake.ns}-process.json")
    refused = process("--python-max-mb", "0", "--summary-out", summary)
    assert refused.returncode == 2 and "budget" in refused.stderr, refused.stderr
    done = process("--summary-out", summary)
    assert done.returncode == 0, done.stderr
    assert "merged source snapshot" in done.stderr and done.stdout.strip().splitlines()[-1].startswith("t "), done
    # The catalog Iceberg's Java client made is left as it is, without pyiceberg's advice to migrate it.
    assert "schema_version" not in done.stderr and "v0 schema" not in done.stderr, done.stderr
    with open(summary, encoding="utf-8") as f:
        [entry] = json.load(f)["tables"]
    assert entry["engine"] == "python" and entry["status"] == "merged", entry
    lake.assert_mirror_matches("t")
