"""Packages the mirror job for EMR Serverless: `main.py` (the entry point) and `olake_cow.zip`
(passed with --py-files), named by a hash of their content, so a new deploy never changes the code
under a running job. With --upload, copies both to <uri>/<version>/. Prints the version (the
folder name under code/); `make deploy` passes it to the stack as CodeVersion. With --jar (a
Spark 4.1 release, infra/iceberg_jars.py), also uploads that pinned Iceberg jar to <uri>/jars/,
once: its SHA-256 is checked against the pin, and a copy of the same size already there is kept.

    python -m infra.package_job [--out build/job] [--upload s3://bucket/prefix/code] [--jar FILE] [--region R]

Exit codes: 0 packaged (and uploaded), 2 a bad --upload URI or an AWS error (one line says what).
"""
import argparse
import hashlib
import os
import shutil
import sys
import zipfile
from typing import TYPE_CHECKING, Optional, Sequence

from infra import awsenv

if TYPE_CHECKING:  # typed clients (development stubs only)
    from mypy_boto3_s3 import S3Client


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "emr_job", "olake_cow")
ENTRY = os.path.join(ROOT, "emr_job", "main.py")
_EPOCH = (2020, 1, 1, 0, 0, 0)  # fixed timestamps: the same sources give the same zip and version


def _sources() -> list:
    """The package's .py files, sub-packages included, in a fixed order."""
    found = []
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [os.path.join(folder, name) for name in sorted(files) if name.endswith(".py")]
    return sorted(found)


def build(out: str) -> str:
    os.makedirs(out, exist_ok=True)
    zip_path = os.path.join(out, "olake_cow.zip")
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in _sources():
            info = zipfile.ZipInfo("olake_cow/" + os.path.relpath(path, PACKAGE).replace(os.sep, "/"), _EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(path, "rb") as f:
                zf.writestr(info, f.read())
    shutil.copyfile(ENTRY, os.path.join(out, "main.py"))
    digest = hashlib.sha256()
    for name in ("main.py", "olake_cow.zip"):
        with open(os.path.join(out, name), "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()[:16]


def upload(out: str, target: str, version: str, s3: "S3Client") -> str:
    bucket, prefix = awsenv.uris.split_s3(target.rstrip("/"))
    base = f"{prefix}/{version}" if prefix else version
    for name in ("main.py", "olake_cow.zip"):
        s3.upload_file(os.path.join(out, name), bucket, f"{base}/{name}")
    return f"s3://{bucket}/{base}/"


def check_jar(path: str) -> str:
    """The jar's file name; SetupError for a file that is not a pinned jar, byte for byte."""
    from infra.iceberg_jars import STACKS, sha256

    name = os.path.basename(path)
    if not os.path.isfile(path):
        raise awsenv.SetupError(f"{path} does not exist: fetch it with make SPARK=4 setup")
    pinned = {j.file: j for jars in STACKS.values() for j in jars}.get(name)
    if pinned is None:
        raise awsenv.SetupError(f"{name} is not a jar pinned in infra/iceberg_jars.py")
    actual = sha256(path)
    if actual != pinned.sha256:
        raise awsenv.SetupError(f"{path} has SHA-256 {actual}, pinned {pinned.sha256}: fetch it again "
                                "(make SPARK=4 setup)")
    return name


def upload_jar(path: str, target: str, s3: "S3Client") -> str:
    """The pinned jar at <target>/jars/<file>, uploaded unless a copy of its size is there."""
    name = check_jar(path)
    bucket, prefix = awsenv.uris.split_s3(target.rstrip("/"))
    key = f"{prefix}/jars/{name}" if prefix else f"jars/{name}"
    try:
        there = s3.head_object(Bucket=bucket, Key=key)["ContentLength"]
    except Exception as exc:
        if awsenv.error_code(exc) not in ("404", "NoSuchKey", "NotFound"):
            raise
        there = None
    if there != os.path.getsize(path):
        s3.upload_file(path, bucket, key)
    return f"s3://{bucket}/{key}"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="package_job", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(ROOT, "build", "job"), help="local folder (default build/job)")
    p.add_argument("--upload", metavar="S3_URI", help="s3://bucket/prefix/code: uploads to <uri>/<version>/")
    p.add_argument("--jar", metavar="FILE", help="a pinned Iceberg jar to upload to <uri>/jars/ (with --upload)")
    p.add_argument("--region", help="AWS region for --upload (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's)")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    if args.upload and (not args.upload.startswith("s3://") or not args.upload[len("s3://"):].strip("/")):
        print(f"package_job: --upload must be s3://bucket[/prefix], got {args.upload!r}", file=sys.stderr)
        return 2
    version = build(args.out)

    def send() -> int:
        if args.upload:
            s3 = awsenv.session(args.region).client("s3")
            if args.jar:  # first: a jar that is not the pinned one stops the deploy before any upload
                print(f"Iceberg jar at {upload_jar(args.jar, args.upload, s3)}", file=sys.stderr)
            where = upload(args.out, args.upload, version, s3)
            print(f"uploaded to {where}", file=sys.stderr)
        print(version)
        return 0

    return awsenv.run("package_job", send)


if __name__ == "__main__":
    sys.exit(main())
