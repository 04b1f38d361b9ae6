"""Destinations and file-IO settings for the catalogs the Spark tests start (a moto server's Glue and
S3, Iceberg's REST reference server on moto's S3), and what a recorded moto server saw as IAM calls."""
from typing import Any, Dict, List

REGION, KEY = "us-east-1", "testing"


def renamed(destination: Dict[str, Any], catalog: str) -> Dict[str, Any]:
    """The destination under another catalog name: modules that start their own servers (on other
    ports) in one JVM must not share a catalog name."""
    destination["writer"]["catalog_name"] = catalog
    return destination


def glue_destination(url: str) -> Dict[str, Any]:
    return {"type": "ICEBERG", "writer": {
        "catalog_type": "glue", "catalog_name": "gluecat", "iceberg_s3_path": "s3://lake/warehouse",
        "aws_region": REGION, "glue_endpoint": url, "s3_endpoint": url,
        "aws_access_key": KEY, "aws_secret_key": KEY}}


def glue_io(url: str) -> Dict[str, str]:
    return {"s3.endpoint": url, "s3.access-key-id": KEY, "s3.secret-access-key": KEY, "s3.region": REGION,
            "s3.path-style-access": "true"}


def reference_destination(server: Any, catalog: str = "refcat", **auth: str) -> Dict[str, Any]:
    auth = auth or {"oauth2_uri": f"{server.url}/v1/oauth/tokens", "credential": "olake:client-Secret-1",
                    "scope": "catalog"}
    return {"type": "ICEBERG", "writer": {
        "catalog_type": "rest", "catalog_name": catalog, "rest_catalog_url": server.url,
        "iceberg_s3_path": "s3://lake/rest-warehouse", "aws_region": REGION, "s3_endpoint": server.s3_endpoint,
        "aws_access_key": KEY, "aws_secret_key": KEY, **auth}}


def reference_io(server: Any) -> Dict[str, str]:
    return {"s3.endpoint": server.s3_endpoint, "s3.access-key-id": KEY, "s3.secret-access-key": KEY,
            "s3.region": REGION, "s3.path-style-access": "true"}


def recorded_calls(server: Any) -> List[Any]:
    """A moto server's recorded requests as IAM authorizes them: each on its ARNs, S3 lists with their
    prefix (testkit.iam.Call)."""
    from testkit.iam import Call, resources_of
    from testkit.moto_stack import ACCOUNT

    context = (("aws:RequestedRegion", REGION), ("aws:ResourceAccount", ACCOUNT))
    calls = []
    for action, params in server.recorded_requests():
        extra = (("s3:prefix", params["prefix"]),) if action == "s3:ListBucket" else ()
        calls.append(Call(action, resources_of(action, params, REGION, ACCOUNT), context + extra))
    return calls
