"""Which mirror columns follow a source rename (core/renames.py), on Iceberg schema JSON."""
import pytest

from olake_cow.core.renames import field_names, renames

pytestmark = [pytest.mark.unit]


def struct(*fields):
    return {"type": "struct", "fields": list(fields)}


def field(fid, name, typ="string"):
    return {"id": fid, "name": name, "required": False, "type": typ}


def schema(sid, *fields):
    return {"type": "struct", "schema-id": sid, "fields": list(fields)}


KEY = field(1, "_olake_id")


def test_field_names_are_iceberg_full_names_through_structs_lists_and_maps():
    s = schema(0, KEY, field(2, "addr", struct(field(3, "city"))),
               field(4, "tags", {"type": "list", "element-id": 5, "element": struct(field(6, "t")),
                                 "element-required": False}),
               field(7, "m", {"type": "map", "key-id": 8, "key": "string", "value-id": 9,
                              "value": struct(field(10, "x")), "value-required": False}))
    assert field_names(s) == {1: "_olake_id", 2: "addr", 3: "addr.city", 4: "tags", 5: "tags.element",
                              6: "tags.element.t", 7: "m", 8: "m.key", 9: "m.value", 10: "m.value.x"}


def test_a_top_level_rename_and_a_chain_of_renames_map_to_the_name_the_mirror_holds():
    v0 = schema(0, KEY, field(2, "v"), field(3, "s"))
    v1 = schema(1, KEY, field(2, "w"), field(3, "s"))
    v2 = schema(2, KEY, field(2, "amount"), field(3, "s"))
    assert renames([v0, v1], 1, v0) == [("v", "w")]
    assert renames([v0, v1, v2], 2, v0) == [("v", "amount")]  # the mirror never saw "w"
    assert renames([v0, v1, v2], 2, v1) == [("w", "amount")]
    assert renames([v0, v1, v2], 2, v2) == []  # already followed


def test_nested_renames_name_the_mirror_field_by_its_old_full_name_and_skip_what_a_parent_rename_covers():
    old = schema(0, KEY, field(2, "addr", struct(field(3, "city"), field(4, "zip"))))
    new = schema(1, KEY, field(2, "address", struct(field(3, "town"), field(4, "zip"))))
    assert sorted(renames([old, new], 1, old)) == [("addr", "address"), ("addr.city", "town")]


def test_no_rename_when_the_mirror_has_the_new_name_or_not_the_old_one_or_the_column_is_new():
    v0 = schema(0, KEY, field(2, "v"))
    v1 = schema(1, KEY, field(2, "w"), field(3, "v"))  # renamed v -> w, then a new column "v"
    assert renames([v0, v1], 1, schema(5, KEY, field(9, "w"))) == []  # the mirror holds "w" already
    assert renames([v0, v1], 1, schema(5, KEY, field(9, "other"))) == []  # nor "v": nothing to rename
    assert renames([v1], 1, schema(5, KEY)) == []  # one schema: no history
    assert renames([v0], 7, v0) == []  # the current schema id is not listed
