"""Entry point of the mirror job: `spark-submit main.py ...` on EMR Serverless, or locally
`.venv/bin/python emr_job/main.py ...` (starts a local Spark session with the Iceberg runtime)."""
import sys

from olake_cow.cli import main

if __name__ == "__main__":
    sys.exit(main())
