"""Ports for the servers the tests start, drawn below the kernel's ephemeral range: a port bind(0)
hands out comes from that range, and between its release and the server's own bind any process's
outgoing connection (Spark's, S3 clients') may take it. Below the range only another listener can,
and the draw is random per process (SystemRandom: a test that seeds `random` cannot make two xdist
workers draw the same ports)."""
import random
import socket

_DRAW = random.SystemRandom()
_FLOOR = 10000


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0  # not Linux: the kernel's choice


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(twin: int = 0) -> int:
    """A port free on 127.0.0.1 now, outside the ephemeral range where there is room below it; with
    `twin`, port + twin is free too (SeaweedFS's gRPC port is its HTTP port + 10000), and below the
    range as well."""
    low = _ephemeral_low() - twin
    room = low - _FLOOR >= 4096
    for _ in range(200):
        port = _DRAW.randrange(_FLOOR, low) if room else _kernels()
        if port + twin <= 65535 and _bindable(port) and (not twin or _bindable(port + twin)):
            return port
    raise RuntimeError(f"no free port (and port + {twin}) on 127.0.0.1")


def _kernels() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
