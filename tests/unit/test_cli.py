"""Every bad-input case the README lists, through the job's real command line: exit code 2 and a
message naming what is wrong, all found before Spark starts (no JVM in these tests)."""
import json
import os

import pytest

from olake_cow.cli import Exit, exit_code, main
from olake_cow.core.errors import ConfigError, OlakeCowError, TableNotFoundError
from testkit.docs import bad_input_cases

pytestmark = pytest.mark.unit
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HADOOP = {"type": "ICEBERG", "writer": {"catalog_type": "hadoop", "iceberg_s3_path": "/tmp/wh"}}
GLUE = {"type": "ICEBERG", "writer": {"catalog_type": "glue", "iceberg_s3_path": "s3://lake/wh"}}
GLUE_KEYS = {"catalog_type": "glue", "iceberg_s3_path": "s3://lake/wh", "aws_access_key": "AKIAEXAMPLE",
             "aws_secret_key": "not-a-real-secret"}


def writer(**keys):
    return {"type": "ICEBERG", "writer": keys}


def glue(**keys):
    return writer(**{**GLUE_KEYS, **keys})


# case (as named in docs/BAD-INPUT.md) -> (destination config: an object, text, bytes, "missing" for a file that
# is not there or None for --secret-id; extra arguments; the message the doc promises)
CASES = {
    "config-unreadable": ("missing", [], "cannot read --destination-details"),
    "config-not-json": ("{not json", [], "not valid JSON"),
    "config-empty-file": ("", [], "not valid JSON"),
    "config-not-object": ("[1, 2]", [], "must be a JSON object, got list"),
    "config-no-writer": ({"type": "ICEBERG"}, [], "no 'writer' object"),
    "config-type-not-iceberg": ({"type": "PARQUET", "writer": {}}, [], "destination type must be ICEBERG"),
    "config-key-twice": ('{"type": "ICEBERG", "writer": {"catalog_type": "hadoop", "iceberg_s3_path": "/tmp/wh"}, '
                         '"writer": {"catalog_type": "glue", "iceberg_s3_path": "s3://lake/wh"}}', [],
                         "has the key 'writer' twice in one object"),
    "config-nested-deeply": ('{"writer": ' * 50000 + "{}" + "}" * 50000, [], "nested too deeply"),
    "catalog-type-unknown": (writer(catalog_type="oracle", iceberg_s3_path="/w"), [],
                             "catalog_type 'oracle' is not supported"),
    "catalog-type-nessie": (writer(catalog_type="nessie", rest_catalog_url="http://h:19120/iceberg/main",
                                   iceberg_s3_path="wh"), [], "catalog olake_iceberg is Nessie (writer.catalog_type)"),
    "required-key-missing": (writer(catalog_type="jdbc", iceberg_s3_path="/w"), [], "writer.jdbc_url is required"),
    "warehouse-missing": (writer(catalog_type="glue"), [], "writer.iceberg_s3_path is required"),
    "key-wrong-type": (writer(catalog_type="glue", iceberg_s3_path=["s3://b"]), [],
                       "writer.iceberg_s3_path must be a string"),
    "flag-not-boolean": (glue(s3_path_style="maybe"), [], "writer.s3_path_style must be true or false"),
    "catalog-name-bad": (glue(catalog_name="my.catalog"), [], "writer.catalog_name 'my.catalog' must be letters"),
    "jdbc-url-not-jdbc": (writer(catalog_type="jdbc", jdbc_url="postgres://h/db", iceberg_s3_path="/w"), [],
                          "writer.jdbc_url must start with 'jdbc:'"),
    "jdbc-driver-unknown": (writer(catalog_type="jdbc", jdbc_url="jdbc:mysql://h/db", iceberg_s3_path="s3://w"), [],
                            "no JDBC driver known for 'mysql' URLs; set writer.jdbc_driver_jar"),
    "warehouse-with-space": (glue(iceberg_s3_path="s3://lake/my warehouse"), [], "contains a space"),
    "warehouse-gcs": (glue(iceberg_s3_path="gs://lake/wh"), [], "gs:// is not supported"),
    "warehouse-azure": (glue(iceberg_s3_path="abfs://c@acct.dfs.core.windows.net/wh"), [],
                        "abfs:// is not supported"),
    "warehouse-unknown-scheme": (glue(iceberg_s3_path="ftp://host/wh"), [], "unknown scheme ftp://"),
    "warehouse-no-bucket": (glue(iceberg_s3_path="s3:///wh"), [], "does not start with an S3 bucket name"),
    "warehouse-bucket-invalid": (glue(iceberg_s3_path="s3://Not_A_Bucket/wh"), [],
                                 "does not start with an S3 bucket name"),
    "rest-url-not-url": (writer(catalog_type="rest", rest_catalog_url="localhost:8181", iceberg_s3_path="wh"), [],
                         "writer.rest_catalog_url 'localhost:8181' is not a URL"),
    "s3-endpoint-not-url": (glue(s3_endpoint="minio:9000"), [], "writer.s3_endpoint 'minio:9000' is not a URL"),
    "glue-endpoint-not-url": (glue(glue_endpoint="glue.local"), [], "writer.glue_endpoint 'glue.local' is not a URL"),
    "region-garbage": (glue(aws_region="earth-1"), [], "writer.aws_region 'earth-1' is not an AWS region name"),
    "glue-region-garbage": (glue(glue_region="US East"), [], "writer.glue_region 'US East' is not an AWS region"),
    "hive-uri-not-thrift": (writer(catalog_type="hive", hive_uri="http://h:9083", iceberg_s3_path="/w"), [],
                            "writer.hive_uri 'http://h:9083' must be thrift://host:port"),
    "hive-clients-not-int": (writer(catalog_type="hive", hive_uri="thrift://h:9083", iceberg_s3_path="/w",
                                    hive_clients="x"), [], "writer.hive_clients must be an integer"),
    "access-key-without-secret": (writer(catalog_type="glue", iceberg_s3_path="s3://lake/wh", aws_access_key="AKIA"),
                                  [], "writer.aws_access_key is set but writer.aws_secret_key is not"),
    "glue-without-credentials": (GLUE, [], "no AWS credentials for the Glue catalog"),
    "s3-warehouse-without-credentials": (writer(catalog_type="rest", rest_catalog_url="http://127.0.0.1:1",
                                                iceberg_s3_path="s3://lake/wh"), [],
                                         "no AWS credentials for the S3 warehouse s3://lake/wh"),
    "warehouse-s3-on-hadoop": (writer(catalog_type="hadoop", iceberg_s3_path="s3a://lake/wh"), [],
                               "the hadoop catalog is for local runs"),
    "warehouse-dotdot-on-hadoop": (writer(catalog_type="hadoop", iceberg_s3_path="/tmp/wh/../elsewhere"), [],
                                   "holds a '..' segment"),
    "summary-out-is-the-config": (HADOOP, ["--summary-out", "destination.json"],
                                  "is the --destination-details file: the summary would overwrite the config"),
    "hive-unreachable": (writer(catalog_type="hive", hive_uri="thrift://127.0.0.1:1", iceberg_s3_path="/tmp/wh"), [],
                         "cannot reach the Hive metastore thrift://127.0.0.1:1"),
    "jdbc-unreachable": (writer(catalog_type="jdbc", jdbc_url="jdbc:postgresql://127.0.0.1:1/db",
                                iceberg_s3_path="/tmp/wh"), [], "cannot reach the JDBC catalog's database 127.0.0.1"),
    "rest-unreachable": (writer(catalog_type="rest", rest_catalog_url="http://127.0.0.1:1", iceberg_s3_path="wh"), [],
                         "cannot reach the REST catalog http://127.0.0.1:1"),
    "rest-url-ends-in-v1": (writer(catalog_type="rest", rest_catalog_url="http://127.0.0.1:1/v1/",
                                   iceberg_s3_path="wh"), [], "ends with /v1, which Iceberg's client adds itself"),
    "summary-out-in-the-warehouse": (writer(catalog_type="hadoop", iceberg_s3_path="/tmp/wh"),
                                     ["--summary-out", "/tmp/wh/sales/t/metadata/v9.metadata.json"],
                                     "where tables keep their files: write the summary outside"),
    "warehouse-file-uri-with-host": (writer(catalog_type="hadoop", iceberg_s3_path="file://tmp/wh"), [],
                                     "names the host 'tmp' (file:// is followed by a host)"),
    "rest-auth-type-unknown": (writer(catalog_type="rest", rest_catalog_url="http://127.0.0.1:1", iceberg_s3_path="wh",
                                      rest_auth_type="aws-sigv4"), [],
                               "writer.rest_auth_type 'aws-sigv4' is not one olake-cow knows"),
    "bare-writer-with-type": ({"type": "ICEBERG", "catalog_type": "hadoop", "iceberg_s3_path": "/tmp/wh"}, [],
                              "holds 'type' beside the writer's keys but no 'writer' object"),
    "spark-extensions-emptied": (HADOOP, ["--spark-conf", "spark.sql.extensions="],
                                 "leaves out org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"),
    "summary-out-path-too-long": (HADOOP, ["--summary-out", "/tmp/" + "b/" * 3000 + "x.json"],
                                  "the path is longer than the file system allows"),
    "namespace-missing-on-hadoop": (HADOOP, [], "namespace 'sales' does not exist in catalog 'olake_iceberg'"),
    "destination-details-empty": ("none", ["--destination-details", ""], "--destination-details is empty"),
    "secret-id-empty": (None, ["--secret-id", " "], "--secret-id is empty"),
    "secret-without-region": (None, ["--secret-id", "olake/destination"], "no AWS region; pass --region"),
    "source-and-secret-both": (HADOOP, ["--secret-id", "olake/destination"],
                               "argument --secret-id: not allowed with argument --destination-details"),
    "source-namespace-missing": ("none", ["--destination-details", "x.json", "--source-namespace"],
                                 "argument --source-namespace: expected one argument"),
    "source-namespace-dots": (HADOOP, ["--source-namespace", ".."], "source namespace name '..' cannot be used"),
    "source-namespace-spaces": (HADOOP, ["--source-namespace", "sales "], "source namespace name 'sales ' cannot"),
    "source-namespace-is-a-mirror": (HADOOP, ["--source-namespace", "sales_cow"], "as mirror namespaces do"),
    "source-namespace-nested-in-rest": (writer(catalog_type="rest", rest_catalog_url="http://127.0.0.1:1",
                                               iceberg_s3_path="wh"), ["--source-namespace", "db.public"],
                                        "source namespace name 'db.public' is nested ('.' separates levels in a "
                                        "REST catalog)"),
    "cow-namespace-empty": (HADOOP, ["--cow-namespace", ""], "--cow-namespace is empty"),
    "table-name-bad": (HADOOP, ["--tables", "a/b"], "table name 'a/b' contains '/'"),
    "table-name-invisible": (HADOOP, ["--tables", "t\u200b,a\x00b"], "contains '\\u200b'"),
    "table-name-dots": (HADOOP, ["--tables", "orders,."], "table name '.' cannot be used"),
    "table-uppercase-in-glue": (glue(), ["--tables", "Orders"], "table name 'Orders' cannot be used with a glue"),
    "table-mirror-name-too-long": (glue(), ["--tables", "t" * 254], "longer than the 255 characters Glue allows"),
    "tables-empty": (HADOOP, ["--tables", " , "], "--tables is empty"),
    "tables-empty-string": (HADOOP, ["--tables", ""], "--tables is empty"),
    "namespace-too-long": (HADOOP, ["--cow-namespace", "x" * 300], "longer than 255 characters"),
    "namespace-too-long-for-hive": (writer(catalog_type="hive", hive_uri="thrift://127.0.0.1:1",
                                           iceberg_s3_path="/tmp/wh"), ["--source-namespace", "s" * 130],
                                    "longer than the 128 characters a Hive metastore allows"),
    "cow-namespace-is-source": (HADOOP, ["--cow-namespace", "sales"], "--cow-namespace must differ"),
    "base-location-relative": (GLUE, ["--cow-base-location", "mirrors"], "must be a URI (s3://...) or absolute path"),
    "base-location-gcs": (glue(), ["--cow-base-location", "gs://lake/mirrors"], "gs:// is not supported"),
    "base-location-space": (glue(), ["--cow-base-location", "s3://lake/my mirrors"], "contains a space"),
    "base-location-on-hadoop": (HADOOP, ["--cow-base-location", "/elsewhere"],
                                "the hadoop catalog places tables itself"),
    "parallelism-zero": (HADOOP, ["--parallelism", "0"], "--parallelism must be from 1 to 64, got 0"),
    "parallelism-huge": (HADOOP, ["--parallelism", "100000"], "--parallelism must be from 1 to 64, got 100000"),
    "parallelism-not-a-number": (HADOOP, ["--parallelism", "four"], "argument --parallelism: invalid int value"),
    "file-size-zero": (HADOOP, ["--target-file-size-mb", "0"], "--target-file-size-mb must be from 1 to 16384"),
    "file-size-past-java-long": (HADOOP, ["--target-file-size-mb", "10000000000000"],
                                 "--target-file-size-mb must be from 1 to 16384 (MB), got 10000000000000"),
    "spark-conf-malformed": (HADOOP, ["--spark-conf", "novalue"], "is not KEY=VALUE"),
    "spark-conf-no-key": (HADOOP, ["--spark-conf", "=1"], "is not KEY=VALUE"),
    "spark-conf-overrides-catalog": (HADOOP, ["--spark-conf", "spark.sql.catalog.olake_iceberg.warehouse=/elsewhere"],
                                     "the catalog 'olake_iceberg' is set from the destination config"),
    "spark-master-bogus": (HADOOP, ["--spark-master", "bogus://x"], "--spark-master 'bogus://x' is not a Spark master"),
    "spark-conf-master-bogus": (HADOOP, ["--spark-conf", "spark.master=nowhere"], "is not a Spark master"),
    "fold-deletes-on-cow": (HADOOP, ["--fold-deletes", "--mirror-format", "cow"],
                            "--fold-deletes folds deletion vectors, which only dv mirrors have"),
    "keep-changes-readonly": (HADOOP, ["--keep-mirror-changes", "--source-mode", "readonly"],
                              "--keep-mirror-changes keeps changes to a truncate mirror, the only complete copy"),
    "summary-out-no-bucket": (HADOOP, ["--summary-out", "s3://"], "must name an object: s3://bucket/path"),
    "summary-out-a-folder": (HADOOP, ["--summary-out", "s3://lake/summaries/"], "must name an object"),
    "summary-out-bad-bucket": (HADOOP, ["--summary-out", "s3://Not_A_Bucket/run.json"],
                               "'Not_A_Bucket' is not an S3 bucket name"),
    "summary-out-other-scheme": (HADOOP, ["--summary-out", "s3a://b/run.json"], "s3a:// is not supported"),
    "summary-out-directory": (HADOOP, ["--summary-out", "/"], "--summary-out / is not a writable file path"),
    "summary-out-name-too-long": (HADOOP, ["--summary-out", "/tmp/" + "s" * 300 + ".json"],
                                  "the file name is longer than the file system allows"),
    "upgrade-without-dv": (HADOOP, ["--upgrade-mirror"], "--upgrade-mirror needs --mirror-format dv"),
    "mirror-format-unknown": (HADOOP, ["--mirror-format", "mor"], "invalid choice: 'mor'"),
    "delete-mode-unknown": (HADOOP, ["--delete-mode", "soft"], "invalid choice: 'soft'"),
    "option-unknown": (HADOOP, ["--tabels", "a"], "unrecognized arguments: --tabels a"),
    "fold-ratio-out-of-range": (HADOOP, ["--fold-ratio", "2"], "--fold-ratio must be a fraction"),
    "fold-ratio-zero": (HADOOP, ["--fold-ratio", "0"], "--fold-ratio must be a fraction"),
    "hours-negative": (HADOOP, ["--expire-source-older-than", "-1"], "must be a number of hours from 0 to"),
    "hours-infinite": (HADOOP, ["--expire-mirror-older-than", "inf"], "must be a number of hours from 0 to"),
    "hours-nan": (HADOOP, ["--expire-mirror-older-than", "nan"], "must be a number of hours from 0 to"),
    "orphans-under-a-day": (HADOOP, ["--remove-orphans-older-than", "0"],
                            "--remove-orphans-older-than must be at least 24 hours"),
    "orphans-just-under-a-day": (HADOOP, ["--remove-orphans-older-than", "23.5"], "must be at least 24 hours"),
    "config-unknown-key": (writer(catalog_typ="jdbc", iceberg_s3_path="/w"), [],
                           "unknown key writer.catalog_typ in the destination config; "
                           "did you mean writer.catalog_type?"),
    "config-unknown-wrapper-key": ({"tpye": "ICEBERG", "writer": GLUE_KEYS}, [],
                                   "unknown key tpye in the destination config; did you mean type?"),
    "config-utf16-without-bom": (json.dumps(HADOOP).encode("utf-16-le"), [], "looks like UTF-16 without a byte-order"),
    "config-invalid-utf8": (b'{"writer": {"catalog_type": "\xff"}}', [], "is not UTF-8 text (invalid byte 0xff"),
    "namespace-uppercase-in-glue": (GLUE, ["--source-namespace", "Sales"], "Glue names are lowercase letters, digits"),
    "namespace-dash-in-glue": (GLUE, ["--source-namespace", "sales-db"], "Glue names are lowercase letters, digits"),
    "tables-twice": (HADOOP, ["--tables", "a,a"], "--tables names 'a' more than once"),
    "option-twice": (HADOOP, ["--source-namespace", "sales", "--source-namespace", "crm"],
                     "--source-namespace given twice ('sales', then 'crm'): give it once"),
    "orphans-dry-run-alone": (HADOOP, ["--orphans-dry-run"], "--orphans-dry-run needs --remove-orphans-older-than"),
    "maintenance-only-alone": (HADOOP, ["--maintenance-only"], "--maintenance-only needs at least one maintenance"),
    "choice-unknown": (HADOOP, ["--source-mode", "sometimes"], "invalid choice: 'sometimes'"),
    "engine-python-hadoop": (HADOOP, ["--engine", "python"], "the python engine serves glue, jdbc and rest catalogs"),
    "engine-python-dv": (writer(catalog_type="jdbc", jdbc_url="jdbc:postgresql://127.0.0.1:1/db", iceberg_s3_path="/w"),
                         ["--engine", "python", "--mirror-format", "dv"],
                         "the python engine does not serve --mirror-format dv"),
    "engine-python-jdbc-parameter": (writer(catalog_type="jdbc", jdbc_url="jdbc:postgresql://h/db?currentSchema=x",
                                            iceberg_s3_path="/w"), ["--engine", "python"],
                                     "does not translate the JDBC URL parameter 'currentSchema'"),
    "python-max-mb-negative": (HADOOP, ["--python-max-mb", "-1"], "--python-max-mb must be from 0 to 10240"),
    "hand-over-on-spark": (HADOOP, ["--hand-over"], "--hand-over is for --engine python"),
}


