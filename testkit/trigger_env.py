"""The smallest environment the trigger's settings accept (tests of its rules and requests)."""

ENV = {"OLAKE_SECRET_ID": "s", "STATE_TABLE": "t", "EMR_APPLICATION_ID": "a",
       "EMR_EXECUTION_ROLE_ARN": "arn:aws:iam::1:role/r", "JOB_ENTRY_POINT": "s3://bkt/main.py",
       "JOB_PY_FILES": "s3://bkt/code.zip", "SUMMARY_S3_URI": "s3://bkt/summaries", "SOURCE_NAMESPACES": "sales"}
