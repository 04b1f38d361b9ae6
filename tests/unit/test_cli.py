"""Every bad-input case the README lists, through the job's real command line: exit code 2 and a
message naming what is wrong, all found before Spark starts (no JVM in these tests)."""
import json
import os
import re

import pytest

from olake_cow.cli import Exit, exit_code, main
from olake_cow.core.errors import ConfigError, OlakeCowError, TableNotFoundError

pytestmark = pytest.mark.unit
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HADOOP = {"type": "ICEBERG", "writer": {"catalog_type": "hadoop", "iceberg_s3_path": "/tmp/wh"}}
GLUE = {"type": "ICEBERG", "writer": {"catalog_type": "glue", "iceberg_s3_path": "s3://lake/wh"}}


def writer(**keys):
    return {"type": "ICEBERG", "writer": keys}


# case (as named in the README's table) -> (destination config or None for --secret-id, extra arguments,
# the message the README promises)
CASES = {
    "config-unreadable": ("missing", [], "cannot read --destination-details"),
    "config-not-json": ("{not json", [], "not valid JSON"),
    "config-no-writer": ({"type": "ICEBERG"}, [], "no 'writer' object"),
    "catalog-type-unknown": (writer(catalog_type="oracle", iceberg_s3_path="/w"), [],
                             "catalog_type 'oracle' is not supported"),
    "required-key-missing": (writer(catalog_type="jdbc", iceberg_s3_path="/w"), [], "writer.jdbc_url is required"),
    "key-wrong-type": (writer(catalog_type="glue", iceberg_s3_path=["s3://b"]), [],
                       "writer.iceberg_s3_path must be a string"),
    "jdbc-driver-unknown": (writer(catalog_type="jdbc", jdbc_url="jdbc:mysql://h/db", iceberg_s3_path="s3://w"), [],
                            "no JDBC driver known for 'mysql' URLs; set writer.jdbc_driver_jar"),
    "secret-without-region": (None, ["--secret-id", "olake/destination"], "no AWS region; pass --region"),
    "table-name-bad": (HADOOP, ["--tables", "a/b"], "table name 'a/b' contains '/'"),
    "table-name-invisible": (HADOOP, ["--tables", "t\u200b,a\x00b"], "contains '\\u200b'"),
    "tables-empty": (HADOOP, ["--tables", " , "], "--tables is empty"),
    "namespace-too-long": (HADOOP, ["--cow-namespace", "x" * 300], "longer than 255 characters"),
    "cow-namespace-is-source": (HADOOP, ["--cow-namespace", "sales"], "--cow-namespace must differ"),
    "base-location-relative": (GLUE, ["--cow-base-location", "mirrors"], "must be a URI (s3://...) or absolute path"),
    "parallelism-zero": (HADOOP, ["--parallelism", "0"], "--parallelism must be at least 1"),
    "file-size-zero": (HADOOP, ["--target-file-size-mb", "0"], "--target-file-size-mb must be at least 1"),
    "spark-conf-malformed": (HADOOP, ["--spark-conf", "novalue"], "is not KEY=VALUE"),
    "summary-out-no-bucket": (HADOOP, ["--summary-out", "s3://"], "must name an object: s3://bucket/path"),
    "upgrade-without-dv": (HADOOP, ["--upgrade-mirror"], "--upgrade-mirror needs --mirror-format dv"),
    "fold-ratio-out-of-range": (HADOOP, ["--fold-ratio", "2"], "--fold-ratio must be a fraction"),
    "hours-negative": (HADOOP, ["--expire-source-older-than", "-1"], "must be a number of hours from 0 to"),
    "hours-infinite": (HADOOP, ["--expire-mirror-older-than", "inf"], "must be a number of hours from 0 to"),
    "config-unknown-key": (writer(catalog_typ="jdbc", iceberg_s3_path="/w"), [],
                           "unknown key writer.catalog_typ in the destination config; "
                           "did you mean writer.catalog_type?"),
    "config-utf16-without-bom": (json.dumps(HADOOP).encode("utf-16-le"), [], "looks like UTF-16 without a byte-order"),
    "namespace-uppercase-in-glue": (GLUE, ["--source-namespace", "Sales"], "Glue names are lowercase letters, digits"),
    "namespace-dash-in-glue": (GLUE, ["--source-namespace", "sales-db"], "Glue names are lowercase letters, digits"),
    "tables-twice": (HADOOP, ["--tables", "a,a"], "--tables names 'a' more than once"),
    "summary-out-other-scheme": (HADOOP, ["--summary-out", "s3a://b/run.json"], "s3a:// is not supported"),
    "orphans-dry-run-alone": (HADOOP, ["--orphans-dry-run"], "--orphans-dry-run needs --remove-orphans-older-than"),
    "maintenance-only-alone": (HADOOP, ["--maintenance-only"], "--maintenance-only needs at least one maintenance"),
    "choice-unknown": (HADOOP, ["--source-mode", "sometimes"], "invalid choice: 'sometimes'"),
}


def readme_cases():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    block = text.split("<!-- bad-input -->")[1].split("<!-- /bad-input -->")[0]
    rows = [line.split("|")[1:-1] for line in block.splitlines() if line.startswith("| `")]
    return {re.sub(r"[`\s]", "", r[0]): r[-1] for r in rows}


def test_the_readme_and_this_test_list_the_same_bad_input_cases():
    listed = readme_cases()
    assert sorted(listed) == sorted(CASES)
    for case, (_, _, message) in CASES.items():
        assert message.replace("`", "") in listed[case].replace("`", ""), case


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_exits_2_before_spark_and_names_the_problem(case, tmp_path, capsys, monkeypatch):
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setattr("olake_cow.spark.session.build_session", spark_must_not_start)
    config, extra, message = CASES[case]
    if config is None:
        source = []
    else:
        path = tmp_path / "destination.json"
        if isinstance(config, bytes):
            path.write_bytes(config)
        elif config != "missing":
            path.write_text(config if isinstance(config, str) else json.dumps(config))
        source = ["--destination-details", str(path)]
    assert run_cli([*source, "--source-namespace", "sales", "--quiet", *extra]) == Exit.BAD_INPUT
    assert message in capsys.readouterr().err


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
