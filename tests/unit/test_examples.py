"""The destination examples the README points to (examples/destinations/) pass the job's own rules
and give the catalog properties their flavour needs; each is named in the README's REST table."""
import glob
import json
import os

import pytest

from olake_cow.core.config import catalog_properties, parse_destination

pytestmark = pytest.mark.unit
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "destinations", "*.json")))
FLAVOURS = {"lakekeeper", "polaris", "nessie", "unity", "s3tables", "glue-rest"}


def test_there_is_one_example_per_rest_flavour_and_the_readme_names_each():
    names = {os.path.basename(p)[len("rest-"):-len(".json")] for p in EXAMPLES}
    assert names == FLAVOURS
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    for path in EXAMPLES:
        assert f"(examples/destinations/{os.path.basename(path)})" in readme, path


REFUSED = {"rest-nessie.json": "is Nessie"}  # OLake's config, which the job refuses (README, REST catalogs)


@pytest.mark.parametrize("path", [p for p in EXAMPLES if os.path.basename(p) not in REFUSED], ids=os.path.basename)
def test_each_example_passes_the_jobs_rules_with_one_way_to_authenticate(path):
    with open(path, encoding="utf-8") as f:
        cfg = parse_destination(json.load(f))
    public, secret = catalog_properties(cfg)
    assert cfg.catalog_type == "rest" and public["type"] == "rest" and public["uri"].startswith("https://")
    ways = [bool(secret.get("credential")), bool(secret.get("token")), public.get("rest.sigv4-enabled") == "true"]
    assert sum(ways) == 1, (public, sorted(secret))
    if secret.get("credential"):
        assert public["oauth2-server-uri"].startswith("https://") and public.get("scope")
    for value in secret.values():
        assert value not in json.dumps(public)


@pytest.mark.parametrize("flavour", ["lakekeeper", "polaris", "unity"])
def test_the_flavours_that_hand_out_storage_keys_ask_for_them(flavour):
    """Their S3 is usually reachable only with the keys LoadTable vends (README, REST catalogs)."""
    with open(os.path.join(ROOT, "examples", "destinations", f"rest-{flavour}.json"), encoding="utf-8") as f:
        public, _ = catalog_properties(parse_destination(json.load(f)))
    assert public["header.X-Iceberg-Access-Delegation"] == "vended-credentials"


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_examples_of_refused_flavours_are_refused_in_one_line(name):
    from olake_cow.core.errors import ConfigError

    with open(os.path.join(ROOT, "examples", "destinations", name), encoding="utf-8") as f:
        config = json.load(f)
    with pytest.raises(ConfigError, match=REFUSED[name]) as refused:
        parse_destination(config)
    assert "\n" not in str(refused.value)
