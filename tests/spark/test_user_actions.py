"""A determined user between OLake's commits and the job's runs, at random: what they do to the mirror
(a DELETE, an UPDATE, a column added, a rollback, properties, one of the job's own properties set or
removed, an expiry) and to OLake's table (a DELETE, compaction, expiry, a column added, widened or
renamed), with runs, dry runs, maintenance and a second job on OLake's table in between. After every
run: a success leaves the mirror equal to the writer's model; a refusal leaves OLake's table
(truncate mode) and the mirror as they were, advises nothing that drops data, and its advice is
followed here (the rollback or set_current_snapshot it names, dropping the column the user added,
--resume-from-source) until a run succeeds. Each seed is one fixed sequence: more with
USER_ACTION_SEEDS=N (and USER_ACTION_STEPS, USER_ACTION_SALT for other sequences)."""
import os
import random
import re
from typing import Dict, List, Optional

import pytest
from tests.spark.catalog_scenarios import keeps_data, kept

from testkit.lakes import make

pytestmark = [pytest.mark.spark]
SEEDS = int(os.environ.get("USER_ACTION_SEEDS", "1"))
STEPS = int(os.environ.get("USER_ACTION_STEPS", "25"))
SALT = os.environ.get("USER_ACTION_SALT", "")
VARIANTS = [("truncate", "cow", "hadoop"), ("truncate", "dv", "hadoop"), ("truncate", "cow", "jdbc"),
            ("readonly", "dv", "hadoop"), ("readonly", "cow", "jdbc")]  # readonly cow on jdbc: either engine
RESTORE = re.compile(r"(rollback_to_snapshot|set_current_snapshot)\('<mirror>', (\d+)\)")
SET_MODE_BACK = re.compile(r"property back \(ALTER TABLE \S+ SET TBLPROPERTIES \('olake-cow.source-mode'='(\w+)'")
# A readonly mirror a second job's truncates keep from a rebuild, when OLake's table no longer leads
# from the snapshot it holds: it keeps its rows and merges no more (what is left: a readonly resume).
STUCK = "cannot be merged further while OLake's table does not lead from the snapshot it holds"
USER_COLUMN = re.compile(r"the mirror's column (\w+) is in no schema of its source")
MIRROR_PROPS = [("write.delete.mode", "merge-on-read"), ("write.update.mode", "copy-on-write"),
                ("write.target-file-size-bytes", "1000"), ("write.metadata.metrics.default", "none"),
                ("commit.retry.num-retries", "0"), ("write.distribution-mode", "range")]
MAINTENANCE = [["--expire-mirror-older-than", "0"],
               ["--maintenance-only", "--expire-mirror-older-than", "0", "--compact-files"],
               ["--compact-files", "--rewrite-manifests"]]
FAR = "TIMESTAMP '2999-01-01 00:00:00'"


