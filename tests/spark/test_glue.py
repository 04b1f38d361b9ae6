"""AWS Glue + S3, the catalog most OLake users deploy, on a moto server: Iceberg's own GlueCatalog and
S3FileIO (the AWS SDK v2 of iceberg-aws-bundle, tools/jars.py), no Hadoop S3 file system at all, so any
read that bypassed Iceberg's FileIO would fail here ("No FileSystem for scheme s3"). The mirrors are
read back from S3 by Spark, pyiceberg, DuckDB (httpfs) and iceberg-rust."""
import pytest
from tests.spark.catalog_scenarios import build_update_delete_verify, recreated_source

from olake_cow.spark.session import local_aws_jars
from testkit.catalogs import glue_destination, glue_io, recorded_calls

pytestmark = [pytest.mark.spark, pytest.mark.skipif(not local_aws_jars(), reason="AWS SDK jars not installed "
                                                    "(make setup)")]
@pytest.fixture(params=["cow", "dv"])
def glue_lake(request, moto_s3_glue, make_lake):
    return make_lake(glue_destination(moto_s3_glue), "glue", "readonly", request.param, glue_io(moto_s3_glue))


def test_glue_and_s3_first_build_incremental_updates_and_deletes_and_verify(glue_lake):
    build_update_delete_verify(glue_lake)
    location = glue_lake.mirror("t").metadata_location
    assert location.startswith("s3://lake/warehouse/"), location


def test_glue_and_s3_recreated_source_rebuilds_the_mirror(glue_lake):
    recreated_source(glue_lake)


@pytest.mark.parametrize("mode", ["readonly", "truncate"])
def test_every_call_of_the_jobs_java_side_is_granted_by_the_job_role_on_its_resources(moto_s3_glue, make_lake,
                                                                                       moto_s3_glue_server, mode):
    """Iceberg's GlueCatalog and S3FileIO, as the job drives them (a first build, a merge, maintenance
    that expires and removes files), recorded by the moto server they call: every call is granted by
    the template's JobRole, as CloudFormation makes it for this lake's stack, on the ARNs AWS checks
    (a readonly stack writes only under <prefix>/*_cow/*_cow/ and commits only mirror tables). The
    job's Python side: tests/trigger/test_iam_calls.py. OLake's own writes are not recorded."""
    from testkit.iam import role_actions, ungranted
    from testkit.moto_stack import template_role_policies

    lake = make_lake(glue_destination(moto_s3_glue), "glue", mode, "cow", glue_io(moto_s3_glue))
    w = lake.writer
    w.create_table("t", [("v", "int"), ("s", "string")])
    w.backfill("t", [{"_olake_id": str(i), "v": i, "s": "a"} for i in range(40)], chunk=20)
    moto_s3_glue_server.start_recording()
    assert lake.run() == 0
    calls = recorded_calls(moto_s3_glue_server)
    w.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100}, {"_olake_id": "2", "_op_type": "d"}],
             pure_deletes=["3"])
    moto_s3_glue_server.start_recording()
    assert lake.run("--expire-mirror-older-than", "0", "--remove-orphans-older-than", "24") == 0
    calls += recorded_calls(moto_s3_glue_server)
    lake.assert_mirror_matches("t")
    actions = {c.action for c in calls}
    assert {"glue:GetTable", "glue:CreateTable", "glue:UpdateTable", "s3:GetObject", "s3:PutObject"} <= actions
    policies = template_role_policies("JobRole", {"WarehouseBucket": "lake", "WarehousePrefix": "warehouse",
                                                  "SourceNamespaces": lake.ns, "SourceMode": mode})
    assert ungranted(calls, policies) == []
    # ... and not by a readonly stack's role, when the job wrote OLake's table (truncate mode)
    readonly = template_role_policies("JobRole", {"WarehouseBucket": "lake", "WarehousePrefix": "warehouse",
                                                  "SourceNamespaces": lake.ns, "SourceMode": "readonly"})
    wrote_source = ungranted(calls, readonly)
    assert bool(wrote_source) is (mode == "truncate"), wrote_source
    assert all(f"/{lake.ns}/t" in c or f"/{lake.ns}.db/t/" in c for c in wrote_source), wrote_source
    assert sorted(actions - role_actions("JobRole")) == []
    assert sorted(role_actions("JobRole") - actions - set(JOB_ROLE_KEPT)) == []  # every other grant has its reason


# JobRole's grants that the Java side's build, merge and maintenance above do not call, and why.
JOB_ROLE_KEPT = {
    "glue:DeleteTable": "a mirror whose source was recreated incompatibly is replaced (recreated-source tests)",
    "lakeformation:GetDataAccess": "only with LakeFormation=true: Lake Formation vends the table's data access",
    "secretsmanager:GetSecretValue": "the job's Python side reads the destination (tests/trigger/test_iam_calls.py)",
    "logs:CreateLogStream": "EMR Serverless writes the run's logs to its log group, not the job's code",
    "logs:PutLogEvents": "the same",
    "logs:DescribeLogStreams": "the same",
    "logs:DescribeLogGroups": "the same",
}
