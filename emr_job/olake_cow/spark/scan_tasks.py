"""Reads chosen data files of a source snapshot through Iceberg's own Spark reader, with that
snapshot's deletes applied: the file scan tasks of a planning of the snapshot are staged as a task
set (`ScanTaskSetManager`) and read with the `scan-task-set-id` option, as Iceberg's rewrite
actions do (SparkBinPackFileRewriteRunner). A task can also be rebuilt with a chosen subset of its
delete files, to see what a file showed before some deletes.

py4j calls cost ~0.3 ms each, so a plan's file paths are read in one call (the task list's text)
and checked file by file only for the tasks picked; any doubt falls back to one call per task.
"""
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

_TASK_PREFIX = "BaseFileScanTask{file="
_TASK_NEXT = ", partition_data="


def _paths_from_text(text: str, count: int) -> Optional[List[str]]:
    """File paths of a Java task list in order, from its toString(); None if it does not parse."""
    if not text.startswith("[") or not text.endswith("]"):
        return None
    parts = text[1:-1].split(_TASK_PREFIX)
    if parts[0] != "" or len(parts) != count + 1:
        return None
    paths = []
    for part in parts[1:]:
        end = part.find(_TASK_NEXT)
        if end < 0:
            return None
        paths.append(part[:end])
    return paths


class Plan:
    """The file scan tasks of one snapshot, by data file path."""

    def __init__(self, jvm: Any, tasks: Any) -> None:
        self.jvm, self.tasks = jvm, tasks
        size = int(tasks.size())
        paths = _paths_from_text(str(tasks.toString()), size) if size else []
        if paths is None:
            paths = [str(tasks.get(i).file().location()) for i in range(size)]
        self.index: Dict[str, int] = {}
        for i, path in enumerate(paths):
            self.index.setdefault(path, i)

    def __contains__(self, path: str) -> bool:
        return path in self.index

    def __len__(self) -> int:
        return len(self.index)

    def paths(self) -> List[str]:
        return list(self.index)

    def task(self, path: str) -> Any:
        task = self.tasks.get(self.index[path])
        actual = str(task.file().location())
        if actual != path:  # the one-call path listing is checked on every task it picks
            raise RuntimeError(f"scan task for {path} resolved to {actual}")
        return task

    def pick(self, paths: Iterable[str]) -> List[Any]:
        return [self.task(p) for p in paths if p in self.index]


@dataclass(frozen=True)
class FileRef:
    """A file of the table, as its metadata describes it."""

    path: str
    file_format: str  # PARQUET, ORC, AVRO
    size: int
    records: int


