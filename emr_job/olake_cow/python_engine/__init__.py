"""The Python engine: the same core (planner, checkpoint, identity, audit) behind adapters on Arrow
and pyiceberg, with no JVM (`--engine python`).

What it serves, and why the rest stays on Spark:
  catalog   glue, rest (the destination's OAuth2, token or SigV4; Nessie refused), and jdbc on
            PostgreSQL (pyiceberg's SQL catalog reads and commits the tables Iceberg's JDBC catalog
            makes). Others are refused before anything is read: the file-system catalog
            has no commit pyiceberg makes, and Iceberg's JDBC catalog on SQLite locked up beside
            pyiceberg's in one process when tried (make demo, 2026-11-29).
  catalog   (Hive stays on Spark too: pyiceberg 0.12's Hive commit takes the metastore's lock and
            alters the table without the expected-metadata check Iceberg's Java writers send when
            they commit without that lock, so it could overwrite their commit.)
  mode      readonly. Truncate mode commits to OLake's table (the Spark engine does): pyiceberg
            0.12's delete keeps every delete manifest, so a truncate by it would leave OLake's
            equality and position deletes live to be read again with the next change set.
  format    cow. No maintained Python library writes Iceberg v3 deletion vectors yet
            (pyiceberg 0.12 reads them), so dv mirrors stay on Spark.
  work      first builds (made as Spark makes a mirror, create.py), incremental merges, rebuilds
            in place, the source's schema, spec and order followed (evolve.py) and a write a Spark
            run staged and did not publish, within a budget read from metadata (core/budget.py). A
            mirror made anew (drop and create), a change pyiceberg cannot apply, maintenance and
            --verify are handed to Spark (`--engine auto`) or refused (`--engine python`).

Rooms: catalog.py (open the catalog, what it serves), manifests.py (files and their rows at a
snapshot, deletes applied), reader.py (a readonly change set, core/readonly.py's intervals),
resolve.py (core/resolution.py's rule in Arrow), create.py (a new mirror), merge.py (the first
build and the copy-on-write merge, audited and committed with the checkpoint in one catalog
commit), table_run.py (the plan -> act loop), allocator.py (Arrow's memory for a run).
"""
