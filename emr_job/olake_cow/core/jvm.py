"""JVM options of the job's driver and executors, suited to short runs (pure; the job's local launch and the
trigger's StartJobRun both use them).

Every run is a new driver JVM whose work is mostly planning: classes loaded once, queries
compiled once. C1 alone (TieredStopAtLevel=1) compiles that code sooner and cheaper than C2 ever
pays back, and the parallel collector pauses less for a short-lived heap. Measured cold, one
process per run (git history of docs/BENCHMARKS.md, "JVM options"): an incremental cow run at 1M rows 18.6 s
instead of 23.2 s (median of 4, bare start 4.5 s in both), a full load no slower. Only the driver
gets them: executors keep C2 for the data work, later than Java's default (EXECUTOR_JAVA_OPTIONS).
"""
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC -XX:+ExitOnOutOfMemoryError"
DRIVER_JAVA_OPTIONS_KEY = "spark.driver.extraJavaOptions"
EXECUTOR_JAVA_OPTIONS_KEY = "spark.executor.extraJavaOptions"
NONE = "none"  # the setting's value that turns the options off


def _options(setting: str, defaults: str) -> str:
    """A deployment setting's options: empty means `defaults`, "none" none, else as given."""
    value = setting.strip()
    if not value:
        return defaults
    return "" if value.lower() == NONE else value


def driver_java_options(setting: str) -> str:
    """The driver's options for a deployment setting: empty means the defaults above, "none" none."""
    return _options(setting, DRIVER_JAVA_OPTIONS)


def class_archive_option(path: str, exists: bool) -> str:
    """The driver's class data sharing option for an archive at `path` (Java 17, a dynamic archive):
    use it when it `exists`, else write it when the JVM exits (a training run). Classes are
    archived already parsed and verified, so a run loads Spark's and Iceberg's classes from it
    instead of from the jars. A JVM whose class path or build differs from the archive's warns and
    runs without it: the archive can make a run slower never, wrong never."""
    if not path or any(c.isspace() for c in path):
        raise ValueError(f"class archive path {path!r}: give a non-empty path without spaces")
    return f"-XX:{'SharedArchiveFile' if exists else 'ArchiveClassesAtExit'}={path}"


# Executors do the data work. C2 still compiles what runs long (a 16M-row full load), but only a
# method whose calls and loop iterations pass 600,000 (Java: 15,000): a short run's tasks finish on
# C1's code instead of paying C2's compiles on the cores they run on. The minimum of calls stays
# Java's, so a method called once a batch but looping over every row still gets C2 (with it 200,000,
# a 16M-row dv merge took 22.8 s instead of 14.7). Measured cold with executors of their own
# (git history of docs/BENCHMARKS.md, "Executors: C2 later"): a 1M-row dv run 7.3 s -> 6.5 s, 16M-row loads no
# slower; C1 alone was faster still at 1M rows and 40% slower at 16M.
EXECUTOR_JIT_OPTIONS = ("-XX:Tier4InvocationThreshold=500000 -XX:Tier4CompileThreshold=600000 "
                        "-XX:Tier4BackEdgeThreshold=4000000")
EXECUTOR_JAVA_OPTIONS = f"-XX:+ExitOnOutOfMemoryError {EXECUTOR_JIT_OPTIONS}"


def executor_java_options(setting: str, archive: str = "") -> str:
    """The executors' options for a deployment setting (empty: the defaults above, "none": none,
    else as given) and the job image's class archive, if any: the driver's own archive, whose
    training ran the tasks in its JVM too, so an executor of the same class path maps most of its
    classes from it (measured: 80% of them) instead of loading them cold."""
    java = _options(setting, EXECUTOR_JAVA_OPTIONS)
    if archive:
        java = f"{java} {class_archive_option(archive, exists=True)}".strip()
    return java
