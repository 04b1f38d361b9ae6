"""The tests' servers take ports below the kernel's ephemeral range, where no outgoing connection
can take one between the draw and the server's bind."""
import random
import socket

import pytest

from testkit import ports

pytestmark = [pytest.mark.unit]


def test_a_port_is_drawn_below_the_ephemeral_range_and_is_free(monkeypatch):
    monkeypatch.setattr(ports, "_ephemeral_low", lambda: 32768)
    drawn = {ports.free_port() for _ in range(20)}
    assert all(ports._FLOOR <= p < 32768 for p in drawn), drawn
    assert len(drawn) > 1  # drawn, not one fixed port
    with socket.socket() as s:
        s.bind(("127.0.0.1", drawn.pop()))


def test_seeding_random_does_not_fix_the_draw(monkeypatch):
    monkeypatch.setattr(ports, "_ephemeral_low", lambda: 32768)
    random.seed(7)
    first = [ports.free_port() for _ in range(5)]
    random.seed(7)
    assert [ports.free_port() for _ in range(5)] != first


def test_a_port_someone_holds_is_skipped(monkeypatch):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken = held.getsockname()[1]
        free = ports.free_port()
        draws = iter([taken, free])
        monkeypatch.setattr(ports, "_ephemeral_low", lambda: 32768)
        monkeypatch.setattr(ports._DRAW, "randrange", lambda a, b: next(draws))
        assert ports.free_port() == free


def test_a_pair_is_free_and_below_the_range(monkeypatch):
    monkeypatch.setattr(ports, "_ephemeral_low", lambda: 32768)
    for _ in range(20):
        port = ports.free_port(twin=10000)
        assert ports._FLOOR <= port and port + 10000 < 32768
        for p in (port, port + 10000):
            with socket.socket() as s:
                s.bind(("127.0.0.1", p))


def test_a_pair_whose_twin_is_held_is_skipped(monkeypatch):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        twin_taken = held.getsockname()[1]
        free = ports.free_port(twin=10000)
        draws = iter([twin_taken - 10000, free])
        monkeypatch.setattr(ports, "_ephemeral_low", lambda: 65535)
        monkeypatch.setattr(ports._DRAW, "randrange", lambda a, b: next(draws))
        assert ports.free_port(twin=10000) == free


def test_without_room_below_the_range_the_kernel_chooses(monkeypatch):
    monkeypatch.setattr(ports, "_ephemeral_low", lambda: 1024)
    port = ports.free_port()
    assert 0 < port < 65536
