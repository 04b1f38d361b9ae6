"""Entry point of the mirror job: `spark-submit main.py ...` on EMR Serverless, or locally
`.venv/bin/python emr_job/main.py ...` (starts a local Spark session with the Iceberg runtime)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from olake_cow.cli import main

if __name__ == "__main__":
    sys.exit(main())
