"""Entry point of the mirror job: `spark-submit main.py ... --engine spark` on EMR Serverless, or
locally `.venv/bin/python emr_job/main.py ...` (by default the python engine where it serves, and a
local Spark session with the Iceberg runtime for the rest)."""
import gc
import logging
import os
import sys

gc.disable()  # before the imports: cli.short_process says why
from olake_cow.cli import main, short_process  # noqa: E402


def finish(code: int) -> None:
    """End the process with `code`. A run on the python engine alone skips the interpreter's
    teardown (freeing Arrow's buffers and some 700 modules one by one: about 0.2 s of a 2 s process,
    docs/BENCHMARKS.md): by now every commit is made, every file closed, and the logs and output
    are flushed here. A process that loaded Spark exits the usual way (its gateway's exit hooks)."""
    if "pyspark" in sys.modules:
        sys.exit(code)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    short_process()
    finish(main())
