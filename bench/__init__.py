"""The benchmarks (`make bench`, `bench-engines`, `bench-lane`, `bench-warm`): docs/BENCHMARKS.md."""
import compileall
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def compile_job() -> None:
    """Bytecode for the job's and the Lambdas' own modules, as a deployed package carries it
    (lambda/Makefile compiles the merge function's): a timed process that compiled them from source
    (PYTHONDONTWRITEBYTECODE, a fresh checkout) would pay some 0.3 s no deployed run pays."""
    for folder in ("emr_job", "lambda"):
        compileall.compile_dir(os.path.join(ROOT, folder), quiet=1)
