"""Installs the AWS SDK v2 jars that Iceberg's GlueCatalog and S3FileIO need for local runs and the
tests (on EMR they come with the release). They are taken from a PyPI wheel that ships them
(Maven is not needed): pip downloads it, and only the AWS SDK jars are kept.

    python scripts/aws_jars.py DEST     (make setup runs it with DEST=.venv/aws-jars)
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

WHEEL = "bodo-iceberg-connector==2026.10"  # ships AWS SDK 2.29.26: glue, s3, sts, kms, dynamodb, s3tables, ...
SDK_VERSION = "2.29.26"
EXTRA = ("eventstream-1.0.1.jar", "reactive-streams-1.0.4.jar")
SKIP = ("netty-nio-client",)  # async HTTP client: not used by Iceberg's sync clients; Spark has its own netty


def wanted(name: str) -> bool:
    base = os.path.basename(name)
    if not base.endswith(".jar") or any(base.startswith(s) for s in SKIP):
        return False
    return base.endswith(f"-{SDK_VERSION}.jar") or base in EXTRA


def install(dest: str) -> int:
    marker = os.path.join(dest, ".installed")
    if os.path.exists(marker) and open(marker, encoding="utf-8").read().strip() == WHEEL:
        return len(glob.glob(os.path.join(dest, "*.jar")))
    with tempfile.TemporaryDirectory(prefix="olake-cow-aws-jars-") as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", tmp, WHEEL],
                       check=True)
        wheels = glob.glob(os.path.join(tmp, "*.whl"))
        if len(wheels) != 1:
            raise SystemExit(f"aws_jars: expected one wheel for {WHEEL}, found {wheels}")
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        with zipfile.ZipFile(wheels[0]) as zf:
            names = [n for n in zf.namelist() if wanted(n)]
            for name in names:
                with zf.open(name) as src, open(os.path.join(dest, os.path.basename(name)), "wb") as out:
                    shutil.copyfileobj(src, out)
    if not any(os.path.basename(n).startswith("glue-") for n in names):
        raise SystemExit(f"aws_jars: {WHEEL} holds no AWS SDK glue jar")
    with open(marker, "w", encoding="utf-8") as f:
        f.write(WHEEL + "\n")
    return len(names)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(f"aws_jars: {install(sys.argv[1])} AWS SDK jars in {sys.argv[1]}")
