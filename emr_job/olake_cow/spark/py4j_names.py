"""Remembers what py4j resolved a Java name to, for the life of the process.

py4j resolves `jvm.org.apache.spark.sql.functions` one segment at a time, each a round trip in
which the JVM tries to load the name as a class: `org`, `org.apache`, ... all fail, and a failed
lookup searches every jar of the driver's class path (Spark's ~250). PySpark resolves its
`functions`, `PythonSQLUtils`, ... this way on every column expression, so a run of many small
merges spends seconds of driver CPU failing to load packages as classes (a 40-table run: 48 s ->
40 s, git history of docs/BENCHMARKS.md). What a name resolves to cannot change while the JVM runs: the driver's
class path is fixed at launch. Names that failed to resolve are not remembered.
"""
import threading
from typing import Any, Callable, Dict, Tuple

MAX_NAMES = 10_000  # a bound, not a tuning knob: a run resolves a few hundred names
_lock = threading.Lock()
_installed = False


def _remembering(resolve: Callable[[Any, str], Any], scope: Callable[[Any, str], Tuple[int, str, str]],
                 names: Dict[Tuple[int, str, str], Any]) -> Callable[[Any, str], Any]:
    def getattr_(self: Any, name: str) -> Any:
        if name.startswith("__"):  # Python's own protocol (copy, pickle, ...): never a Java name
            return resolve(self, name)
        key = scope(self, name)
        found = names.get(key)
        if found is None:
            found = resolve(self, name)  # raises for a name that is neither a class nor a package
            if len(names) < MAX_NAMES:
                names[key] = found
        return found

    return getattr_


def install() -> bool:
    """Make py4j's JVM views and packages remember resolved names (once per process). False when
    this py4j has not the classes it expects (then nothing is changed)."""
    global _installed
    with _lock:
        if _installed:
            return True
        try:
            from py4j import java_gateway as gateway

            view, package = gateway.JVMView, gateway.JavaPackage
            view_get, package_get = view.__getattr__, package.__getattr__
        except (ImportError, AttributeError):
            return False
        names: Dict[Tuple[int, str, str], Any] = {}  # a remembered JavaClass keeps its gateway (and id) alive
        # Per gateway (a process that starts a new JVM gets a new one) and per JVM view (its imports).
        view.__getattr__ = _remembering(view_get, lambda v, n: (id(v._gateway_client), v._id, n), names)
        package.__getattr__ = _remembering(
            package_get, lambda p, n: (id(p._gateway_client), p._jvm_id or "", f"{p._fqn}.{n}"), names)
        _installed = True
        return True