class TaskSets:
    _uses_cache: Optional[bool] = None  # the Iceberg on the class path, found once a process
    """Plans snapshots of one table and reads chosen tasks; `close()` unstages everything."""

    def __init__(self, session: Any, table: Any, table_name: str) -> None:
        self.session, self.table, self.name = session, table, table_name
        self.jvm = session._jvm
        self._staged: List[str] = []
        self._plans: Dict[int, Plan] = {}

    def plan(self, snapshot_id: int) -> Plan:
        if snapshot_id not in self._plans:
            scan = self.table.newScan().useSnapshot(int(snapshot_id)).planFiles()
            tasks = self.jvm.org.apache.iceberg.relocated.com.google.common.collect.Lists.newArrayList(scan)
            scan.close()
            self._plans[snapshot_id] = Plan(self.jvm, tasks)
        return self._plans[snapshot_id]

    def with_deletes(self, task: Any, keep: Callable[[Any], bool]) -> Any:
        """The same data file with only the delete files `keep` accepts."""
        jvm = self.jvm
        kept = [d for d in task.deletes() if keep(d)]
        deletes = self.session.sparkContext._gateway.new_array(jvm.org.apache.iceberg.DeleteFile, len(kept))
        for i, d in enumerate(kept):
            deletes[i] = d
        residual = jvm.org.apache.iceberg.expressions.ResidualEvaluator.unpartitioned(
            jvm.org.apache.iceberg.expressions.Expressions.alwaysTrue())
        return jvm.org.apache.iceberg.BaseFileScanTask(
            task.file(), deletes, jvm.org.apache.iceberg.SchemaParser.toJson(task.schema()),
            jvm.org.apache.iceberg.PartitionSpecParser.toJson(task.spec()), residual)

    def _tasks_without_deletes(self, data_files: Sequence[Any], spec: Any) -> List[Any]:
        """Scan tasks of these Java data files under `spec` and the table's current schema, no
        delete file attached."""
        iceberg = self.jvm.org.apache.iceberg
        schema_json = iceberg.SchemaParser.toJson(self.table.schema())
        spec_json = iceberg.PartitionSpecParser.toJson(spec)
        residual = iceberg.expressions.ResidualEvaluator.unpartitioned(iceberg.expressions.Expressions.alwaysTrue())
        no_deletes = self.session.sparkContext._gateway.new_array(iceberg.DeleteFile, 0)
        return [iceberg.BaseFileScanTask(data, no_deletes, schema_json, spec_json, residual) for data in data_files]

    def file_tasks(self, files: Sequence[FileRef]) -> List[Any]:
        """Scan tasks that read chosen files of the table through Iceberg's own reader and the
        table's FileIO (S3FileIO, vended credentials, ...), never a Hadoop path: each file is
        described as an unpartitioned data file. For files whose columns carry the table's field
        ids, such as equality-delete files (read them projected to their columns)."""
        iceberg = self.jvm.org.apache.iceberg
        spec = iceberg.PartitionSpec.unpartitioned()
        return self._tasks_without_deletes(
            [iceberg.DataFiles.builder(spec).withPath(f.path).withFormat(f.file_format)
             .withFileSizeInBytes(int(f.size)).withRecordCount(int(f.records)).build() for f in files], spec)

    def stored_rows(self, snapshot_id: int) -> Any:
        """Every data file of the snapshot as stored, its deletes not applied (the table's current
        schema and spec): for what is cheaper to estimate than to resolve."""
        tasks = self.plan(snapshot_id).tasks
        return self.read(self._tasks_without_deletes([tasks.get(i).file() for i in range(int(tasks.size()))],
                                                     self.table.spec()))

    def read(self, tasks: List[Any]) -> Any:
        """A DataFrame of the tasks' rows (the table's current schema), deletes applied. The tasks
        stay staged until close(): the DataFrame may be evaluated more than once."""
        set_id = f"olake-cow-{uuid.uuid4().hex}"
        jtasks = self.jvm.java.util.ArrayList()
        for t in tasks:
            jtasks.add(t)
        spark_pkg = self.jvm.org.apache.iceberg.spark
        spark_pkg.ScanTaskSetManager.get().stageTasks(self.table, set_id, jtasks)
        self._staged.append(set_id)
        if not self._table_cache():
            return self.session.read.format("iceberg").option("scan-task-set-id", set_id).load(self.name)
        # Iceberg 1.11+ dropped the scan-task-set-id option (an unknown option is ignored: the whole
        # table would be read). Its rewrite actions read a staged set as the table named by the set's
        # id in its table cache; so does this.
        spark_pkg.SparkTableCache.get().add(set_id, self.table)
        return self.session.read.format("iceberg").load(set_id)

    def _table_cache(self) -> bool:
        """Whether this Iceberg reads staged task sets through its SparkTableCache (1.11 and later)."""
        if TaskSets._uses_cache is None:
            from py4j.protocol import Py4JError

            try:  # the option's constant is gone from 1.11 on
                TaskSets._uses_cache = not str(self.jvm.org.apache.iceberg.spark.SparkReadOptions.SCAN_TASK_SET_ID)
            except Py4JError:
                TaskSets._uses_cache = True
        return TaskSets._uses_cache

    def close(self) -> None:
        spark_pkg = self.jvm.org.apache.iceberg.spark
        manager = spark_pkg.ScanTaskSetManager.get()
        for set_id in self._staged:
            manager.removeTasks(self.table, set_id)
            if self._table_cache():
                spark_pkg.SparkTableCache.get().remove(set_id)
        self._staged.clear()
        self._plans.clear()
