"""The table properties the job keeps on a mirror before every merge, whichever engine merges."""
import logging
from typing import Dict, List, Optional, Tuple

from .checkpoint import FORMAT_PROPERTY, MODE_PROPERTY, SOURCE_PROPERTY
from .filesize import DEFAULT_TARGET_FILE_MB, TARGET_FILE_SIZE, target_file_size, usable_file_size
from .formats import FORMATS, WRITE_MODE_KEYS, MirrorFormat, built_format
from .identity import DELETE_MODE_PROPERTY, MADE_BY, MADE_BY_PROPERTY, edited_records
from .modes import DeleteMode, SourceMode, mode_set_back
from .snapshots import TableState

log = logging.getLogger("olake_cow")

# Every merge commits a manifest; Iceberg merges manifests in the commit once this many small ones
# accumulate (its default is 100), so planning a mirror never reads a long list of them.
MANIFEST_MERGE = {"commit.manifest.min-count-to-merge": "8"}
WAP_ENABLED = "write.wap.enabled"
# Iceberg's Java API sets it on every new table; pyiceberg writes zstd without recording it.
COMPRESSION = {"write.parquet.compression-codec": "zstd"}
# Parquet is what every engine a mirror is for reads (pyiceberg, DuckDB and Snowflake read no Avro
# or ORC data file); Iceberg's default when the property is unset.
FILE_FORMAT = "write.format.default"
# Codecs every reader reads: Iceberg's lz4 is Hadoop's LZ4 framing, which DuckDB refuses, and Spark
# has no brotli codec to write with.
READABLE_CODECS = ("zstd", "snappy", "gzip", "uncompressed")


def new_mirror_properties(fmt: MirrorFormat, mode: SourceMode, source_name: str, delete_mode: DeleteMode,
                          target_file_mb: Optional[int]) -> Dict[str, str]:
    """The properties a new mirror is created with, whichever engine creates it: its format (format
    version, write modes), who made it from which source in which modes, its merges staged, its
    manifests merged, and its file size."""
    return {**FORMATS[fmt].table_properties(), WAP_ENABLED: "true", **MANIFEST_MERGE, **COMPRESSION,
            MADE_BY_PROPERTY: MADE_BY, SOURCE_PROPERTY: source_name, MODE_PROPERTY: mode.value,
            DELETE_MODE_PROPERTY: str(delete_mode),
            TARGET_FILE_SIZE: target_file_size(target_file_mb or DEFAULT_TARGET_FILE_MB)}


def set_back(source: TableState, mirror: TableState, mirror_name: str) -> Tuple[Dict[str, str], List[str]]:
    """(the job's properties someone set that the run reads as the job set them, with the values to
    set back; a note for each). A run sets them back before it writes anything else: a record of the
    last publish is told from the job's only while the snapshot it names is there, which the next
    expiry may take (identity.edited_records); the mode property as OLake's table tells it
    (modes.mode_set_back)."""
    records, record_note = edited_records(mirror)
    mode, mode_note = mode_set_back(source, mirror, mirror_name)
    return {**records, **mode}, [n for n in (record_note, mode_note) if n]


def kept_properties(mirror: TableState, mode: SourceMode, source_name: str, target_file_mb: Optional[int],
                    table: str = "") -> Dict[str, str]:
    """The properties to set so the mirror records its mode and who made it (mirrors built before
    they were recorded, identity.py), takes an asked file size, keeps manifests merged and its
    merges staged; a value someone else set to what the job cannot run with is reset (logged)."""
    wanted = {MODE_PROPERTY: mode.value, MADE_BY_PROPERTY: MADE_BY, SOURCE_PROPERTY: source_name}
    wanted.update({k: v for k, v in MANIFEST_MERGE.items() if k not in mirror.properties})  # older mirrors
    wanted[WAP_ENABLED] = "true"  # every Spark merge is staged and audited before it is published
    fmt = built_format(mirror)
    if fmt is not None:  # a cow merge that wrote deletes, or a dv merge that rewrote files, fails its audit
        wanted.update(FORMATS[fmt].write_modes())
        wanted[FORMAT_PROPERTY] = fmt.value  # what the table is (built_format), whatever someone set it to
    wanted.update(_file_settings(mirror))
    if target_file_mb:
        wanted[TARGET_FILE_SIZE] = target_file_size(target_file_mb)
    elif TARGET_FILE_SIZE in mirror.properties and usable_file_size(mirror.properties[TARGET_FILE_SIZE]) is None:
        wanted[TARGET_FILE_SIZE] = target_file_size(DEFAULT_TARGET_FILE_MB)
    return _changed(mirror, wanted, table)


def _file_settings(mirror: TableState) -> Dict[str, str]:
    """What every file written into the mirror (by a merge, a compaction) needs of its properties:
    Parquet, and a codec every reader reads."""
    wanted: Dict[str, str] = {}
    if str(mirror.properties.get(FILE_FORMAT, "parquet")).lower() != "parquet":
        wanted[FILE_FORMAT] = "parquet"
    (codec_key, codec), = COMPRESSION.items()
    if str(mirror.properties.get(codec_key, codec)).lower() not in READABLE_CODECS:
        wanted[codec_key] = codec
    return wanted


def rewrite_properties(mirror: TableState, table: str = "") -> Dict[str, str]:
    """The properties to set before maintenance rewrites the mirror's files (compaction, folding),
    which may run without a merge to set them first (write modes do not steer a rewrite)."""
    return _changed(mirror, _file_settings(mirror), table)


def _changed(mirror: TableState, wanted: Dict[str, str], table: str) -> Dict[str, str]:
    """What of `wanted` the mirror does not hold; a value someone else set is logged as reset."""
    changed = {k: v for k, v in wanted.items() if mirror.properties.get(k) != v}
    for key in (WAP_ENABLED, TARGET_FILE_SIZE, FILE_FORMAT, *COMPRESSION, *WRITE_MODE_KEYS, FORMAT_PROPERTY):
        if key in changed and key in mirror.properties:
            log.warning("[%s] the mirror's %s was set to %r by someone else: reset to %s", table, key,
                        mirror.properties[key], changed[key])
    return changed
