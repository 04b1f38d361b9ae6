"""Copy-on-write mirrors of OLake's merge-on-read Iceberg tables."""

__version__ = "0.2.0"
