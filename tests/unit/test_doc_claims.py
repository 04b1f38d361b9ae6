"""What README.md and docs/ name, checked against the repository: every file path they give
exists, every `make` target they name is in the Makefile, the stack parameters and the Lambda's
environment tables of docs/OPERATIONS.md list exactly what template.yaml and the trigger's settings
take, the README's writer-key table lists exactly the keys the job accepts, and every metric
docs/OPERATIONS.md names is one the trigger publishes."""
import glob
import os
import re

import pytest

from testkit.docs import ROOT
from testkit.template import load_template

pytestmark = pytest.mark.unit

DOCS = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
# Where a doc's bare module or test file names are found (its tables name them by folder).
FOLDERS = ["", "emr_job", "emr_job/olake_cow", "emr_job/olake_cow/core", "emr_job/olake_cow/spark", "lambda",
           "lambda/olake_trigger", "infra", "tools", "tests", "tests/spark", "testkit", "docs"]
PATH = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./-]*\.(py|md|yaml|yml|json|sh|txt|toml|sha256)$")
# Named in the docs, not files of this repository, and why.
NOT_REPO_FILES = {
    ".olake-cow-stack.json": "the marker a stack writes to its artifacts location in S3",
    "destination.json": "the user's own OLake destination file",
}


def code_spans(doc):
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        return re.findall(r"`([^`\n]+)`", f.read())


def section(doc, title):
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        text = f.read()
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def first_column_names(text, pattern):
    names = set()
    for line in text.splitlines():
        if line.startswith("| `"):
            names.update(n for n in re.findall(r"`([^`]+)`", line.split(" | ")[0]) if re.fullmatch(pattern, n))
    return names


@pytest.mark.parametrize("doc", DOCS)
def test_every_file_a_doc_names_exists(doc):
    missing = []
    for span in code_spans(doc):
        path = span.split("::")[0].split("#")[0].strip()
        if not PATH.match(path) or path.startswith("build/") or path in NOT_REPO_FILES:
            continue
        if not any(os.path.exists(os.path.join(ROOT, folder, path))
                   for folder in FOLDERS + [os.path.dirname(doc)]):
            missing.append(path)
    assert missing == [], f"{doc} names files that do not exist: {sorted(set(missing))}"


def test_every_make_target_the_docs_name_exists():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        targets = set(re.findall(r"^([a-z0-9-]+):", f.read(), re.M))
    named = {(doc, t) for doc in DOCS for span in code_spans(doc)
             for t in re.findall(r"(?:^|\s)make ([a-z][a-z0-9-]*)", span)}
    assert {(doc, t) for doc, t in named if t not in targets} == set()
    assert {"demo", "test", "deploy", "destroy", "try-local", "bench", "lint"} <= {t for _, t in named}


def test_the_stack_parameter_table_lists_exactly_the_templates_parameters():
    table = first_column_names(section("docs/OPERATIONS.md", "Stack parameters"), r"[A-Z][A-Za-z0-9]+")
    params = set(load_template()["Parameters"])
    assert table - params == set(), f"documented, not in template.yaml: {sorted(table - params)}"
    assert params - table == set(), f"in template.yaml, not documented: {sorted(params - table)}"


def test_the_lambda_environment_table_lists_exactly_what_the_trigger_reads():
    table = first_column_names(section("docs/OPERATIONS.md", "The Lambda's environment"), r"[A-Z][A-Z0-9_]+")
    with open(os.path.join(ROOT, "lambda", "olake_trigger", "settings.py"), encoding="utf-8") as f:
        read = set(re.findall(r"\"([A-Z][A-Z0-9_]{3,})\"", f.read())) - {"AWS_REGION", "AWS_DEFAULT_REGION"}
    assert table - read == set(), f"documented, never read: {sorted(table - read)}"
    assert read - table == set(), f"read, not documented: {sorted(read - table)}"


def test_the_writer_key_table_lists_exactly_the_keys_the_job_accepts():
    from olake_cow.core.config import WRITER_KEYS

    text = section("README.md", "Destination config and catalogs").split("### ", 1)[0]
    table = first_column_names(text, r"[a-z][a-z0-9_]+")
    assert table - set(WRITER_KEYS) == set(), f"documented, not accepted: {sorted(table - set(WRITER_KEYS))}"
    assert set(WRITER_KEYS) - table == set(), f"accepted, not documented: {sorted(set(WRITER_KEYS) - table)}"


def test_every_metric_the_docs_name_is_published_by_the_trigger():
    text = section("docs/OPERATIONS.md", "Metrics")
    # CamelCase names in the section that are not metrics: the namespace, parameters, an API
    named = set(re.findall(r"`([A-Z][A-Za-z]+)`", text)) - {"OlakeCow", "TableMetricsLimit", "SourceNamespaces",
                                                             "GetJobRun"}
    code = ""
    for path in glob.glob(os.path.join(ROOT, "lambda", "olake_trigger", "*.py")):
        with open(path, encoding="utf-8") as f:
            code += f.read()
    assert len(named) >= 15
    assert {n for n in named if f'"{n}"' not in code} == set()


CODE = [p for folder in ("emr_job", "lambda", "infra", "testkit", "tools", "bench")
        for p in glob.glob(os.path.join(ROOT, folder, "**", "*.py"), recursive=True)]
# Dotted spans that are not code: Spark configuration keys, and files named by their extension.
NOT_CODE = re.compile(r"^spark\.|\.(zip|jar|jsa|py|yaml|json|md)$")


def named_code(doc):
    """The dotted code names a doc gives (`events.check_request`, `GlueTables.missing`): spans whose
    first part is a module, package or class of the repository's code."""
    texts = {p: open(p, encoding="utf-8").read() for p in CODE}
    stems = {os.path.basename(p)[:-3] for p in CODE} | {os.path.basename(os.path.dirname(p)) for p in CODE}
    classes = {c for t in texts.values() for c in re.findall(r"^\s*class\s+([A-Za-z_]\w*)", t, re.M)}
    return [s for s in code_spans(doc) if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", s)
            and not NOT_CODE.search(s) and s.split(".")[0] in stems | classes]


def undefined_names(spans):
    text = "\n".join(open(p, encoding="utf-8").read() for p in CODE)
    stems = {os.path.basename(p)[:-3] for p in CODE} | {os.path.basename(os.path.dirname(p)) for p in CODE}
    defined = set(re.findall(r"^\s*(?:def|class)\s+([A-Za-z_]\w*)", text, re.M)) | set(
        re.findall(r"^\s*(?:self\.)?([A-Za-z_]\w*)\s*[:=]", text, re.M)) | stems
    return [s for s in spans if any(part not in defined for part in s.split(".")[1:])]


@pytest.mark.parametrize("doc", DOCS)
def test_every_code_name_a_doc_gives_is_defined(doc):
    assert undefined_names(named_code(doc)) == [], f"{doc} names code that does not exist"


def test_the_code_name_check_catches_a_method_that_is_gone():
    assert undefined_names(["Trigger._not_in_catalog", "events.check_request"]) == ["Trigger._not_in_catalog"]
