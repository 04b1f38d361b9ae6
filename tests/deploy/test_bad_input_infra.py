"""Every bad input of the deploy scripts, through `make` in a clean copy against a moto server: exit
2, one error line that names the problem, no traceback, and nothing written or deleted anywhere
(every object, secret, stack and Glue database as before). The cases are the deploy-scripts table of
docs/BAD-INPUT.md."""
import json
import os

import pytest
from tests.deploy.deploy_env import DEPLOY_VENV, REGION

from testkit.docs import bad_input_cases
from testkit.moto_stack import MotoStacks

pytestmark = [pytest.mark.deploy, pytest.mark.slow,
              pytest.mark.skipif(not os.path.exists(os.path.join(DEPLOY_VENV, ".installed")),
                                 reason="needs .venv-deploy (make deploy-tools)")]


def glue_writer(**keys):
    return {"type": "ICEBERG", "writer": {"catalog_type": "glue", "iceberg_s3_path": "s3://lake/warehouse",
                                          "aws_region": REGION, **keys}}


SECRETS = {
    "good": glue_writer(),
    "root": glue_writer(iceberg_s3_path="s3://lake"),
    "file": glue_writer(iceberg_s3_path="file:///tmp/warehouse"),
    "rest": {"type": "ICEBERG", "writer": {"catalog_type": "rest", "rest_catalog_url": "https://rest.example.com",
                                           "iceberg_s3_path": "s3://lake/warehouse"}},
    "jdbc": {"type": "ICEBERG", "writer": {"catalog_type": "jdbc", "jdbc_url": "jdbc:postgresql://db:5432/x",
                                           "iceberg_s3_path": "s3://lake/warehouse"}},
    "hadoop": {"type": "ICEBERG", "writer": {"catalog_type": "hadoop", "iceberg_s3_path": "s3://lake/warehouse"}},
    "elsewhere": glue_writer(aws_region="us-east-2"),
}
DEPLOY = {"WAREHOUSE_BUCKET": "lake", "WAREHOUSE_PREFIX": "warehouse", "NAMESPACES": "sales",
          "SECRET_ARN": "{good}", "DEPLOY_DRY_RUN": "1", "STACK": "stack-new"}
SKIP = "--skip-stack --warehouse s3://lake/warehouse --yes"


def deploy(**changes):
    return ["deploy"], {**DEPLOY, **changes}


def destroy(args, stack="stack-new"):
    return ["destroy", f"STACK={stack}", f"DESTROY_ARGS={args}"], {}


