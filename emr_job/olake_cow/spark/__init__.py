"""Spark and Iceberg (Java, through py4j) adapters around the core: reading change sets, writing,
auditing and publishing mirrors, maintenance, and the per-table loop."""
