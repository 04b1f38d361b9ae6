"""emr_job/ must run on EMR Serverless 7.x's Python 3.9."""
import glob
import os
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.unit
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def python39():
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.9*/bin/python3.9")))
    candidates += [p for p in [shutil.which("python3.9")] if p]
    for exe in candidates:
        if subprocess.run([exe, "--version"], capture_output=True).returncode == 0:
            return exe
    return None


@pytest.mark.skipif(python39() is None, reason="no Python 3.9 on this machine")
def test_job_package_compiles_and_imports_on_python_3_9():
    files = glob.glob(os.path.join(ROOT, "emr_job", "**", "*.py"), recursive=True)
    package = os.path.join(ROOT, "emr_job")
    modules = sorted(os.path.relpath(f, package)[:-3].replace(os.sep, ".")
                     for f in glob.glob(os.path.join(package, "olake_cow", "**", "*.py"), recursive=True)
                     if not f.endswith("__init__.py"))
    code = ("import importlib, sys\n"
            "for f in sys.argv[1:]: compile(open(f, encoding='utf-8').read(), f, 'exec')\n"
            f"for m in {modules!r}: importlib.import_module(m)\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "emr_job"), PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([python39(), "-c", code, *files], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
