"""One typed path from a trigger request to the job's command line: every field of a JobRequest
comes back out of the job's own argument parser, and the trigger builds its StartJobRun arguments
through it (deployment settings where a request says nothing)."""
from dataclasses import replace

import pytest

from olake_cow.cli import build_parser, job_options
from olake_cow.core.config import parse_destination
from olake_cow.core.job_request import JobRequest, job_argv
from olake_cow.core.maintenance import MaintenanceOptions
from olake_cow.core.modes import Engine, MirrorFormat, SourceMode
from olake_trigger import jobs
from olake_trigger.decide import AllTables, Tables
from olake_trigger.settings import from_env
from testkit.trigger_env import ENV

pytestmark = pytest.mark.unit


WAREHOUSE = "s3://lake/warehouse"
CFG = parse_destination({"catalog_type": "glue", "iceberg_s3_path": WAREHOUSE})


def parsed(argv):
    """The request the job reads from `argv`: through its own parser and cli.job_options, the
    resolution resolve_options runs before Spark starts (a swapped argument there shows here)."""
    a = build_parser().parse_args(argv)
    job, tables = job_options(a, CFG)
    return JobRequest(a.secret_id, job.source_namespace, job.cow_namespace, a.summary_out, job.delete_mode,
                      job.parallelism, job.cow_base_location, tuple(tables) if tables else None, a.region,
                      job.source_mode, job.mirror_format, job.verify, job.maintenance, Engine(a.engine))


def resolved(req):
    """What the job makes of `req`: without a base location, new mirrors go under the warehouse;
    without an engine, the job's default (auto)."""
    return replace(req, cow_base_location=req.cow_base_location or f"{WAREHOUSE}/{req.cow_namespace}",
                   engine=req.engine or Engine.AUTO)


BASE = JobRequest("olake/destination", "sales", "sales_cow", "s3://art/summaries/sales/t.json")
EVERYTHING = JobRequest(
    "arn:aws:secretsmanager:eu-west-1:1:secret:olake", "sales", "mirrors", "s3://art/s/x.json", "hard", 16,
    "s3://lake/mirrors-base", ("a", "b", "c"), "eu-west-1", SourceMode.TRUNCATE, MirrorFormat.DV, True,
    MaintenanceOptions(expire_source_hours=123456.25, expire_mirror_hours=0.001, rewrite_manifests=True,
                       compact_files=True, remove_orphans_hours=72, orphans_dry_run=True, only=True,
                       fold_deletes=True, fold_ratio=0.3), Engine.SPARK)


@pytest.mark.parametrize("req", [
    BASE,
    EVERYTHING,
    replace(BASE, source_mode=SourceMode.READONLY, mirror_format=MirrorFormat.COW),
    replace(BASE, tables=("orders",), maintenance=MaintenanceOptions(expire_mirror_hours=168)),
    replace(BASE, maintenance=MaintenanceOptions(compact_files=True, fold_deletes=True)),
], ids=["defaults", "every-field", "modes", "one-table", "maintenance"])
def test_every_field_survives_the_jobs_own_parser(req):
    assert parsed(job_argv(req)) == resolved(req)


def test_tables_reach_the_job_sorted_and_numbers_exactly():
    argv = job_argv(replace(BASE, tables=("b", "a"), maintenance=MaintenanceOptions(expire_source_hours=1234567)))
    assert argv[argv.index("--tables") + 1] == "a,b"
    assert float(argv[argv.index("--expire-source-older-than") + 1]) == 1234567  # ":g" alone gave 1.23457e+06


def test_the_trigger_fills_in_the_deployments_settings_and_the_request_wins():
    settings = from_env({**ENV, "SOURCE_MODE": "readonly", "MIRROR_FORMAT": "cow", "COW_BASE_LOCATION": "s3://m/b/"})
    cfg = parse_destination({"catalog_type": "glue", "iceberg_s3_path": "s3://bkt"})
    asked = jobs.RunOptions("direct", mirror_format=MirrorFormat.DV, verify=True,
                            maintenance=MaintenanceOptions(rewrite_manifests=True))
    request = jobs.start_job_run_request(settings, cfg, "sales", Tables(("b", "a")), "w", asked, maintenance=True)
    got = parsed(request["jobDriver"]["sparkSubmit"]["entryPointArguments"])
    assert got == JobRequest(settings.secret_id, "sales", "sales_cow", got.summary_out, settings.delete_mode,
                             settings.parallelism, "s3://m/b/sales_cow", ("a", "b"), settings.region or None,
                             SourceMode.READONLY, MirrorFormat.DV, True, MaintenanceOptions(rewrite_manifests=True),
                             Engine.SPARK)  # EMR runs Spark: the express lane takes the python engine's
    # maintenance the decision does not run stays off the command line
    idle = jobs.start_job_run_request(settings, cfg, "sales", AllTables(), "w", asked, maintenance=False)
    assert parsed(idle["jobDriver"]["sparkSubmit"]["entryPointArguments"]).maintenance == MaintenanceOptions()
