"""Packages the EMR job: `main.py` (entry point) and `olake_cow.zip` (--py-files), named by a
content hash so a new deploy never changes the code under a running job.

    python infra/package_job.py [--out build/job] [--upload s3://bucket/prefix/code]
Prints the version (the folder name under code/).
"""
import argparse
import hashlib
import os
import shutil
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "emr_job", "olake_cow")
ENTRY = os.path.join(ROOT, "emr_job", "main.py")
_EPOCH = (2020, 1, 1, 0, 0, 0)  # fixed timestamps: the same sources give the same zip and version


def build(out: str) -> str:
    os.makedirs(out, exist_ok=True)
    zip_path = os.path.join(out, "olake_cow.zip")
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(os.listdir(PACKAGE)):
            if name.endswith(".py"):
                info = zipfile.ZipInfo(f"olake_cow/{name}", _EPOCH)
                info.compress_type = zipfile.ZIP_DEFLATED
                with open(os.path.join(PACKAGE, name), "rb") as f:
                    zf.writestr(info, f.read())
    shutil.copyfile(ENTRY, os.path.join(out, "main.py"))
    digest = hashlib.sha256()
    for name in ("main.py", "olake_cow.zip"):
        with open(os.path.join(out, name), "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()[:16]


def upload(out: str, target: str, version: str, s3=None) -> str:
    if not target.startswith("s3://"):
        raise SystemExit(f"--upload must be an s3:// URI, got {target!r}")
    import boto3

    s3 = s3 or boto3.client("s3")
    bucket, _, prefix = target[len("s3://"):].rstrip("/").partition("/")
    base = f"{prefix}/{version}" if prefix else version
    for name in ("main.py", "olake_cow.zip"):
        s3.upload_file(os.path.join(out, name), bucket, f"{base}/{name}")
    return f"s3://{bucket}/{base}/"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(ROOT, "build", "job"))
    p.add_argument("--upload", metavar="S3_URI", help="s3://bucket/prefix/code: uploads to <uri>/<version>/")
    args = p.parse_args(argv)
    version = build(args.out)
    if args.upload:
        print(f"uploaded to {upload(args.out, args.upload, version)}", file=sys.stderr)
    print(version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
