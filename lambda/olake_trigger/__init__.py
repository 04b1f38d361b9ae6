"""Trigger Lambda: starts one EMR Serverless mirror run per namespace after OLake syncs,
on a schedule, or on demand, and publishes each run's results as CloudWatch metrics."""
