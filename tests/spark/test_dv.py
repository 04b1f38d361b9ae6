"""What only dv mirrors do (format version 3, merge-on-read with deletion vectors): a merge rewrites
no existing data file and writes deletion vectors and no other delete file, maintenance folds the
vectors, the audit refuses an equality delete, and a mirror's format never changes silently. Every
behaviour tested for cow mirrors runs on dv mirrors too (the `lake`, `rlake` and `tlake` fixtures)."""
import time

import pytest

from olake_cow.core.identity import foreign_change
from olake_cow.core.maintenance import FOLDED_PROPERTY, MaintenanceOptions, maintenance_due
from olake_cow.core.snapshots import ancestors
from olake_cow.spark import merge
from testkit.lakes import rows

pytestmark = [pytest.mark.spark]


@pytest.fixture(params=["readonly", "truncate"])
def dvlake(request, make_lake, destinations):
    """A dv mirror in each source mode (what only dv mirrors do; every other behaviour is tested in
    both formats through the `lake` fixture)."""
    return make_lake(destinations["hadoop"], "hadoop", request.param, "dv")


def merges(lake, table="t"):
    """The mirror's published merge snapshots after its first build, oldest first."""
    chain, _ = ancestors(lake.mirror(table))
    return [s for s in chain if "wap.id" in s.summary or "published-wap-id" in s.summary][1:]


def test_a_dv_mirror_equals_the_model_through_every_kind_of_change(dvlake):
    lake = dvlake
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 60), chunk=20)
    assert lake.run() == 0
    assert lake.mirror("t").format_version == 3
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100, "s": "x"},
                             {"_olake_id": "2", "_op_type": "d"},
                             {"_olake_id": "70", "_op_type": "c", "v": 70}], pure_deletes=["3"])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    twice = [{"_olake_id": "30", "_op_type": "c", "v": 1}, {"_olake_id": "30", "_op_type": "u", "v": 2},
             {"_olake_id": "4", "_op_type": "u", "v": 41}, {"_olake_id": "4", "_op_type": "u", "v": 42}]
    lake.writer.commit("t", twice, dedupe=False)  # OLake #1189: both rows of a key left visible
    lake.writer.add_column("t", "extra", "string")
    lake.writer.widen_column("t", "v", "bigint")
    lake.writer.commit("t", [{"_olake_id": "5", "_op_type": "u", "v": 2**40, "extra": "e"}], pure_deletes=["6", "7"])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    lake.writer.commit("t", [{"_olake_id": "8", "_op_type": "d"}])
    assert lake.run() == 0
    lake.assert_mirror_matches("t")
    for snap in merges(lake):
        assert snap.summary_int("deleted-data-files") == 0, "a dv merge rewrote a data file"
        assert snap.summary_int("added-equality-delete-files") == snap.summary_int("added-position-delete-files") == 0
    assert sum(s.summary_int("added-dvs") for s in merges(lake)) >= 2
    assert lake.mirror("t").snapshot(lake.mirror("t").current_id).summary_int("total-delete-files") > 0


def test_maintenance_folds_the_deletion_vectors(dvlake):
    lake = dvlake
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 100))
    assert lake.run() == 0
    for n in range(3):
        lake.writer.commit("t", [{"_olake_id": str(k), "_op_type": "u", "v": 1000 + k} for k in range(n, 100, 7)],
                           pure_deletes=[str(50 + n)])
        assert lake.run() == 0
    assert lake.mirror("t").snapshot(lake.mirror("t").current_id).summary_int("total-delete-files") > 0
    code, summary = lake.run_summary("--fold-deletes", "--fold-ratio", "0.05")
    assert code == 0, summary
    assert summary["maintenance"]["files_folded"] >= 1
    current = lake.mirror("t").snapshot(lake.mirror("t").current_id)
    assert current.summary_int("total-delete-files") == 0 and current.summary_int("total-position-deletes") == 0
    lake.assert_mirror_matches("t")
    assert foreign_change(lake.mirror("t")) is None  # the fold is the job's own commit


