"""The layout keeps its promise: the pure core (emr_job/olake_cow/core) imports nothing but the
standard library and itself, so the Lambda can ship it whole and its tests need no JVM; the Spark
adapters live in emr_job/olake_cow/spark."""
import ast
import os
import re
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
    """Every module a core file imports, wherever the import statement is: at the top, in a
    function, or under TYPE_CHECKING."""
    return resolved_imports(path, "olake_cow.core")


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


LAYERS = {"olake_cow.core": 0, "olake_cow.spark": 1, "olake_cow": 2}  # cli.py and preflight.py are the top


def layer_of(module):
    """The layer of an olake_cow module: the longest package prefix in LAYERS."""
    for prefix in sorted(LAYERS, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            return prefix
    return None


def resolved_imports(path, package):
    """What a file imports, with relative imports resolved against its package."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            found.append(".".join(base + ([node.module] if node.module else [])))
    return found


def upward_imports(root=PACKAGE):
    """Imports that run against the direction core <- spark <- cli/preflight, and Spark imported
    outside the Spark adapters."""
    bad = []
    for folder, _, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        package = "olake_cow" if rel == "." else "olake_cow." + rel.replace(os.sep, ".")
        for f in sorted(x for x in files if x.endswith(".py")):
            me = package if f == "__init__.py" else f"{package}.{f[:-3]}"
            mine = LAYERS[layer_of(me)]
            for module in resolved_imports(os.path.join(folder, f), package):
                theirs = layer_of(module)
                if theirs is not None and LAYERS[theirs] > mine:
                    bad.append(f"{me} imports {module}")
                elif module.split(".")[0] in ("pyspark", "py4j") and layer_of(me) == "olake_cow.core":
                    bad.append(f"{me} imports {module}")
    return bad


def test_imports_run_one_way_core_then_spark_then_the_command_line():
    assert upward_imports() == []


def test_the_direction_check_catches_an_upward_import(tmp_path):
    (tmp_path / "spark").mkdir()
    (tmp_path / "core").mkdir()
    (tmp_path / "spark" / "reader.py").write_text("from ..cli import main\nfrom ..core import steps\n")
    (tmp_path / "core" / "plan.py").write_text("def f():\n    from ..spark import merge\n")
    assert sorted(upward_imports(str(tmp_path))) == ["olake_cow.core.plan imports olake_cow.spark",
                                             "olake_cow.spark.reader imports olake_cow.cli"]


def test_the_trigger_imports_only_the_core_of_the_job():
    trigger = os.path.join(ROOT, "lambda", "olake_trigger")
    bad = [f"{f} imports {m}" for f in sorted(os.listdir(trigger)) if f.endswith(".py")
           for m in resolved_imports(os.path.join(trigger, f), "olake_trigger")
           if m.split(".")[0] in ("pyspark", "py4j") or (m.startswith("olake_cow") and layer_of(m) != "olake_cow.core")]
    assert bad == []


def test_the_merge_function_reaches_no_spark_module_on_the_python_engine():
    """lambda/Makefile packages cli, core and python_engine, not spark/: what the merge function
    imports at module level, and what the python engine's path imports, stay out of spark/."""
    graph = import_graph()
    seen, todo = set(), ["olake_merge.handler", "olake_cow.python_engine.table_run", "olake_cow.python_engine.catalog"]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += [n for n in graph.get(m, []) if n != "olake_cow.cli"]  # cli imports spark lazily, off this path
    assert sorted(m for m in seen if m.startswith("olake_cow.spark")) == []
    loaded = subprocess.run([sys.executable, "-c", "import sys; import olake_merge.handler; "
                             "print(sorted(m for m in sys.modules if m.startswith(('olake_cow.spark', 'pyspark'))))"],
                            capture_output=True, text=True, cwd=ROOT)
    assert loaded.returncode == 0 and loaded.stdout.strip() == "[]", loaded.stdout + loaded.stderr
    with open(os.path.join(ROOT, "lambda", "Makefile"), encoding="utf-8") as f:
        build = f.read().split("build-MergeFunction:", 1)[1]
    assert "python_engine" in build and "/spark" not in build


def test_no_format_is_compared_outside_its_rules():
    """What a mirror format means lives in core/formats.py (FORMATS[fmt]); no other product module
    compares formats (issue: the write strategy in the (mode, format) row)."""
    compare = re.compile(r"(==|!=|\bis\b|\bin\b)\s*\(?\s*MirrorFormat\.|MirrorFormat\.\w+(\.value)?\s*(==|!=)|"
                         r"\bfmt\s*(==|!=)|\bmirror_format\s*(==|!=)\s*[\"']|\bcow: bool")
    found = []
    for rel in _tracked_python_files():
        if rel.startswith(("emr_job/", "lambda/")) and not rel.endswith("core/formats.py"):
            with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
                found += [f"{rel}:{n}: {line.strip()}" for n, line in enumerate(f, 1) if compare.search(line)]
    assert found == []


def test_no_test_file_imports_another():
    """Helpers several test files share live in testkit/ (or a test package's conftest or scenario
    module), not in a test file another one imports."""
    imports = re.compile(r"^\s*(from|import)\s+tests\.\w+\.test_\w+")
    found = []
    for rel in _tracked_python_files():
        if rel.startswith("tests/"):
            with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
                found += [f"{rel}:{n}" for n, line in enumerate(f, 1) if imports.search(line)]
    assert found == []


def _tracked_python_files():
    out = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [p for p in out.stdout.split() if not p.startswith(".aws-sam/")]


def test_nothing_edits_the_import_path():
    """One editable package (pyproject.toml) makes every folder importable: no file inserts into,
    appends to or assigns the interpreter's import path."""
    edit = re.compile(r"\bsys\.path(\.insert|\.append|\[| *=| *\+=)")
    found = []
    for rel in _tracked_python_files():
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            found += [f"{rel}:{n}" for n, line in enumerate(f, 1) if edit.search(line)]
    assert found == []


def test_the_class_size_check_passes_on_the_product_code_and_fails_on_a_long_class(tmp_path):
    tool = [sys.executable, os.path.join(ROOT, "tools", "class_size.py")]
    ok = subprocess.run(tool + [os.path.join(ROOT, d) for d in ("emr_job", "lambda", "infra")],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout
    (tmp_path / "big.py").write_text("class Big:\n" + "    x = 1\n" * 150)
    bad = subprocess.run(tool + [str(tmp_path)], capture_output=True, text=True)
    assert bad.returncode == 1 and "class Big is 151 lines" in bad.stdout, bad.stdout


PRODUCT = {"emr_job/olake_cow": "olake_cow", "lambda/olake_trigger": "olake_trigger",
           "lambda/olake_merge": "olake_merge", "infra": "infra"}


def import_graph(roots=None):
    """module -> the product modules it imports (relative imports resolved, `from p import m` as p.m;
    imports under TYPE_CHECKING and inside functions count: they tie the modules just as well)."""
    roots = roots or {os.path.join(ROOT, k): v for k, v in PRODUCT.items()}
    files = {}
    for root, top in roots.items():
        for folder, _, names in os.walk(root):
            rel = os.path.relpath(folder, root)
            package = top if rel == "." else top + "." + rel.replace(os.sep, ".")
            for f in (x for x in names if x.endswith(".py")):
                files[package if f == "__init__.py" else f"{package}.{f[:-3]}"] = (os.path.join(folder, f), package)
    graph = {}
    for module, (path, package) in files.items():
        tree = ast.parse(open(path, encoding="utf-8").read(), path)
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                found |= {target} | {f"{target}.{a.name}" for a in node.names}
        graph[module] = sorted(m for m in found if m in files and m != module)
    return graph


def import_cycles(graph):
    """Each set of modules that import one another, round a circle (Tarjan's components)."""
    index, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                cycles.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_no_product_module_imports_round_a_circle():
    assert import_cycles(import_graph()) == []


def test_the_cycle_check_catches_a_circle_through_type_checking(tmp_path):
    (tmp_path / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n")
    (tmp_path / "b.py").write_text("from . import a\n")
    (tmp_path / "c.py").write_text("from .a import x\n")
    assert import_cycles(import_graph({str(tmp_path): "pkg"})) == [["pkg.a", "pkg.b"]]
