"""Arrow's allocator for a python-engine run. pyarrow's default, mimalloc, maps its memory as
transparent huge pages. A run is a new process, so every page it uses is touched for the first
time, and on the 2-CPU VM measured a huge page's first touch was slow and swung by the hour: a
1M-row spread sync's work took 1.5-4.7 s on mimalloc against 0.8-1.7 s on the C library's
allocator, in runs interleaved, at a lower peak RSS (docs/BENCHMARKS.md). mimalloc without huge
pages (MIMALLOC_ALLOW_THP=0) was as fast, but must be set before pyarrow loads; a default pool can
be chosen at any time."""
import os

POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"  # Arrow's own setting: a user who sets it keeps it


def use_system_allocator() -> str:
    """Make the C library's allocator Arrow's default for what this process allocates from now on,
    unless POOL_ENV chose one. Returns the backend in use."""
    import pyarrow as pa

    if not os.environ.get(POOL_ENV):
        pa.set_memory_pool(pa.system_memory_pool())
    return pa.default_memory_pool().backend_name
