"""Test kit: an OLake-like MOR writer, an independent model of the resolved table, and helpers
for local Spark. Used by the tests, `make demo`, `make bench` and `make soak`."""
