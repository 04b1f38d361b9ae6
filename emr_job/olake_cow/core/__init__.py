"""The pure core: records, rules and decisions over table metadata. Imports nothing outside the
standard library (no Spark, no py4j, no boto3): the trigger Lambda ships this package whole."""
