"""The properties every merge keeps on a mirror (core/mirror_props.py): what a user set that the
job cannot write with is reset before the merge, and a mirror as the job made it is left alone."""
import logging

import pytest

from olake_cow.core.formats import FORMATS, MirrorFormat
from olake_cow.core.mirror_props import kept_properties, new_mirror_properties, rewrite_properties
from olake_cow.core.modes import DeleteMode, SourceMode
from olake_cow.core.snapshots import TableState

pytestmark = pytest.mark.unit


def made(fmt: MirrorFormat, **changed: str) -> TableState:
    props = new_mirror_properties(fmt, SourceMode.READONLY, "sales.t", DeleteMode.KEEP, None)
    return TableState(True, "u", None, (), {**props, **changed}, format_version=FORMATS[fmt].format_version)


@pytest.mark.parametrize("fmt", list(MirrorFormat))
def test_a_mirror_as_the_job_made_it_keeps_its_properties(fmt):
    assert kept_properties(made(fmt), SourceMode.READONLY, "sales.t", None) == {}


@pytest.fixture
def olake_warnings():
    """The olake_cow logger's records (it may not propagate to the root logger, which caplog reads:
    the Lambda tests hand it to Powertools)."""
    records: list = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    log = logging.getLogger("olake_cow")
    log.addHandler(handler)
    yield records
    log.removeHandler(handler)


def test_write_modes_of_the_other_format_and_a_file_format_readers_cannot_read_are_reset(olake_warnings):
    """A cow merge that wrote delete files, or a dv merge that rewrote files, fails its audit at every
    run; Avro or ORC data files are read by neither pyiceberg, DuckDB nor Snowflake."""
    mor = {k: "merge-on-read" for k in ("write.delete.mode", "write.update.mode", "write.merge.mode")}
    cow = {k: "copy-on-write" for k in mor}
    assert kept_properties(made(MirrorFormat.COW, **mor, **{"write.format.default": "avro"}), SourceMode.READONLY,
                           "sales.t", None, "t") == {**cow, "write.format.default": "parquet"}
    said = [r.getMessage() for r in olake_warnings]
    assert any("write.merge.mode was set to 'merge-on-read' by someone else: reset to copy-on-write" in m
               for m in said), said
    assert kept_properties(made(MirrorFormat.DV, **cow, **{"write.format.default": "ORC"}), SourceMode.READONLY,
                           "sales.t", None) == {**mor, "write.format.default": "parquet"}
    unset = made(MirrorFormat.DV)
    unset.properties.pop("write.merge.mode")  # Iceberg's default is copy-on-write
    assert kept_properties(unset, SourceMode.READONLY, "sales.t", None) == {"write.merge.mode": "merge-on-read"}
    assert kept_properties(made(MirrorFormat.COW, **{"write.format.default": "PARQUET"}), SourceMode.READONLY,
                           "sales.t", None) == {}
    # Hadoop's LZ4 framing DuckDB refuses, a brotli Spark cannot write; what every reader reads is kept
    for codec, kept in (("lz4", "zstd"), ("BROTLI", "zstd"), ("snappy", None), ("GZIP", None)):
        changed = kept_properties(made(MirrorFormat.COW, **{"write.parquet.compression-codec": codec}),
                                  SourceMode.READONLY, "sales.t", None)
        assert changed == ({"write.parquet.compression-codec": kept} if kept else {}), codec


def test_a_rewrite_without_a_merge_resets_only_what_its_files_use():
    """Compaction and folding may run without a merge before them: the file format and codec are
    reset for them, and nothing else a merge keeps (write modes, which do not steer a rewrite, the
    mode, the file size) is touched."""
    m = made(MirrorFormat.DV, **{"write.merge.mode": "copy-on-write", "write.format.default": "orc",
                                 "write.parquet.compression-codec": "lz4", "write.wap.enabled": "false"})
    assert rewrite_properties(m) == {"write.format.default": "parquet", "write.parquet.compression-codec": "zstd"}
    assert rewrite_properties(made(MirrorFormat.COW)) == {}