def readme_cases():
    return bad_input_cases("bad-input")


def test_the_bad_input_doc_and_this_test_list_the_same_cases():
    listed = readme_cases()
    assert sorted(listed) == sorted(CASES)
    for case, (_, _, message) in CASES.items():
        assert message.replace("`", "") in listed[case].replace("`", ""), case


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_exits_2_in_one_line_before_spark_and_writes_nothing(case, tmp_path, capsys, monkeypatch):
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("OLAKE_COW_CONNECT_TIMEOUT", "2")
    monkeypatch.setattr("olake_cow.spark.session.build_session", spark_must_not_start)
    warehouse = tmp_path / "wh"
    config, extra, message = CASES[case]
    extra = [a.replace("/tmp/wh", str(warehouse)) for a in extra]
    source = []
    if config not in (None, "none"):
        path = tmp_path / "destination.json"
        if isinstance(config, bytes):
            path.write_bytes(config)
        elif config != "missing":
            text = config if isinstance(config, str) else json.dumps(config)
            path.write_text(text.replace("/tmp/wh", str(warehouse)))
        source = ["--destination-details", str(path)]
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    namespace = [] if "--source-namespace" in extra else ["--source-namespace", "sales"]
    assert run_cli([*source, *namespace, "--quiet", *extra]) == Exit.BAD_INPUT
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert sorted(os.listdir(tmp_path)) == before and not warehouse.exists()  # nothing written


