"""How a change set is resolved to one change per key: the rule both engines apply (Spark with a
window in spark/changes.py `compose`, Arrow with one sort in python_engine/resolve.py).

A change set is read as parts (intervals of the source's history, oldest first); each part gives
visible rows and deleted keys. Per key:
  1. the last part that touches the key decides;
  2. within that part a visible row beats a deletion (the row was written after the delete);
  3. among visible rows the newest wins, by ORDER_COLUMNS descending with nulls last (OLake #1189:
     a change set may hold two visible rows for a key).
The winner is an upsert ('U'), a deletion ('D'), or with --delete-mode hard a tombstone row
(`_op_type = 'd'`) becomes a deletion.
"""
KEY = "_olake_id"
ACTION = "__olake_cow_action"  # 'U' upsert the row, 'D' delete the key
UPSERT, DELETE = "U", "D"
ORDER_COLUMNS = ("_cdc_timestamp", "_olake_timestamp")
OP_TYPE, TOMBSTONE = "_op_type", "d"
