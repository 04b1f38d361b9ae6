"""py4j_names: a resolved Java name costs one round trip per process, not one per use."""
from types import SimpleNamespace

import pytest
from py4j import java_gateway as gateway
from py4j import protocol as proto

from olake_cow.spark import py4j_names

CLASSES = {"org.apache.spark.sql.functions", "java.lang.Thread"}


class FakeClient:
    """Answers py4j's name lookups as a JVM would: known classes, everything else a package,
    `missing` an error; counts the lookups."""

    def __init__(self):
        self.asked = []
        self.gateway_property = SimpleNamespace(pool=None)
        self.converters = []

    def send_command(self, command):
        name = command.split("\n")[2]  # r, u, the name, the view id
        self.asked.append(name)
        if name.endswith("missing"):
            return proto.ERROR
        if name in CLASSES:
            return proto.SUCCESS_CLASS + name
        return proto.SUCCESS_PACKAGE


@pytest.fixture
def fake_gateway():
    assert py4j_names.install()
    return FakeClient()


def test_a_class_reached_through_packages_is_resolved_once_per_segment(fake_gateway):
    first = gateway.JVMView(fake_gateway, "jvm", id="rj").org.apache.spark.sql.functions
    assert fake_gateway.asked == ["org", "org.apache", "org.apache.spark", "org.apache.spark.sql",
                            "org.apache.spark.sql.functions"]
    again = gateway.JVMView(fake_gateway, "jvm", id="rj").org.apache.spark.sql.functions
    assert again is first and len(fake_gateway.asked) == 5
    assert isinstance(first, gateway.JavaClass) and first._fqn == "org.apache.spark.sql.functions"


def test_views_with_other_imports_resolve_their_own_names(fake_gateway):
    one = gateway.JVMView(fake_gateway, "jvm", id="rj").java.lang.Thread
    other = gateway.JVMView(fake_gateway, "jvm", id="other").java.lang.Thread
    assert fake_gateway.asked.count("java") == 2 and one is not other


def test_a_name_that_fails_is_asked_again(fake_gateway):
    view = gateway.JVMView(fake_gateway, "jvm", id="rj")
    for _ in range(2):
        with pytest.raises(gateway.Py4JError):
            _ = view.missing
    assert fake_gateway.asked.count("missing") == 2


def test_python_protocol_names_never_reach_the_jvm(fake_gateway):
    view = gateway.JVMView(fake_gateway, "jvm", id="rj")
    with pytest.raises(AttributeError):
        _ = view.org.__deepcopy__
    assert fake_gateway.asked.count("org.__deepcopy__") == 0


def test_another_gateway_resolves_its_own_names(fake_gateway):
    """A process that starts a new JVM (a new gateway) must not get the old JVM's classes."""
    first = gateway.JVMView(fake_gateway, "jvm", id="rj").java.lang.Thread
    other = FakeClient()
    second = gateway.JVMView(other, "jvm", id="rj").java.lang.Thread
    assert other.asked == ["java", "java.lang", "java.lang.Thread"]
    assert second is not first and second._gateway_client is other


def test_install_is_idempotent():
    assert py4j_names.install() and py4j_names.install()
    getattr_ = gateway.JVMView.__getattr__
    py4j_names.install()
    assert gateway.JVMView.__getattr__ is getattr_