def test_a_fold_that_leaves_thin_deletes_is_not_due_again_until_more_rows_are_deleted(make_lake, destinations):
    # Folding is due once deletion vectors delete 5% of the rows (a quarter of the 20% fold ratio),
    # but a file is folded only at 20%: deletes spread thinner leave a fold nothing to do, and a
    # periodic trigger that still found it due would start an EMR run for nothing each time.
    lake = make_lake(destinations["hadoop"], "hadoop", "readonly", "dv")
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 200))
    assert lake.run() == 0
    opts = MaintenanceOptions(fold_deletes=True, fold_ratio=0.2)
    due = lambda: maintenance_due(opts, lake.source("t"), lake.mirror("t"), None, int(time.time() * 1000), dv=True)  # noqa: E731
    deleted = lambda: lake.mirror("t").snapshot(lake.mirror("t").current_id).summary_int("total-position-deletes")  # noqa: E731

    def delete(keys):
        lake.writer.commit("t", pure_deletes=[str(k) for k in keys])  # rows gone, no tombstone row
        assert lake.run() == 0

    def fold():
        code, summary = lake.run_summary("--fold-deletes", "--fold-ratio", "0.2")
        assert code == 0, summary
        return summary["maintenance"]["files_folded"]

    assert lake.mirror("t").snapshot(lake.mirror("t").current_id).summary_int("total-data-files") == 1
    delete(range(0, 200, 14))  # 15 rows: 7.5%
    assert deleted() == 15 and due() == ["fold_deletes"]
    assert fold() == 0 and lake.mirror("t").properties[FOLDED_PROPERTY] == "15"
    assert due() == []
    delete(range(1, 200, 20))  # 10 more: 5% since the fold left 15, 12.5% in all
    assert deleted() == 25 and due() == ["fold_deletes"]
    assert fold() == 0 and due() == []
    delete(range(2, 200, 10))  # 20 more: 22.5%, over the fold ratio
    assert due() == ["fold_deletes"]
    assert fold() == 1 and deleted() == 0 and lake.mirror("t").properties[FOLDED_PROPERTY] == "0"
    lake.assert_mirror_matches("t")


def test_the_audit_refuses_a_staged_dv_snapshot_that_carries_an_equality_delete(spark, destinations, make_lake,
                                                                                monkeypatch):
    from testkit.model import TableModel

    lake = make_lake(destinations["hadoop"], "hadoop", "readonly", "dv")
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 20))
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100}])
    before = lake.mirror("t")
    real_stage = merge.MirrorWriter.stage

    def stage_with_an_equality_delete(self, cs, marker, mirror, fmt, shape=None, keys=None):
        staged = real_stage(self, cs, marker, mirror, fmt, shape, keys)
        t = self.catalog.load(self.ns, self.name)
        deletes = lake.writer._eq_delete_files(t, ["9"], TableModel(), [])
        delta = t.newRowDelta()
        for f in deletes:
            delta.addDeletes(f)
        delta.set("wap.id", marker.wap_id).stageOnly().commit()  # staged like a merge, with an equality delete
        after = self.catalog.state(self.ns, self.name)
        return max((s for s in after.snapshots if s.summary.get("wap.id") == marker.wap_id and
                    s.snapshot_id != staged.snapshot_id), key=lambda s: s.timestamp_ms)

    monkeypatch.setattr(merge.MirrorWriter, "stage", stage_with_an_equality_delete)
    code, summary = lake.run_summary()
    assert code == 1 and "failed its audit" in summary["error"] and "equality" in summary["error"], summary
    assert lake.mirror("t").current_id == before.current_id  # nothing published
    monkeypatch.undo()
    assert lake.run() == 0
    lake.assert_mirror_matches("t")


def test_a_mirrors_format_changes_only_when_asked_and_the_upgrade_is_in_place(spark, destinations, make_lake,
                                                                              capsys):
    lake = make_lake(destinations["hadoop"], "hadoop", "readonly", "cow")
    lake.writer.create_table("t", [("v", "int"), ("s", "string")])
    lake.writer.backfill("t", rows(0, 20))
    assert lake.run() == 0
    lake.writer.commit("t", [{"_olake_id": "1", "_op_type": "u", "v": 100}])
    before = lake.mirror("t")
    assert lake.run("--mirror-format", "dv") == 2
    assert "--upgrade-mirror" in capsys.readouterr().out
    assert lake.mirror("t").metadata_location == before.metadata_location
    assert lake.run("--mirror-format", "dv", "--upgrade-mirror") == 0
    upgraded = lake.mirror("t")
    assert upgraded.format_version == 3 and upgraded.properties["olake-cow.mirror-format"] == "dv"
    assert upgraded.properties["write.merge.mode"] == "merge-on-read"
    lake.fmt = "dv"
    lake.assert_mirror_matches("t")
    lake.writer.commit("t", [{"_olake_id": "2", "_op_type": "u", "v": 200}])
    assert lake.run() == 0  # without the option the mirror keeps dv
    assert merges(lake)[-1].summary_int("added-dvs") == 1
    lake.assert_mirror_matches("t")
    assert lake.run("--mirror-format", "cow") == 2
    assert "cannot go back to format version 2" in capsys.readouterr().out
