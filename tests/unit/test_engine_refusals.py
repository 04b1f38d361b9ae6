"""Which tables the python engine leaves to Spark, from metadata alone (core/engines.py): the job's
python engine and the trigger's express lane read the same answer."""
import pytest

from olake_cow.core.engines import python_refusal
from olake_cow.core.modes import MirrorFormat, SourceMode
from olake_cow.core.planner import TableAsk
from olake_cow.core.snapshots import MISSING, state_from_metadata

pytestmark = pytest.mark.unit

STRUCT = {"type": "struct", "fields": [{"id": 90, "name": "p", "required": False, "type": "int"}]}


def _state(column_type):
    fields = [{"id": 1, "name": "_olake_id", "required": True, "type": "string"},
              {"id": 2, "name": "c", "required": False, "type": column_type}]
    return state_from_metadata({"format-version": 2, "table-uuid": "u", "current-schema-id": 0,
                                "schemas": [{"schema-id": 0, "fields": fields}]})


def _list(element):
    return {"type": "list", "element-id": 91, "element-required": False, "element": element}


def _map(key, value):
    return {"type": "map", "key-id": 92, "key": key, "value-id": 93, "value-required": False, "value": value}


def _struct(name, typ):
    return {"type": "struct", "fields": [{"id": 94, "name": name, "required": False, "type": typ}]}


@pytest.mark.parametrize("typ, column", [
    (_list(STRUCT), "c"),
    (_map("string", STRUCT), "c"),
    (_map(STRUCT, "int"), "c"),
    (_list(_list(STRUCT)), "c"),
    (_map("string", _list(STRUCT)), "c"),
    (_struct("inner", _list(STRUCT)), "c.inner"),
    (_struct("n", "int"), None),
    (_list("long"), None),
    (_map("string", "double"), None),
    (_list(_map("string", "int")), None),
    ("string", None),
])
def test_a_list_or_map_of_structs_anywhere_in_either_table_is_left_to_spark(typ, column):
    """pyiceberg 0.12 turns a null list of structs (or map with struct values) into an empty one."""
    ask = TableAsk()
    pairs = [(_state(typ), MISSING), (_state(typ), _state(typ))]
    if column is not None:
        pairs.append((_state("string"), _state(typ)))  # the mirror's alone (someone changed it)
    for source, mirror in pairs:
        why = python_refusal(source, mirror, SourceMode.READONLY, MirrorFormat.COW, False, ask)
        if column is None:
            assert why is None, why
        else:
            assert why is not None and f"(column {column})" in why and "Spark" in why, why
