"""Which data files a source snapshot removed, read by the python engine as Iceberg's Java API (the
Spark engine's) reads them, from manifest records (no files, no JVM)."""
from types import SimpleNamespace

from pyiceberg.manifest import DataFileContent, ManifestEntryStatus

from olake_cow.python_engine.manifests import Manifests

SNAPSHOT = 7


def _entry(path, status, snapshot_id, content=DataFileContent.DATA, seq=3):
    return SimpleNamespace(status=status, snapshot_id=snapshot_id, sequence_number=seq,
                           data_file=SimpleNamespace(file_path=path, content=content))


def _table(manifests):
    snap = SimpleNamespace(snapshot_id=SNAPSHOT, manifests=lambda io: [
        SimpleNamespace(added_snapshot_id=added, manifest_path=f"m{n}.avro",
                        fetch_manifest_entry=lambda io, discard_deleted, entries=entries: [
                            e for e in entries if not (discard_deleted and e.status == ManifestEntryStatus.DELETED)])
        for n, (added, entries) in enumerate(manifests)])
    return SimpleNamespace(metadata=SimpleNamespace(snapshot_by_id=lambda i: snap if i == SNAPSHOT else None), io=None)


def test_every_deleted_data_entry_of_the_snapshots_own_manifests_is_its_removal():
    ours = [
        _entry("a.parquet", ManifestEntryStatus.DELETED, SNAPSHOT),
        # pyiceberg up to 0.11 kept the id of the snapshot that had added the file: still a removal
        _entry("b.parquet", ManifestEntryStatus.DELETED, 3, seq=2),
        _entry("c.parquet", ManifestEntryStatus.EXISTING, 3),
        _entry("d.parquet", ManifestEntryStatus.ADDED, SNAPSHOT),
        _entry("e-deletes.parquet", ManifestEntryStatus.DELETED, SNAPSHOT, content=DataFileContent.POSITION_DELETES),
    ]
    older = [_entry("f.parquet", ManifestEntryStatus.DELETED, 5)]  # a manifest another snapshot added
    removed = Manifests(_table([(SNAPSHOT, ours), (5, older)]), None).removed_data_files(SNAPSHOT)
    assert [(f.path, f.seq) for f in removed] == [("a.parquet", 3), ("b.parquet", 2)]
    assert Manifests(_table([]), None).removed_data_files(99) == []
