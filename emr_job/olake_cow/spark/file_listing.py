"""Which files a table's snapshots hold, added or removed, read from its manifests through
Iceberg's Java API (what the `files` and `entries` metadata tables give, without a Spark job; a
few py4j calls per file, so for the small sets a run usually reads). Returns typed records."""
from typing import Any, List, Optional, Sequence

from ..core.files import LiveFile, RemovedFile
from ..core.pruning import FileBounds
from .catalog import IcebergCatalog, JavaObject


class FileListing:
    """File listings of one catalog's tables."""

    def __init__(self, catalog: IcebergCatalog) -> None:
        self.catalog = catalog

    @property
    def iceberg(self) -> JavaObject:
        return self.catalog.iceberg  # resolved once per catalog, on first use

    def added_data_sequence(self, namespace: str, table: str, snapshot_id: int) -> Optional[int]:
        """Data sequence number of the first data file a snapshot added (a rewrite gives all its
        outputs the sequence number of the snapshot it started from)."""
        t = self.catalog.load(namespace, table)
        snap = t.snapshot(int(snapshot_id))
        if snap is None:
            return None
        it = snap.addedDataFiles(t.io()).iterator()
        if not it.hasNext():
            return None
        seq = it.next().dataSequenceNumber()
        return int(seq) if seq is not None else None

    def removed_data_files(self, namespace: str, table: str, snapshot_id: int) -> List[RemovedFile]:
        """The data files a snapshot removed."""
        t = self.catalog.load(namespace, table)
        snap = t.snapshot(int(snapshot_id))
        if snap is None:
            return []
        return [RemovedFile(str(f.location()), int(f.dataSequenceNumber())) for f in snap.removedDataFiles(t.io())]

    def data_file_bounds(self, namespace: str, table: str, field_id: int) -> List[FileBounds]:
        """Every data file of the table's current snapshot with the bounds of one string column."""
        t = self.catalog.load(namespace, table)
        if t.currentSnapshot() is None:
            return []
        out = []
        scan = t.newScan().includeColumnStats().planFiles()  # a scan drops column stats unless asked
        try:
            it = scan.iterator()
            while it.hasNext():
                f = it.next().file()
                out.append(FileBounds(str(f.location()), self._text(f.lowerBounds(), field_id),
                                      self._text(f.upperBounds(), field_id), int(f.fileSizeInBytes())))
        finally:
            scan.close()
        return out

    def live_files_after(self, namespace: str, table: str, snapshot_id: int, after_seq: int,
                         key_field_id: Optional[int], path_field_id: int, most: int) -> Optional[List[LiveFile]]:
        """The data and delete files live in a snapshot with a data sequence number above
        `after_seq`; None when the manifests that can hold them list more than `most` files."""
        t = self.catalog.load(namespace, table)
        snap = t.snapshot(int(snapshot_id))
        if snap is None:
            return []
        io, specs = t.io(), t.specs()
        manifests = [m for m in snap.allManifests(io) if int(m.sequenceNumber()) > after_seq]
        if _listed(manifests) > most:
            return None
        out: List[LiveFile] = []
        for m in manifests:
            deletes = str(m.content().name()) == "DELETES"
            reader = (self.iceberg.ManifestFiles.readDeleteManifest(m, io, specs) if deletes
                      else self.iceberg.ManifestFiles.read(m, io, specs))
            try:
                it = reader.iterator()  # live entries only (added and existing)
                while it.hasNext():
                    f = it.next()
                    seq = f.dataSequenceNumber()
                    if seq is not None and int(seq) > after_seq:
                        out.append(self._live(f, int(seq), deletes, key_field_id, path_field_id))
            finally:
                reader.close()
        return out

    def _live(self, f: JavaObject, seq: int, deletes: bool, key_field_id: Optional[int],
              path_field_id: int) -> LiveFile:
        lower, upper = f.lowerBounds(), f.upperBounds()
        ref = f.referencedDataFile() if deletes else None
        eq = f.equalityFieldIds() if deletes else None
        return LiveFile(seq, int(f.content().id()), str(f.location()), str(f.format().name()).upper(),
                        int(f.fileSizeInBytes()), int(f.recordCount()),
                        referenced=str(ref) if ref is not None else None,
                        equality_ids=tuple(int(i) for i in eq) if eq is not None else (),
                        lo=self._text(lower, key_field_id), hi=self._text(upper, key_field_id),
                        ref_lo=self._bytes(lower, path_field_id) if deletes else None,
                        ref_hi=self._bytes(upper, path_field_id) if deletes else None)

    def _text(self, bounds: JavaObject, field_id: Optional[int]) -> Optional[str]:
        """One string column's bound from a file's lower or upper bounds map (None: absent)."""
        value = _bound(bounds, field_id)
        if value is None:
            return None
        types = self.iceberg.types
        return str(types.Conversions.fromByteBuffer(types.Types.StringType.get(), value))

    def _bytes(self, bounds: JavaObject, field_id: Optional[int]) -> Optional[bytes]:
        value = _bound(bounds, field_id)
        return bytes(self.iceberg.util.ByteBuffers.toByteArray(value)) if value is not None else None


def _bound(bounds: JavaObject, field_id: Optional[int]) -> Any:
    return bounds.get(field_id) if bounds is not None and field_id is not None else None


def _listed(manifests: Sequence[JavaObject]) -> float:
    """How many files the manifests list (infinite when a manifest does not say)."""
    total = 0
    for m in manifests:
        added, existing = m.addedFilesCount(), m.existingFilesCount()
        if added is None or existing is None:
            return float("inf")
        total += int(added) + int(existing)
    return total

