"""Checks that need the machine or AWS but not Spark, run before Spark starts: a run that can only
fail (no credentials, a metastore that does not answer) is refused in seconds with exit 2, instead
of failing or hanging minutes into a billed run."""
import os
import re
import socket
from typing import List, Optional, Tuple
from urllib.parse import urlsplit

from .core.config import CatalogType, DestinationConfig, is_s3
from .core.errors import ConfigError, aws_error_code
from .core.uris import split_s3

# How long a catalog server may take to accept a connection (OLAKE_COW_CONNECT_TIMEOUT overrides).
CONNECT_TIMEOUT_S = 10.0
_JDBC_HOST = re.compile(r"^jdbc:(postgresql|mysql|mariadb)://(?:[^@/]*@)?([^:/?,]+)(?::(\d+))?", re.IGNORECASE)
_JDBC_PORTS = {"postgresql": 5432, "mysql": 3306, "mariadb": 3306}


def catalog_servers(cfg: DestinationConfig) -> List[Tuple[str, int, str]]:
    """(host, port, what) of the servers the catalog talks to over TCP (Hive metastore, JDBC database)."""
    servers: List[Tuple[str, int, str]] = []
    if cfg.catalog_type == CatalogType.HIVE:
        for uri in str(cfg.get("hive_uri")).split(","):
            host, _, port = uri.strip()[len("thrift://"):].partition(":")
            servers.append((host, int(port or 9083), f"the Hive metastore {uri.strip()}"))
    elif cfg.catalog_type == CatalogType.REST:
        parts = urlsplit(str(cfg.get("rest_catalog_url")))
        if parts.hostname:
            rest_port = parts.port or (443 if parts.scheme == "https" else 80)
            servers.append((parts.hostname, rest_port, f"the REST catalog {cfg.get('rest_catalog_url')}"))
    elif cfg.catalog_type == CatalogType.JDBC:
        m = _JDBC_HOST.match(str(cfg.get("jdbc_url")))
        if m:
            kind, host, port = m.group(1).lower(), m.group(2), m.group(3)
            servers.append((host, int(port or _JDBC_PORTS[kind]), f"the JDBC catalog's database {host}"))
    return servers


def check_reachable(cfg: DestinationConfig, timeout: Optional[float] = None) -> None:
    """ConfigError when no catalog server answers within `timeout` seconds (a Hive client would retry
    for minutes without a word)."""
    limit = timeout if timeout is not None else float(os.environ.get("OLAKE_COW_CONNECT_TIMEOUT", CONNECT_TIMEOUT_S))
    servers = catalog_servers(cfg)
    problems = []
    for host, port, what in servers:
        try:
            socket.create_connection((host, port), timeout=limit).close()
            return
        except OSError as exc:
            problems.append(f"{what} ({host}:{port}): {exc.strerror or type(exc).__name__}")
    if problems:
        raise ConfigError(f"cannot reach {'; '.join(problems)} within {limit:g} s: check the address, that the "
                          "server runs, and the network (on EMR: the application's subnets and security groups)")


def check_rest_catalog(cfg: DestinationConfig, timeout: Optional[float] = None) -> None:
    """ConfigError when the REST URL answers but is no Iceberg REST catalog: Iceberg's client adds
    `/v1/...` itself, so a URL that already ends in /v1, one whose `/v1/config` is not found, or one
    that answers like S3 (XML) would only fail after Spark starts, in a raw RESTException."""
    if cfg.catalog_type != CatalogType.REST:
        return
    url = str(cfg.get("rest_catalog_url")).rstrip("/")
    if url.endswith("/v1"):
        raise ConfigError(f"writer.rest_catalog_url {url!r} ends with /v1, which Iceberg's client adds itself: "
                          f"use {url[:-3]!r}")
    limit = timeout if timeout is not None else float(os.environ.get("OLAKE_COW_CONNECT_TIMEOUT", CONNECT_TIMEOUT_S))
    probe = f"{url}/v1/config"
    from urllib.error import HTTPError, URLError  # here: urllib.request costs every other run 0.02 s
    from urllib.request import urlopen

    try:
        with urlopen(probe, timeout=limit) as reply:  # an http(s) URL the config rules checked
            status, body = reply.status, reply.read(512)
    except HTTPError as exc:
        status, body = exc.code, exc.read(512)
    except (URLError, OSError):
        return  # reachability is check_reachable's; anything else is left to the run
    text = body.decode("utf-8", "replace").lstrip()
    if text.startswith("<"):
        raise ConfigError(f"writer.rest_catalog_url {url!r} answers {probe} with XML, as an S3 endpoint does, not "
                          "as an Iceberg REST catalog: point it at the catalog (S3 goes in writer.s3_endpoint)")
    if status == 404:
        raise ConfigError(f"writer.rest_catalog_url {url!r}: {probe} is not found (404), so no Iceberg REST catalog "
                          "answers there: check the URL's path (the catalog's base, without /v1)")


def check_credentials(cfg: DestinationConfig) -> None:
    """ConfigError when a Glue catalog or an S3 warehouse has no AWS credentials or region to use
    (the role's on EMR, the profile's or environment's locally), named in one line. A REST catalog
    that is asked to vend them brings its own."""
    if not (cfg.catalog_type == CatalogType.GLUE or is_s3(cfg.warehouse)):
        return
    if cfg.get("aws_access_key") or (cfg.catalog_type == CatalogType.REST and cfg.get("rest_vended_credentials")):
        return
    try:
        import boto3  # on EMR, and in every environment that has the AWS SDK
    except ImportError:
        return
    what = "the Glue catalog" if cfg.catalog_type == CatalogType.GLUE else f"the S3 warehouse {cfg.warehouse}"
    session = boto3.session.Session()
    if session.get_credentials() is None:
        raise ConfigError(f"no AWS credentials for {what}: on EMR the job role provides them; locally set "
                          "AWS_PROFILE (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or writer.aws_access_key "
                          "and writer.aws_secret_key")
    region = cfg.get("glue_region") or cfg.get("aws_region") or session.region_name
    if cfg.catalog_type == CatalogType.GLUE and not region:
        raise ConfigError("no AWS region for the Glue catalog: set writer.aws_region (or writer.glue_region), "
                          "or AWS_REGION")


def check_summary_bucket(target: Optional[str], region: Optional[str]) -> None:
    """ConfigError when an S3 summary's bucket does not exist (found now, not after the whole run).
    Any other answer (no permission to ask, no network) leaves it to the run."""
    if not target or not target.startswith("s3://"):
        return
    try:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        return
    bucket = split_s3(target)[0]
    try:
        boto3.client("s3", region_name=region, config=Config(connect_timeout=3, read_timeout=5,
                                                             retries={"max_attempts": 1})).head_bucket(Bucket=bucket)
    except ClientError as exc:
        if aws_error_code(exc) in ("404", "NoSuchBucket"):
            raise ConfigError(f"--summary-out {target}: bucket {bucket} does not exist") from None
    except BotoCoreError:
        return