class UserActions:
    """One sequence on a lake: the user's pending changes to the mirror and what happened so far."""

    def __init__(self, lake, rng: random.Random, both_engines: bool) -> None:
        self.lake, self.rng, self.both_engines = lake, rng, both_engines
        self.spark = lake.writer.spark
        self.changed_rows = False  # a user's commit or rollback on the mirror, not undone yet
        self.columns: List[str] = []  # columns a user added to the mirror
        self.missed = False  # a resume said changes OLake's table no longer held were missed
        self.records: Dict[str, Optional[str]] = {}  # properties of the job's a user set (None: removed)
        self.trail: List[str] = []
        self.next_key = 1000
        self.widened = False
        self.second_mode = rng.choice(["readonly", "truncate"])
        self.truncated_by_second = False
        self.stuck = False  # see STUCK: the sequence ends there

    def keys(self) -> List[str]:
        return sorted(self.lake.writer.model("t").rows)

    def olake_commit(self) -> None:
        keys, rows, pure, seen = self.keys(), [], [], set()
        for _ in range(self.rng.randint(1, 5)):
            r = self.rng.random()
            key = self.rng.choice(keys) if keys and r < 0.7 else None
            if key is None:
                rows.append({"_olake_id": str(self.next_key), "_op_type": "c", "v": self.next_key, "s": "new"})
                self.next_key += 1
            elif key not in seen and r < 0.6:
                rows.append({"_olake_id": key, "_op_type": "u" if r < 0.45 else "d", "v": self.rng.randint(0, 999)})
            elif key not in seen:
                pure.append(key)
            seen.add(key)
        self.lake.writer.commit("t", rows, pure_deletes=pure)

    def on_mirror(self, sql: str) -> None:
        self.spark.sql(sql.format(m=self.lake.mirror_q("t"), key=self.rng.choice(self.keys() or ["0"])))

    def mirror_commit(self) -> None:
        self.on_mirror(self.rng.choice(["DELETE FROM {m} WHERE _olake_id = '{key}'",
                                        "UPDATE {m} SET v = -7 WHERE _olake_id = '{key}'"]))
        self.changed_rows = True

    def mirror_column(self) -> None:
        name = f"mine{len(self.trail)}"
        self.on_mirror(f"ALTER TABLE {{m}} ADD COLUMN {name} string")
        self.columns.append(name)

    def mirror_rollback(self) -> None:
        past = [r[0] for r in self.spark.sql(f"SELECT snapshot_id FROM {self.lake.mirror_q('t')}.history WHERE "
                                             "is_current_ancestor ORDER BY made_current_at").collect()]
        if len(past) > 1:
            self.call("rollback_to_snapshot", self.lake.cow_ns + ".t_cow", past[-2])
            self.changed_rows = True

    def mirror_property(self) -> None:
        key, value = self.rng.choice(MIRROR_PROPS)
        self.on_mirror(f"ALTER TABLE {{m}} SET TBLPROPERTIES ('{key}'='{value}')")

    def mirror_record(self) -> None:
        """One property of the job's set or removed: a record of its last publish (while the snapshot
        it is of is still there: after an expiry the record is the only one), the format, the source,
        the mode (OLake's table tells it unless a second job truncates it: then the refusal's ALTER)."""
        mirror = self.lake.mirror("t")
        current = mirror.snapshot(mirror.current_id)
        parent = mirror.snapshot(current.parent_id) if current is not None else None
        other = {"cow": "dv", "dv": "cow"}[self.lake.fmt]
        flipped = {"readonly": "truncate", "truncate": "readonly"}[self.lake.mode]
        choices = [("olake-cow.mirror-format", other), ("olake-cow.mirror-format", None),
                   ("olake-cow.source-table", "crm.t"), ("olake-cow.source-table", None),
                   ("olake-cow.source-mode", flipped)]
        if mirror.snapshot(int(mirror.properties.get("olake-cow.data-snapshot", "0"))) is not None:
            choices.append(("olake-cow.data-rows", str(self.rng.randint(0, 99))))
            if parent is not None and parent.summary.get("wap.id"):
                choices += [("olake-cow.data-snapshot", str(parent.snapshot_id)),
                            ("olake-cow.data-checkpoint", parent.summary["wap.id"])]
        key, value = self.rng.choice(choices)
        self.trail[-1] += f" {key}={value}"
        if value is None:
            self.on_mirror(f"ALTER TABLE {{m}} UNSET TBLPROPERTIES ('{key}')")
        else:
            self.on_mirror(f"ALTER TABLE {{m}} SET TBLPROPERTIES ('{key}'='{value}')")
        self.records[key] = value

    def records_pending(self) -> bool:
        props = self.lake.mirror("t").properties
        return any(props.get(k) == v for k, v in self.records.items())

    def mirror_expiry(self) -> None:
        # an expiry over their own change, or over a record they set, is out of reach
        if not (self.changed_rows or self.columns or self.records_pending()):
            self.call("expire_snapshots", self.lake.cow_ns + ".t_cow", None, 1)

    def source_schema(self) -> None:
        """OLake widens v (int to bigint, as its source database's column grew), or someone renames a
        column OLake added (the rows keep their values under the new name)."""
        added = sorted(n for n in self.lake.source("t").fields.values() if n.startswith("oc"))
        if added and self.rng.random() < 0.5:
            name = self.rng.choice(added)
            self.lake.writer.rename_column("t", name, "rn" + name[2:])
            self.trail[-1] += f" rename {name}"
        elif not self.widened:
            self.lake.writer.widen_column("t", "v", "bigint")
            self.widened = True
            self.trail[-1] += " widen v"

    def second_job(self) -> None:
        """A second olake-cow job on OLake's table, into another namespace, in one mode for the whole
        sequence. Of a truncate mirror's source: refused (exit 2), nothing written or truncated (its
        mirror would lack the rows the first job moved out). Of a readonly mirror's: it runs (a
        truncate one truncates OLake's table, whose rows the first mirror keeps)."""
        source, mirror = self.lake.source_metadata(), kept(self.lake, self.lake.mirror_q("t"))
        path = f"{self.lake.dest_path}.second-{len(self.trail)}.json"
        code = self.lake.run_raw("--cow-namespace", self.lake.ns + "_second", "--source-mode", self.second_mode,
                                 "--summary-out", path, repair_ok=True)
        self.trail[-1] += f" {self.second_mode} -> {code}"
        assert kept(self.lake, self.lake.mirror_q("t")) == mirror, (self.trail, "the first job's mirror changed")
        if self.lake.mode == "truncate":
            assert code == 2 and self.lake.source_metadata() == source, (self.trail, "a second job ran")
            return
        assert code == 0, (self.trail, open(path, encoding="utf-8").read()[-2000:])
        self.truncated_by_second |= self.second_mode == "truncate"

    def source_expiry(self) -> None:
        self.call("expire_snapshots", self.lake.ns + ".t", None, self.rng.randint(1, 3))

    def source_delete(self) -> None:
        # truncate (this job's or a second one's): the model holds rows OLake's table no longer does
        if self.lake.mode == "readonly" and not self.truncated_by_second and self.keys():
            key = self.rng.choice(self.keys())
            self.lake.writer.delete_where("t", f"_olake_id = '{key}'", lambda r: r.get("_olake_id") == key)

    def call(self, procedure: str, table: str, snapshot, retain: int = 0) -> None:
        args = (f"table => '{table}', older_than => {FAR}, retain_last => {retain}" if snapshot is None
                else f"'{table}', {snapshot}")
        self.spark.sql(f"CALL {self.lake.catalog}.system.{procedure}({args})")

    def run(self, *extra: str) -> None:
        maintains = any(a.startswith(("--expire", "--compact")) for a in extra)  # the Spark engine's
        engine = ["--engine", "auto" if maintains else self.rng.choice(["auto", "spark", "python"])]
        source, mirror = self.lake.source_metadata(), kept(self.lake, self.lake.mirror_q("t"))
        code, result = self.lake.run_summary(*extra, *(engine if self.both_engines else []))
        self.trail[-1] += f"{list(extra)} -> {code}"
        if "--dry-run" in extra or (code == 2 and "python engine" in (result.get("error") or "")):
            assert self.lake.source_metadata() == source and kept(self.lake, self.lake.mirror_q("t")) == mirror
            return
        if code == 0 and "--maintenance-only" in extra:  # no merge: OLake's commits and the user's change wait
            return
        if code == 0:
            self.check_mirror()
            assert not (self.lake.mode == "truncate" and self.columns), (self.trail, "merged over a user's column")
            self.changed_rows, self.columns = False, []
            return
        error = result["error"] or ""
        assert (code == 1 or (code == 2 and SET_MODE_BACK.search(error))) and keeps_data(error), (self.trail, error)
        if self.lake.mode == "truncate":
            assert self.lake.source_metadata() == source, (self.trail, "OLake's table changed by a refusal", error)
        assert kept(self.lake, self.lake.mirror_q("t")) == mirror, (self.trail, "the mirror changed", error)
        self.follow(error)

    def follow(self, error: str) -> None:
        column, restore, mode = USER_COLUMN.search(error), RESTORE.search(error), SET_MODE_BACK.search(error)
        if STUCK in error:  # OLake's table, expired or rolled back past it, truncated by a second job
            assert self.truncated_by_second, (self.trail, error)
            self.stuck = True
            return
        if mode:  # a flipped mode property OLake's table cannot tell (a second job truncates it)
            assert mode.group(1) == self.lake.mode, (self.trail, error)
            self.on_mirror(f"ALTER TABLE {{m}} SET TBLPROPERTIES ('olake-cow.source-mode'='{mode.group(1)}')")
        elif column and column.group(1) in self.columns:
            self.on_mirror(f"ALTER TABLE {{m}} DROP COLUMN {column.group(1)}")
            self.columns.remove(column.group(1))
        elif restore and self.changed_rows:
            self.call(restore.group(1), self.lake.cow_ns + ".t_cow", restore.group(2))
            self.changed_rows = False
        elif "--resume-from-source" in error:
            code, result = self.lake.run_summary("--resume-from-source")
            assert code == 0 or self.changed_rows or self.columns, (self.trail, result)
            # OLake's compaction dropped deletes of keys only the mirror holds and its expiry took
            # them before they were merged: the resume says they are missed (the model has them).
            self.missed |= any("expired before they were merged" in n for n in result.get("notes") or [])
            if code == 0:
                self.check_mirror()
        else:
            raise AssertionError(f"a refusal whose advice cannot be followed: {self.trail} {error}")
        self.trail.append(f"advice followed: {error[:60]}...")

    def check_mirror(self) -> None:
        if not self.missed:
            try:
                self.lake.assert_mirror_matches("t", engines=("pyiceberg",))
            except AssertionError as exc:
                raise AssertionError(f"{self.trail}: {exc}") from None