# case -> (make arguments, environment, message excerpt)
CASES = {
    "stack-name-underscore": (*deploy(STACK="olake_cow"), "STACK 'olake_cow' is not a CloudFormation stack name"),
    "stack-name-digit-first": (*deploy(STACK="1cow"), "STACK '1cow' is not a CloudFormation stack name"),
    "stack-name-too-long": (*deploy(STACK="s" * 56), "is 56 characters; at most 55"),
    "artifacts-prefix-dot-segment": (*deploy(ARTIFACTS_PREFIX="olake-cow/../x"),
                                     "ARTIFACTS_PREFIX 'olake-cow/../x' must be"),
    "extra-cron-five-fields": (*deploy(EXTRA_PARAMS="ScheduleExpression=cron(0 * * * *)"),
                               "cron() with six fields"),
    "extra-alarm-email": (*deploy(EXTRA_PARAMS="AlarmEmail=me"), "an e-mail address"),
    "extra-jars-local-path": (*deploy(EXTRA_PARAMS="JobExtraJars=/usr/share/java/postgresql.jar"),
                              "EMR Serverless reads jars from S3, not a local path"),
    "artifacts-are-the-warehouse": (*deploy(ARTIFACTS_PREFIX="warehouse"),
                                    "the artifacts location s3://lake/warehouse overlaps the warehouse"),
    "artifacts-inside-the-warehouse": (*deploy(ARTIFACTS_PREFIX="warehouse/olake-cow"), "overlaps the warehouse"),
    "artifacts-inside-a-table": (*deploy(ARTIFACTS_PREFIX="warehouse/sales/orders/olake-cow"), "overlaps"),
    "artifacts-in-a-root-warehouse": (*deploy(SECRET_ARN="{root}", WAREHOUSE_PREFIX=""),
                                      "overlaps the warehouse s3://lake: the stack writes and removes there"),
    "artifacts-of-another-stack": (*deploy(ARTIFACTS_PREFIX="olake-cow/stack-a"),
                                   "is the artifacts location of stack 'stack-a'"),
    "artifacts-holding-others-objects": (*deploy(ARTIFACTS_PREFIX="shared"),
                                         "s3://lake/shared/ already holds 1 object(s) no olake-cow stack claimed"),
    "artifacts-prefix-with-space": (*deploy(ARTIFACTS_PREFIX="my code"), "ARTIFACTS_PREFIX 'my code' must be"),
    "artifacts-prefix-slashes": (*deploy(ARTIFACTS_PREFIX="/olake-cow/"), "ARTIFACTS_PREFIX '/olake-cow/' must be"),
    "artifacts-bucket-missing": (*deploy(ARTIFACTS_BUCKET="no-such-bucket"),
                                 "ARTIFACTS_BUCKET no-such-bucket does not exist in this account"),
    "artifacts-bucket-a-uri": (*deploy(ARTIFACTS_BUCKET="s3://lake"), "ARTIFACTS_BUCKET must be a bucket name"),
    "warehouse-bucket-missing": (*deploy(WAREHOUSE_BUCKET="no-lake", ARTIFACTS_BUCKET="lake"), "iceberg_s3_path is"),
    "warehouse-bucket-uppercase": (*deploy(WAREHOUSE_BUCKET="Lake"), "WAREHOUSE_BUCKET 'Lake' is not an S3 bucket"),
    "warehouse-prefix-slash": (*deploy(WAREHOUSE_PREFIX="/warehouse"), "must not start or end with '/'"),
    "secret-warehouse-not-s3": (*deploy(SECRET_ARN="{file}"), "warehouse 'file:///tmp/warehouse' is not in S3"),
    "secret-rest-without-network": (*deploy(SECRET_ARN="{rest}"), "the job must reach its REST endpoint from a VPC"),
    "secret-jdbc-without-driver": (*deploy(SECRET_ARN="{jdbc}", EXTRA_PARAMS="SubnetIds=subnet-1"),
                                   "EMR ships no JDBC driver"),
    "secret-hadoop-catalog": (*deploy(SECRET_ARN="{hadoop}"), "the hadoop catalog is for local runs"),
    "secret-glue-in-another-region": (*deploy(SECRET_ARN="{elsewhere}"),
                                      "Glue catalog is in us-east-2 but the stack deploys to eu-west-1"),
    "secret-arn-not-an-arn": (*deploy(SECRET_ARN="olake/destination"), "is not a Secrets Manager secret ARN"),
    "secret-missing": (*deploy(SECRET_ARN="{missing}"), "does not exist in eu-west-1"),
    "namespace-a-mirror": (*deploy(NAMESPACES="sales_cow"), "as mirror namespaces do"),
    "namespaces-empty": (*deploy(NAMESPACES=" , "), "NAMESPACES is empty"),
    "namespace-twice": (*deploy(NAMESPACES="sales,sales"), "NAMESPACES names 'sales' more than once"),
    "namespace-uppercase": (*deploy(NAMESPACES="Sales"), "namespace name 'Sales' cannot be used with a glue"),
    "extra-unknown-parameter": (*deploy(EXTRA_PARAMS="Foo=1"), "'Foo' is not a stack parameter of template.yaml"),
    "extra-not-a-number": (*deploy(EXTRA_PARAMS="SourceExpiryHours=abc"), "SourceExpiryHours='abc': must be a number"),
    "extra-not-allowed": (*deploy(EXTRA_PARAMS="MirrorFormat=mor"), "MirrorFormat='mor': must be one of"),
    "extra-below-minimum": (*deploy(EXTRA_PARAMS="JobTimeoutMinutes=1"), "must be at least 5"),
    "extra-pattern": (*deploy(EXTRA_PARAMS="EmrReleaseLabel=emr-6.15.0"), "does not match the parameter's pattern"),
    "extra-release-untested": (*deploy(EXTRA_PARAMS="EmrReleaseLabel=emr-7.0.0"),
                               "does not match the parameter's pattern"),
    "extra-own-setting": (*deploy(EXTRA_PARAMS="ArtifactsPrefix=x"), "make deploy sets ArtifactsPrefix"),
    "extra-image-on-spark4": (*deploy(EXTRA_PARAMS="EmrReleaseLabel=emr-spark-8.1.0 ImageUri=r.example/olake:1"),
                              "ImageUri (the job image of infra/image) is built for emr-7.x releases"),
    "extra-twice": (*deploy(EXTRA_PARAMS="MirrorFormat=dv MirrorFormat=cow"), "EXTRA_PARAMS names MirrorFormat twice"),
    "extra-maintenance-orphans": (*deploy(EXTRA_PARAMS='ScheduleMaintenance={"remove_orphans_hours": 0}'),
                                  "'maintenance.remove_orphans_hours' must be at least 24 hours"),
    "extra-maintenance-source-expiry": (*deploy(EXTRA_PARAMS='ScheduleMaintenance={"expire_source_hours": 24}'),
                                        "source expiry writes OLake's tables"),
    "extra-maintenance-not-json": (*deploy(EXTRA_PARAMS="ScheduleMaintenance={compact}"), "not a JSON object"),
    "destroy-stack-name": (*destroy("", stack="olake_cow"), "STACK 'olake_cow' is not a CloudFormation stack name"),
    "destroy-stack-missing": (*destroy("", stack="nope"), "stack 'nope' does not exist in eu-west-1"),
    "destroy-without-yes": (*destroy("--remove-artifacts"), "deletes data: add --yes"),
    "destroy-artifacts-not-a-uri": (*destroy(f"{SKIP} --remove-artifacts --artifacts my-olake-bucket/x"),
                                    "--artifacts must be s3://bucket/prefix, not 'my-olake-bucket/x'"),
    "destroy-artifacts-the-warehouse": (*destroy(f"{SKIP} --remove-artifacts --artifacts s3://lake/warehouse"),
                                        "overlaps the warehouse"),
    "destroy-artifacts-a-table": (*destroy(f"{SKIP} --remove-artifacts --artifacts s3://lake/warehouse/sales"),
                                  "overlaps the warehouse"),
    "destroy-artifacts-unmarked": (*destroy(f"{SKIP} --remove-artifacts --artifacts s3://lake/shared"),
                                   "s3://lake/shared has no olake-cow marker"),
    "destroy-artifacts-of-another-stack": (*destroy(f"{SKIP} --remove-artifacts --artifacts s3://lake/olake-cow/stack-a"),
                                           "belongs to stack 'stack-a', not 'stack-new'"),
    "destroy-artifacts-holding-metadata": (*destroy(f"{SKIP} --remove-artifacts --artifacts s3://lake/olake-cow/odd",
                                                    stack="stack-odd"), "holds Iceberg table metadata"),
    "destroy-warehouse-unknown": (*destroy("--skip-stack --remove-artifacts --artifacts s3://lake/x --yes"),
                                  "the warehouse is unknown"),
    "destroy-secret-unknown": (*destroy("--skip-stack --remove-secret --yes"), "the secret is unknown; pass --secret"),
    "destroy-namespaces-unknown": (*destroy(f"{SKIP} --remove-mirrors"), "the namespaces are unknown"),
    "destroy-truncate-mirrors-alone": (*destroy(f"{SKIP} --remove-truncate-mirrors"),
                                       "--remove-truncate-mirrors drops mirrors: add --remove-mirrors"),
    "secret-file-missing": (["secret", "FILE=missing.json"], {}, "missing.json"),
    "secret-config-nested-deeply": (["secret", "FILE=deep.json"], {}, "nested too deeply"),
    "secret-config-key-twice": (["secret", "FILE=twice.json"], {}, "has the key 'writer' twice"),
    "bucket-events-a-uri": (["bucket-events", "BUCKET=s3://lake/warehouse"], {}, "must be a bucket name, not a URI"),
    "bucket-events-missing-bucket": (["bucket-events", "BUCKET=no-such-bucket"], {}, "no-such-bucket does not exist"),
    "run-now-without-namespace": (["run-now"], {}, "make run-now: error: set NAMESPACE"),
    "run-now-stack-name": (["run-now", "NAMESPACE=sales", "STACK=olake_cow"], {}, "is not a CloudFormation stack"),
}