def spark_must_not_start(*args, **kwargs):
    raise AssertionError("bad input reached Spark")


def run_cli(args):
    """The exit code, whether main returns it or argparse exits (an unknown choice)."""
    try:
        return main(args)
    except SystemExit as exc:
        return exc.code


def test_the_run_exits_2_for_bad_input_1_for_a_failed_table_0_otherwise():
    assert exit_code([]) == Exit.OK
    assert exit_code([OlakeCowError("a merge failed")]) == Exit.TABLE_FAILED
    assert exit_code([OlakeCowError("x"), TableNotFoundError("table sales.nope does not exist")]) == Exit.BAD_INPUT
    assert exit_code([ConfigError("--source-mode truncate on a readonly mirror")]) == Exit.BAD_INPUT


@pytest.mark.aws
def test_a_summary_bucket_that_does_not_exist_is_refused_before_spark(tmp_path, capsys, monkeypatch):
    from moto import mock_aws

    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr("olake_cow.spark.session.build_session", spark_must_not_start)
    path = tmp_path / "destination.json"
    path.write_text(json.dumps(HADOOP).replace("/tmp/wh", str(tmp_path / "wh")))
    with mock_aws():
        code = run_cli(["--destination-details", str(path), "--source-namespace", "sales", "--quiet",
                        "--summary-out", "s3://no-such-bucket/run.json"])
    err = capsys.readouterr().err
    assert code == Exit.BAD_INPUT and "bucket no-such-bucket does not exist" in err, err
    assert len(err.strip().splitlines()) == 1


