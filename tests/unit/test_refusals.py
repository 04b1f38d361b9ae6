"""Failures that mean a setting the job cannot serve (core/errors.py): told in one line, exit 2."""
import pytest

from olake_cow.core.errors import BAD_INPUT_ERRORS, catalog_refusal, store_refusal

pytestmark = pytest.mark.unit

PUFFIN_403 = ("An error occurred while calling o75.sql.\n: org.apache.spark.SparkException: Job aborted due to stage "
              "failure: Lost task 0.0: software.amazon.awssdk.services.s3.model.S3Exception: Forbidden (Service: S3, "
              "Status Code: 403, Request ID: 18EC)\n\tat org.apache.iceberg.aws.s3.S3OutputFile.create(S3OutputFile."
              "java:104)\n\tat org.apache.iceberg.puffin.PuffinWriter.<init>(PuffinWriter.java:68)")


def test_a_store_refusing_puffin_files_is_a_one_line_bad_input_pointing_to_cow():
    err = store_refusal(PUFFIN_403, "sales_cow.orders_cow")
    assert isinstance(err, BAD_INPUT_ERRORS)
    assert "\n" not in str(err) and "sales_cow.orders_cow" in str(err) and "--mirror-format cow" in str(err)


@pytest.mark.parametrize("text", [
    PUFFIN_403.replace("403", "503").replace("Forbidden", "Slow Down"),  # throttled: a retry may pass
    PUFFIN_403.replace("Puffin", "Parquet").replace("puffin", "parquet"),  # a data file refused: not this case
    "ValueError: nothing",
])
def test_other_failures_are_not_taken_for_a_puffin_refusal(text):
    assert store_refusal(text, "m") is None


def test_a_catalog_refusing_the_credentials_names_the_catalog_and_the_keys_to_check():
    text = ("An error occurred while calling o40.loadNamespaceMetadata.\n: org.apache.iceberg.exceptions."
            "NotAuthorizedException: Not authorized: invalid_client: Invalid client credentials\n\tat org.apache")
    err = catalog_refusal(text, "lake", "https://catalog.example/api")
    assert isinstance(err, BAD_INPUT_ERRORS)
    assert str(err).startswith("catalog lake (https://catalog.example/api) refused the credentials: Not authorized")
    assert "writer.credential" in str(err) and "\n" not in str(err)
    assert catalog_refusal("org.apache.iceberg.exceptions.ServiceFailureException: Server error", "c", "u") is None


def test_a_catalog_refusing_a_sigv4_signature_names_the_signing_keys():
    from olake_cow.core.config import parse_destination, refused_by_catalog

    text = ("org.apache.iceberg.exceptions.ForbiddenException: Forbidden: The request signature we calculated does "
            "not match the signature you provided.\n\tat org.apache")
    writer = {"catalog_type": "s3tables", "rest_catalog_url": "https://s3tables.eu-west-1.example/iceberg",
              "iceberg_s3_path": "arn:aws:s3tables:eu-west-1:123456789012:bucket/b", "rest_signing_v_4": True,
              "rest_signing_name": "s3tables"}
    err = refused_by_catalog(text, parse_destination({"type": "ICEBERG", "writer": writer}))
    assert isinstance(err, BAD_INPUT_ERRORS) and "\n" not in str(err)
    assert "refused access with these credentials: Forbidden: The request signature" in str(err)
    assert "writer.rest_signing_name" in str(err) and "writer.credential" not in str(err)


@pytest.mark.parametrize("name, message, what", [
    ("OAuthError", "invalid_client: Invalid client credentials", "refused the credentials: invalid_client"),
    ("UnauthorizedError", "NotAuthorizedException: Not authorized", "refused the credentials: Not authorized"),
    ("ForbiddenError", "Forbidden: no access to namespace sales", "refused access with these credentials: Forbidden"),
])
def test_pyicebergs_refusals_read_as_the_java_clients(name, message, what):
    """The python engine's catalog (pyiceberg) names a 401/403 by its exception's class alone."""
    from pyiceberg import exceptions

    from olake_cow.core.errors import with_type

    err = catalog_refusal(with_type(getattr(exceptions, name)(message)), "lake", "https://catalog.example/api")
    assert isinstance(err, BAD_INPUT_ERRORS) and "\n" not in str(err), err
    assert str(err).startswith(f"catalog lake (https://catalog.example/api) {what}"), err
