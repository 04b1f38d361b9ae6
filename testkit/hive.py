"""A throw-away Hive metastore (Thrift) for the hive catalog, run from the jars pyspark already ships
(hive-metastore 2.3.9, Derby, DataNucleus): no download, no Docker. Derby keeps its database in a
temporary folder; the schema is created on first use. Column type changes by position are allowed,
as Iceberg's Hive documentation asks for schema evolution: otherwise the metastore refuses a user's
DROP COLUMN in the middle of a table (the columns after it shift), which test_hive.py makes."""
import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Optional

from testkit.ports import free_port
from testkit.servers import ServerExited, start_again_on_exit, stop_process

SITE = """<?xml version="1.0"?>
<configuration>
  <property><name>javax.jdo.option.ConnectionURL</name><value>jdbc:derby:;databaseName={db};create=true</value></property>
  <property><name>javax.jdo.option.ConnectionDriverName</name><value>org.apache.derby.jdbc.EmbeddedDriver</value></property>
  <property><name>datanucleus.schema.autoCreateAll</name><value>true</value></property>
  <property><name>hive.metastore.schema.verification</name><value>false</value></property>
  <property><name>hive.async.log.enabled</name><value>false</value></property>
  <property><name>hive.metastore.disallow.incompatible.col.type.changes</name><value>false</value></property>
  <property><name>hive.metastore.warehouse.dir</name><value>file://{warehouse}</value></property>
</configuration>
"""


def pyspark_jars() -> str:
    import pyspark

    return os.path.join(os.path.dirname(pyspark.__file__), "jars")


def available() -> str:
    """'' when a metastore can be started here, else why not."""
    if shutil.which("java") is None:
        return "java not found"
    if not any(n.startswith("hive-metastore-") for n in os.listdir(pyspark_jars())):
        return "pyspark ships no hive-metastore jar"
    return ""


class HiveMetastore:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="olake-cow-hms-")
        self.port = free_port()
        self.proc: Optional[subprocess.Popen] = None

    def start(self, timeout_s: float = 120, attempts: int = 3) -> "HiveMetastore":
        """Starts the metastore; if it exits before it listens (its port taken between the draw and its
        bind), again on another port."""
        return start_again_on_exit(lambda: self._start(timeout_s), self._redraw, attempts)

    def _redraw(self) -> None:
        self.port = free_port()

    def _start(self, timeout_s: float) -> "HiveMetastore":
        conf = os.path.join(self.dir, "conf")
        os.makedirs(conf, exist_ok=True)
        shutil.rmtree(os.path.join(self.dir, "metastore_db"), ignore_errors=True)  # a failed attempt's
        with open(os.path.join(conf, "hive-site.xml"), "w", encoding="utf-8") as f:
            f.write(SITE.format(db=os.path.join(self.dir, "metastore_db"), warehouse=os.path.join(self.dir, "wh")))
        classpath = os.pathsep.join([conf, os.path.join(pyspark_jars(), "*")])
        log = os.path.join(self.dir, "metastore.log")
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(["java", "-Xmx512m", "-cp", classpath,
                                          "org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", str(self.port)],
                                         stdout=out, stderr=out, cwd=self.dir, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerExited(f"the Hive metastore exited ({self.proc.returncode}) on port {self.port}; see {log}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the Hive metastore did not listen on {self.port} within {timeout_s} s")

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def stop(self) -> None:
        stop_process(self.proc, self.dir)
