"""The layout keeps its promise: the pure core (emr_job/olake_cow/core) imports nothing but the
standard library and itself, so the Lambda can ship it whole and its tests need no JVM; the Spark
adapters live in emr_job/olake_cow/spark."""
import ast
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "emr_job", "olake_cow")
CORE = os.path.join(PACKAGE, "core")
FORBIDDEN = ("pyspark", "py4j", "boto3", "botocore", "olake_cow.spark", "olake_cow.cli")


def core_modules():
    return sorted(f[:-3] for f in os.listdir(CORE) if f.endswith(".py"))


def imports_of(path):
    """Every module a file imports (relative imports resolved inside olake_cow.core), wherever
    the import statement is: at the top, in a function, or under TYPE_CHECKING."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                found.append(node.module or "")
            else:
                base = ["olake_cow", "core"][: 3 - node.level] if node.level <= 2 else []
                found.append(".".join(base + ([node.module] if node.module else [])))
    return found


def forbidden_imports():
    bad = []
    for name in core_modules():
        for module in imports_of(os.path.join(CORE, name + ".py")):
            if any(module == f or module.startswith(f + ".") for f in FORBIDDEN):
                bad.append(f"core/{name}.py imports {module}")
            elif module.startswith("olake_cow.") and not module.startswith("olake_cow.core"):
                bad.append(f"core/{name}.py imports {module} (outside the core)")
    return bad


def test_the_core_imports_neither_spark_nor_aws_nor_the_adapters():
    assert forbidden_imports() == []


def test_the_check_catches_an_adapter_import(tmp_path, monkeypatch):
    """The check above can fail: a core module importing Spark or an adapter is reported."""
    fake = tmp_path / "core"
    fake.mkdir()
    (fake / "leaky.py").write_text("def f():\n    from pyspark.sql import functions\n    from ..spark import merge\n")
    monkeypatch.setattr(sys.modules[__name__], "CORE", str(fake))
    assert forbidden_imports() == ["core/leaky.py imports pyspark.sql", "core/leaky.py imports olake_cow.spark"]


def test_every_core_module_imports_with_spark_and_aws_unavailable():
    blocker = ("import sys\n"
               "class Block:\n"
               "    def find_spec(self, name, path=None, target=None):\n"
               f"        if name.split('.')[0] in {('pyspark', 'py4j', 'boto3', 'botocore')!r}:\n"
               "            raise ImportError('blocked: ' + name)\n"
               "sys.meta_path.insert(0, Block())\n"
               "import importlib\n"
               f"for m in {core_modules()!r}: importlib.import_module('olake_cow.core.' + m)\n"
               "print(sorted(k for k in sys.modules if k.startswith('olake_cow.')))\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "emr_job"))
    out = subprocess.run([sys.executable, "-c", blocker], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    loaded = eval(out.stdout)
    assert all(m == "olake_cow.core" or m.startswith("olake_cow.core.") for m in loaded), loaded


def test_the_lambda_build_copies_the_core_whole():
    makefile = open(os.path.join(ROOT, "lambda", "Makefile"), encoding="utf-8").read()
    assert "emr_job/olake_cow/core/*.py" in makefile


def test_spark_adapters_live_in_their_own_package():
    spark = os.path.join(PACKAGE, "spark")
    for name in ("change_reader", "merge", "iceberg", "table_job", "session", "scan_tasks"):
        assert os.path.exists(os.path.join(spark, name + ".py")), name
    top = sorted(f for f in os.listdir(PACKAGE) if f.endswith(".py"))
    assert top == ["__init__.py", "cli.py", "preflight.py"], top  # the command line and its pre-Spark checks