@pytest.mark.parametrize("seed", range(SEEDS))
@pytest.mark.parametrize("variant", VARIANTS, ids="-".join)
def test_a_determined_users_actions_between_syncs_never_cost_a_row(make_lake, destinations, variant, seed):
    mode, fmt, kind = variant
    lake = make_lake(destinations[kind], kind, mode, fmt)
    make(lake, n=30)
    assert lake.run() == 0
    user = UserActions(lake, random.Random(f"{variant}{seed}{SALT}"), both_engines=(mode, fmt) == ("readonly", "cow"))
    actions = {"olake commit": (6, user.olake_commit), "run": (5, user.run), "mirror commit": (2, user.mirror_commit),
               "mirror column": (1, user.mirror_column), "mirror rollback": (1, user.mirror_rollback),
               "mirror property": (1, user.mirror_property), "mirror expiry": (1, user.mirror_expiry),
               "mirror record": (1, user.mirror_record),
               "source column": (1, lambda: lake.writer.add_column("t", f"oc{len(user.trail)}", "string")),
               "source schema": (1, user.source_schema), "second job": (1, user.second_job),
               "source expiry": (1, user.source_expiry),
               "source compaction": (1, lambda: lake.writer.rewrite_files("t")),
               "source delete": (1, user.source_delete), "dry run": (1, lambda: user.run("--dry-run")),
               "maintenance": (1, lambda: user.run(*user.rng.choice(MAINTENANCE)))}
    names = list(actions)
    for _ in range(STEPS):
        name = user.rng.choices(names, weights=[actions[n][0] for n in names])[0]
        user.trail.append(name)
        actions[name][1]()
        if user.stuck:
            return
    for _ in range(5):  # the end: the user follows the advice until a run succeeds
        code, result = lake.run_summary()
        if code == 0:
            break
        user.trail.append("run -> 1")
        user.follow(result["error"] or "")
        if user.stuck:
            return
    assert code == 0, (user.trail, result)
    user.check_mirror()
