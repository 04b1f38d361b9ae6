"""A driver class archive (infra/image/class_archive.py, core/jvm.py) speeds a run up and changes
nothing it writes; an archive that does not fit the JVM is ignored, not fatal."""
import os
import shutil
import subprocess
import sys

import pytest
from tests.spark.conftest import Lake

pytestmark = [pytest.mark.spark, pytest.mark.slow]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(lake: Lake, archive: str, *args: str) -> subprocess.CompletedProcess:
    """The job's command line in a process (a JVM) of its own, started with `archive`."""
    env = dict(os.environ, OLAKE_COW_CLASS_ARCHIVE=archive,
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "emr_job"), ROOT]))
    code = "import sys; from olake_cow.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", code, "--destination-details", lake.dest_path,
                           "--source-namespace", lake.ns, "--quiet", *args], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def _commit(lake: Lake, key: int) -> None:
    lake.writer.commit("t", [{"_olake_id": str(key), "_op_type": "u", "v": 100 + key},
                             {"_olake_id": str(key + 1), "_op_type": "d"}], pure_deletes=[str(key + 2)])


def test_a_run_with_a_trained_or_a_foreign_class_archive_mirrors_the_same(spark, destinations, tmp_root, tmp_path):
    from infra.image.class_archive import train

    archive, foreign = str(tmp_path / "driver.jsa"), str(tmp_path / "foreign.jsa")
    train(archive, light=True)  # the image's workload takes a minute more and proves nothing more here
    assert os.path.getsize(archive) > 10 * 2**20
    with open(foreign, "wb") as f:
        f.write(b"not a class archive\n" * 1000)
    lake = Lake(spark, destinations["hadoop"], tmp_root, "hadoop")
    lake.writer.create_table("t", [("v", "int")])
    lake.writer.backfill("t", [{"_olake_id": str(i), "v": i} for i in range(50)])
    done = _run(lake, archive)
    assert "shared archive" not in (done.stdout + done.stderr).lower()  # the JVM took it
    lake.assert_mirror_matches("t", engines=["pyiceberg"])
    # A driver whose class path is not the training run's (as on a JVM the archive was not made for)
    _commit(lake, 3)
    done = _run(lake, archive, "--spark-conf", "spark.driver.extraClassPath=/nonexistent/other.jar")
    assert "unable to use shared archive" in (done.stdout + done.stderr).lower()  # said, then ran without it
    lake.assert_mirror_matches("t", engines=["pyiceberg"])
    _commit(lake, 10)
    _run(lake, foreign)  # not an archive at all
    lake.assert_mirror_matches("t", engines=["pyiceberg"])
    # Executors of their own (a local cluster, as EMR runs them) map the driver's archive too
    _commit(lake, 20)
    stderr = _executor_stderr(lambda: _run(lake, archive, "--spark-master", "local-cluster[1,1,1024]"))
    assert f"-XX:SharedArchiveFile={archive}" in stderr  # the executor's command line
    assert "unable to use shared archive" not in stderr.lower()
    lake.assert_mirror_matches("t", engines=["pyiceberg"])


def _executor_stderr(run) -> str:
    """What the executors of a local cluster started by `run()` wrote to stderr (their command line
    first); their folders under Spark's home are removed after."""
    from bench.cold import spark_work

    work = spark_work()
    before = set(os.listdir(work)) if os.path.isdir(work) else set()
    run()
    text = ""
    for app in sorted(set(os.listdir(work)) - before):
        for folder, _, files in os.walk(os.path.join(work, app)):
            if "stderr" in files:
                with open(os.path.join(folder, "stderr"), encoding="utf-8", errors="replace") as f:
                    text += f.read()
        shutil.rmtree(os.path.join(work, app), ignore_errors=True)
    assert text, "no executor ran"
    return text
