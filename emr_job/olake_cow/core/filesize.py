"""The mirror's data file size: one home for the property, its default and its bounds (pure)."""
from typing import Mapping

MB = 1024 * 1024
TARGET_FILE_SIZE = "write.target-file-size-bytes"  # Iceberg's table property
DEFAULT_TARGET_FILE_MB = 128  # smaller than Iceberg's 512: a copy-on-write merge rewrites whole files
MAX_FILE_SIZE_MB = 16384  # 16 GiB files: far past any sensible target, far below Java's long


def target_file_size(mb: int) -> str:
    """The TARGET_FILE_SIZE property value for `mb` megabytes."""
    return str(mb * MB)


def mirror_target_bytes(properties: Mapping[str, str]) -> int:
    """The target data file size of a mirror with these table properties (the default when unset)."""
    return int(properties.get(TARGET_FILE_SIZE) or DEFAULT_TARGET_FILE_MB * MB)