def doc_cases():
    return bad_input_cases("bad-deploy")


def test_the_bad_input_doc_and_this_test_list_the_same_deploy_cases():
    listed = doc_cases()
    assert sorted(listed) == sorted(CASES)
    for case, (_, _, message) in CASES.items():
        assert message.replace("|", "\\|") in listed[case], case


@pytest.fixture(scope="module")
def seeded(clone, moto_url):
    moto = MotoStacks(moto_url, REGION, root=str(clone), deploy_venv=DEPLOY_VENV)
    moto.seed_lake("lake", "warehouse", {"sales": ["orders"]})
    sm = moto.client("secretsmanager")
    arns = {name: sm.create_secret(Name=f"bad-input/{name}", SecretString=json.dumps(body))["ARN"]
            for name, body in SECRETS.items()}
    arns["missing"] = arns["good"].replace("bad-input/good", "bad-input/none")
    s3 = moto.client("s3")
    s3.put_object(Bucket="lake", Key="shared/readme.txt", Body=b"someone else's")
    # a stack that claimed olake-cow/stack-a, and a marked prefix that holds a table's metadata
    settings = {k: v for k, v in DEPLOY.items() if k not in ("STACK", "DEPLOY_DRY_RUN")}
    assert moto.deploy("stack-a", **{**settings, "SECRET_ARN": arns["good"]})[0] == 0
    s3.put_object(Bucket="lake", Key="olake-cow/odd/.olake-cow-stack.json", Body=b'{"stack": "stack-odd"}')
    s3.put_object(Bucket="lake", Key="olake-cow/odd/t/metadata/00001-x.metadata.json", Body=b"{}")
    (clone / "deep.json").write_text('{"writer": ' * 5000 + "{}" + "}" * 5000)
    (clone / "twice.json").write_text('{"writer": {}, "writer": {}}')
    return moto, arns


def _state(moto):
    s3 = moto.client("s3")
    objects = {b["Name"]: moto.objects(b["Name"]) for b in s3.list_buckets()["Buckets"]}
    listed = moto.client("secretsmanager").list_secrets()["SecretList"]
    secrets = sorted((s["Name"], "DeletedDate" in s) for s in listed)
    stacks = sorted((s["StackName"], s["StackStatus"])
                    for s in moto.client("cloudformation").list_stacks()["StackSummaries"])
    databases = sorted(d["Name"] for d in moto.client("glue").get_databases()["DatabaseList"])
    return objects, secrets, stacks, databases


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_deploy_input_exits_2_in_one_line_and_changes_nothing(case, seeded):
    moto, arns = seeded
    args, env, message = CASES[case]
    env = {k: v.format(**arns) if k == "SECRET_ARN" else v for k, v in env.items()}
    before = _state(moto)
    code, out = moto.make(*args, **env)
    assert code == 2, out
    errors = [line for line in out.splitlines() if "error" in line.lower() and not line.startswith("make: ***")]
    assert len(errors) == 1 and message in errors[0], out
    assert "Traceback" not in out and "packaging the job" not in out, out
    assert _state(moto) == before  # nothing uploaded, claimed, deleted or created
