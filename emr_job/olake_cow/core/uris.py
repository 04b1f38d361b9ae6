"""The one reader of `s3://bucket/key` URIs (pure): the job, the trigger, infra and the tests split
them here."""
from typing import Tuple

S3_SCHEMES = ("s3://", "s3a://", "s3n://")  # the schemes Hadoop and Iceberg read as S3


def is_s3_uri(uri: str) -> bool:
    return uri.startswith(S3_SCHEMES)


def split_s3(uri: str) -> Tuple[str, str]:
    """(bucket, key or prefix) of an s3:// (s3a://, s3n://) URI, the key as written; ValueError
    for any other URI."""
    if not is_s3_uri(uri):
        raise ValueError(f"not an s3:// URI: {uri!r}")
    bucket, _, key = uri.split("://", 1)[1].partition("/")
    return bucket, key
