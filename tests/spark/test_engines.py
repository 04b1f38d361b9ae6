"""The Python engine (--engine python: Arrow and pyiceberg, no JVM) and the Spark engine behind the
same core: each scenario runs on both and the mirror must equal the OLake writer's model, read by
Spark, pyiceberg, DuckDB and iceberg-rust. First builds are Spark's (--engine auto hands them
over); the engines alternate on one mirror; what the Python engine does not serve is refused in one
line before anything is read (README, Engines)."""
import json
import os

import pytest
from tests.spark.conftest import Lake

from olake_cow.spark.session import local_aws_jars
from testkit.catalogs import glue_destination, glue_io, reference_destination, reference_io, renamed
from testkit.lakes import first_build, olake_changes

pytestmark = [pytest.mark.spark]
ENGINES = ["spark", "python"]


def _lake(spark, destinations, tmp_root, kind="jdbc"):
    return Lake(spark, destinations[kind], tmp_root, kind, "readonly", "cow")


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
    first_build(lake, delete_mode)
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
    first_build(lake, delete_mode)
    for base in (10, 30):
        olake_changes(lake, base, delete_mode)
        _merged_by(lake, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_rest_reference_server_with_oauth2(make_lake, reference, engine):
    lake = make_lake(reference_destination(reference, "refpy"), "rest", "readonly", "cow", reference_io(reference))
    first_build(lake, "position")
    for base in (10, 30):
        olake_changes(lake, base, "position")
        _merged_by(lake, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_hard_delete_mode_and_a_bucketed_source(spark, destinations, tmp_root, engine):
    lake = _lake(spark, destinations, tmp_root)
    lake.writer.create_table("t", [("v", "int"), ("s", "string")], partition_by=["bucket(4, _olake_id)"])
    lake.writer.backfill("t", [{"_olake_id": str(i), "v": i, "s": f"r{i}"} for i in range(80)])
    assert lake.run("--engine", "auto", "--delete-mode", "hard") == 0
    for base in (10, 40):
        olake_changes(lake, base)
        _merged_by(lake, engine, mode="hard")


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


def test_a_first_build_with_the_python_engine_is_refused_and_creates_nothing(spark, destinations, tmp_root, capsys):
    lake = _lake(spark, destinations, tmp_root)
    lake.writer.create_table("t", [("v", "int")])
    lake.writer.backfill("t", [{"_olake_id": "1", "v": 1}])
    code, entry = lake.run_summary("--engine", "python")
    assert code == 2 and "first build" in entry["error"] and "--engine spark" in entry["error"], entry
    assert not lake.tables.namespace_exists(lake.cow_ns) or "t_cow" not in lake.tables.list_tables(lake.cow_ns)


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


def test_auto_leaves_maintenance_to_spark_and_runs_it(spark, destinations, tmp_root):
    lake = _lake(spark, destinations, tmp_root)
    first_build(lake)
    olake_changes(lake, 10)
    code, entry = lake.run_summary("--engine", "auto", "--compact-files")
    assert code == 0 and entry["engine"] == "spark" and "maintenance" in entry["engine_reason"], entry
    assert entry["maintenance"] is not None, entry
    lake.assert_mirror_matches("t", engines=["pyiceberg"])


def test_auto_over_a_whole_namespace_names_no_source_as_dropped(spark, destinations, tmp_root):
    """The python engine merges one table, Spark builds a new one: the run names no mirror as left
    behind by a dropped source (every source is still there)."""
    lake = _lake(spark, destinations, tmp_root)
    first_build(lake)
    olake_changes(lake, 10)
    lake.writer.create_table("u", [("v", "int")])
    lake.writer.backfill("u", [{"_olake_id": "1", "v": 1}])
    code, entry = lake.run_summary("--engine", "auto")
    assert code == 0 and entry["engine"] == "python", entry
    assert {t["table"]: t["engine"] for t in lake.last_summary["tables"]} == {"t": "python", "u": "spark"}
    assert lake.last_summary["dropped_sources"] == [], lake.last_summary["dropped_sources"]
    lake.assert_mirror_matches("t", engines=["pyiceberg"])
    lake.assert_mirror_matches("u", engines=["pyiceberg"])


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
    with open(summary, encoding="utf-8") as f:
        [entry] = json.load(f)["tables"]
    assert entry["engine"] == "python" and entry["status"] == "merged", entry
    lake.assert_mirror_matches("t")
