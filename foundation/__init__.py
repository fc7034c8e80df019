"""The floor under every other adrank package: what the steps (`components`, `pipelines`) and the commands and the
local engine (`ops`, `ops.spec_executor`) both need, with no idea of either.

    atomic_write         a small file replaced in one step (temporary file, fsync, `os.replace`)
    process_supervision  process groups and the parent-death signal: nothing a process starts outlives it
    log_lines            a log record as one JSON line (what a step writes, what the engine reads back) and the
                         level a step logs at (`ADRANK_LOG_LEVEL`)
    utc_time             RFC 3339 UTC to the second (`2026-01-04T00:00:00Z`)
    gcs_mount            where a `gs://` URI lies inside a pipeline container (`/gcs/`, or the directory the local
                         engine names in `ADRANK_SPEC_GCS_ROOT`)
    process_table        a process's start time, state and resident memory (psutil)
    local_ports          free TCP ports on 127.0.0.1 for a cluster of processes started here
    canonical_json       the one JSON text where equal values must give equal text (hashes, cache keys)

It imports nothing of adrank's (tests/test_import_graph.py) and nothing outside the standard library but psutil, so
the engine can stand on it without importing any step's code.
"""
