"""The Python engine: the same core (planner, checkpoint, identity, audit) behind adapters on Arrow
and pyiceberg, with no JVM (`--engine python`).

What it serves, and why the rest stays on Spark:
  catalog   glue, rest (the destination's OAuth2, token or SigV4; Nessie refused), and jdbc on
            PostgreSQL (pyiceberg's SQL catalog reads and commits the tables Iceberg's JDBC catalog
            makes). Others are refused before anything is read: the file-system catalog
            has no commit pyiceberg makes, and Iceberg's JDBC catalog on SQLite locked up beside
            pyiceberg's in one process when tried (make demo, 2026-11-29).
  mode      readonly. Truncate mode commits to OLake's table (the Spark engine does).
  format    cow. No maintained Python library writes Iceberg v3 deletion vectors yet
            (pyiceberg 0.12 reads them), so dv mirrors stay on Spark.
  work      incremental merges into a mirror the job built, within a budget read from metadata
            (budget.py). First builds, rebuilds, schema or layout changes and a staged write left
            by a Spark run are handed to Spark (`--engine auto`) or refused (`--engine python`).

Rooms: catalog.py (open the catalog, what it serves), manifests.py (files and their rows at a
snapshot, deletes applied), reader.py (a readonly change set, core/readonly.py's intervals),
resolve.py (core/resolution.py's rule in Arrow), merge.py (the copy-on-write merge, audited and
committed with the checkpoint in one catalog commit), table_run.py (the plan -> act loop).
"""