JDBC = writer(catalog_type="jdbc", jdbc_url="jdbc:postgresql://127.0.0.1:1/db", iceberg_s3_path="/w")


def without(monkeypatch, module):
    """A process where `module` is not installed (the job's EMR package carries no pyiceberg)."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == module else real(name, *a))


def test_the_default_engine_is_auto():
    from olake_cow.cli import build_parser

    assert build_parser().parse_args(["--secret-id", "s", "--source-namespace", "sales"]).engine == "auto"


@pytest.mark.parametrize("module", ["pyiceberg", "pyarrow"])
def test_without_its_libraries_the_python_engine_is_refused_in_one_line_and_auto_runs_spark(
        module, tmp_path, capsys, monkeypatch):
    from olake_cow import cli
    from olake_cow.core.config import parse_destination

    cfg = parse_destination(JDBC["writer"])
    assert cli.python_unavailable(cfg) is None
    without(monkeypatch, module)
    assert f"{module} is not installed" in (cli.python_unavailable(cfg) or "")
    path = tmp_path / "destination.json"
    path.write_text(json.dumps(JDBC))
    monkeypatch.setattr("olake_cow.spark.session.build_session", spark_must_not_start)
    assert run_cli(["--destination-details", str(path), "--source-namespace", "sales", "--quiet",
                    "--engine", "python"]) == Exit.BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert f"{module} is not installed" in err and len(err.splitlines()) == 1, err

    # auto: every table goes to Spark with the reason in its summary entry; the python engine is not asked
    asked = {}

    def on_spark(s, job, handed, summary, whole=None):
        asked.update(handed=handed, whole=whole)
        return []

    monkeypatch.setattr(cli, "_on_spark", on_spark)
    monkeypatch.setattr(cli, "_python_first", lambda *a: pytest.fail("the python engine ran without its libraries"))
    job = cli.JobOptions("sales", "sales_cow", None)
    code, _ = cli._run(cli.RunSettings(cfg, job, None, {}, None, None, cli.Engine.AUTO))
    assert code == Exit.OK and asked["handed"] is None and f"{module} is not installed" in asked["whole"]
