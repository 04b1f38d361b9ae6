"""A throw-away PostgreSQL server for the JDBC catalog (Debian's `postgresql` package).

PostgreSQL refuses to run as root, so when we are root the server runs as the `postgres` user.
"""
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import List, Optional

from testkit.ports import free_port

JDBC_JAR = "/usr/share/java/postgresql.jar"
# A test run's Spark sessions each keep their JDBC catalog's connections (Iceberg's client pool) for
# the run: one server serves every jdbc lake of a worker, more than PostgreSQL's default 100.
MAX_CONNECTIONS = 400


def pg_bin() -> Optional[str]:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return os.path.dirname(found[-1])
    path = shutil.which("pg_ctl")
    return os.path.dirname(path) if path else None


def available() -> str:
    """'' when a server can be started here, else why not."""
    if pg_bin() is None:
        return "PostgreSQL server binaries not found (apt-get install postgresql)"
    if not os.path.exists(JDBC_JAR):
        return f"{JDBC_JAR} not found (apt-get install libpostgresql-jdbc-java)"
    return ""


class PostgresServer:
    def __init__(self) -> None:
        self.bin = pg_bin()
        self.dir = tempfile.mkdtemp(prefix="olake-cow-pg-")
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0

    def _run(self, args: List[str], **kw) -> subprocess.CompletedProcess:
        if self.as_postgres:
            args = ["runuser", "-u", "postgres", "--"] + args
        return subprocess.run(args, check=True, capture_output=True, text=True, **kw)

    def start(self) -> "PostgresServer":
        if self.as_postgres:
            shutil.chown(self.dir, "postgres")
            os.chmod(self.dir, 0o755)
        self._run([f"{self.bin}/initdb", "-D", self.data, "-U", "iceberg", "--auth=trust", "-E", "UTF8"])
        self._run([f"{self.bin}/pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "log"), "-w",
                   "-o", f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
                   f"-c max_connections={MAX_CONNECTIONS}", "start"])
        for _ in range(50):
            if self._ready():
                break
            time.sleep(0.2)
        self._run([f"{self.bin}/createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "iceberg",
                   "iceberg"])
        return self

    def _ready(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/iceberg"

    def stop(self) -> None:
        try:
            self._run([f"{self.bin}/pg_ctl", "-D", self.data, "-m", "immediate", "stop"])
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
