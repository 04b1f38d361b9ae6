"""The data-safety promise, end to end: the stack at the template's defaults (the trigger's
environment and the periodic schedule's input, read from template.yaml) starts a run through the
trigger (moto), and the job run locally with exactly the arguments the trigger gave EMR Serverless
writes nothing of OLake's table. The same chain with SourceExpiryHours set does write it: the check
can tell."""
import json
import os
import time
from types import SimpleNamespace

import pytest

from testkit.template import default_trigger_env, load_template, periodic_input

pytestmark = [pytest.mark.spark]


def metadata(location):
    with open(location.replace("file://", "").replace("file:", ""), encoding="utf-8") as f:
        return json.load(f)


def job_arguments(aws, lake, env_changes):
    """The entryPointArguments the trigger sends for one periodic run at the template's defaults,
    deciding from the local lake's own metadata (registered in moto's Glue as sales.orders)."""
    template = load_template()
    aws.apply_env(**{**default_trigger_env(template), "SOURCE_NAMESPACES": "sales", **env_changes})
    aws.glue_table("sales", "orders", metadata(lake.source("t").metadata_location))
    mirror = metadata(lake.mirror("t").metadata_location)
    mirror["properties"]["olake-cow.source-table"] = "sales.orders"  # the name it has in moto's Glue
    aws.glue_table("sales_cow", "orders_cow", mirror)
    aws.now = time.time() + 30 * 86400  # a month on: mirror maintenance (and source expiry, if asked) is due
    out = aws.invoke(periodic_input(template, ["sales"]))
    assert out["status"] == "started", out
    run = max(aws.job_runs(), key=lambda r: r["createdAt"])
    return list(run["jobDriver"]["sparkSubmit"]["entryPointArguments"])


def local_arguments(args, lake, summary):
    """The same run against a local lake: the config from a file instead of Secrets Manager, the
    local namespace and table, the summary on local disk; every other argument as the trigger gave it."""
    out, i = [], 0
    swap = {"--source-namespace": lake.ns, "--cow-namespace": lake.cow_ns, "--tables": "t", "--summary-out": summary}
    while i < len(args):
        flag = args[i]
        if flag == "--secret-id":
            out += ["--destination-details", lake.dest_path]
            i += 2
        elif flag == "--region":
            i += 2
        elif flag in swap:
            out += [flag, swap[flag]]
            i += 2
        else:
            out.append(flag)
            i += 1
    return out


def source_files(lake):
    root = lake.dest["writer"]["iceberg_s3_path"].replace("file://", "")
    folder = os.path.join(root, lake.ns, "t")
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs)


@pytest.fixture
def mirrored(spark, destinations, make_lake):
    lake = make_lake(destinations["hadoop"], "hadoop")
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", [{"_olake_id": str(i), "v": i} for i in range(30)], chunk=10)
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "9", "_op_type": "u", "v": 900}])
    assert lake.run() == 0  # the mirror has an older snapshot to expire
    for n in range(3):
        lake.writer.commit("t", [{"_olake_id": str(n), "_op_type": "u", "v": 100 + n}], pure_deletes=[str(20 + n)])
    return lake


def test_the_template_defaults_through_the_trigger_never_write_olakes_table(aws, mirrored, tmp_path):
    lake = mirrored
    args = job_arguments(aws, lake, {})
    assert "--expire-mirror-older-than" in args and "--expire-source-older-than" not in args, args
    local = local_arguments(args, lake, str(tmp_path / "summary.json"))
    before = (lake.source("t").metadata_location, source_files(lake))
    assert lake.run_raw(*local) == 0, local
    assert (lake.source("t").metadata_location, source_files(lake)) == before  # not one commit, not one file
    lake.assert_mirror_matches("t", engines=("pyiceberg",))


def test_source_expiry_asked_for_by_the_stack_does_write_it(aws, mirrored, tmp_path, monkeypatch):
    from olake_cow.spark import maintenance

    lake = mirrored
    args = job_arguments(aws, lake, {"SOURCE_EXPIRY_HOURS": "0.001"})
    assert "--expire-source-older-than" in args, args
    before = lake.source("t").metadata_location
    # the job's clock an hour on: every source snapshot is older than the 3.6 s retention, no wait
    monkeypatch.setattr(maintenance, "time", SimpleNamespace(time=lambda: time.time() + 3600))
    assert lake.run_raw(*local_arguments(args, lake, str(tmp_path / "summary.json"))) == 0
    assert lake.source("t").metadata_location != before
