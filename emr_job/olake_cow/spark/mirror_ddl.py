"""The mirror's DDL through Iceberg's Java API: create it like its source, and make it follow the
source's renames, new columns, type promotions, partition spec and sort order."""
import json
from typing import List, Mapping, Optional, Tuple

from ..core.errors import ForeignMirrorError, SchemaEvolutionError
from ..core.identity import location_problem, occupied_location_problem
from ..core.renames import field_names, renames
from .catalog import IcebergCatalog, JavaObject, java_message
from .folders import holds_files

SpecTerm = Tuple[str, str]  # (transform, column)
OrderTerm = Tuple[str, str, str, str]  # (transform, column, direction, null order)


class MirrorDDL:
    """Creates a mirror like its source and keeps its schema, spec and sort order following it."""

    def __init__(self, catalog: IcebergCatalog) -> None:
        self.catalog = catalog

    @property
    def iceberg(self) -> JavaObject:
        return self.catalog.iceberg  # resolved once per catalog, on first use

    def create_mirror(self, source_ns: str, source: str, ns: str, table: str,
                      location: Optional[str], properties: Mapping[str, str]) -> None:
        """Create the mirror with the source's current schema, partition spec and sort order
        (sorted by `_olake_id` when the source has none)."""
        src = self.catalog.load(source_ns, source)
        schema = src.schema()
        props = self.catalog.jvm.java.util.HashMap()
        for k, v in properties.items():
            props.put(k, v)
        builder = (self.catalog.catalog.buildTable(self.catalog.ident(ns, table), schema)
                   .withPartitionSpec(src.spec()).withSortOrder(self._wanted_order(src, schema))
                   .withProperties(props))
        if location:
            builder = builder.withLocation(location)
        # Staged first: the location Iceberg picked must be the mirror's own before anything is made.
        tx = builder.createTransaction()
        where = str(tx.table().location())
        name = f"{ns}.{table}"
        problem = location_problem(where, str(src.location()), name)
        if problem is None and holds_files(self.catalog, tx.table().io(), where):
            problem = occupied_location_problem(name, where)
        if problem is not None:
            raise ForeignMirrorError(problem)
        tx.commitTransaction()

    def evolve_mirror(self, source_ns: str, source: str, ns: str, table: str) -> List[str]:
        """Make the mirror follow the source: new columns (nested ones too) and allowed type
        promotions, the partition spec (Iceberg partition evolution) and the sort order. Columns
        only the mirror has are kept. Returns what changed; SchemaEvolutionError when the source
        changed a type in a way Iceberg cannot promote."""
        src, mirror = self.catalog.load(source_ns, source), self.catalog.load(ns, table)
        changed = []
        if self._follow_renames(src, mirror):
            mirror.refresh()
            changed.append("renamed columns")
        if self._follow_schema(src, mirror, f"{source_ns}.{source}"):
            mirror.refresh()
            changed.append("schema")
        if spec_terms(src) != spec_terms(mirror):
            self._follow_spec(src, mirror)
            mirror.refresh()
            changed.append("partition spec")
        if self._follow_order(src, mirror):
            changed.append("sort order")
        return changed

    def _follow_schema(self, src: JavaObject, mirror: JavaObject, name: str) -> bool:
        update = mirror.updateSchema().unionByNameWith(src.schema())
        try:
            wanted = update.apply()
        except Exception as exc:  # noqa: BLE001 - IllegalArgumentException through py4j
            raise SchemaEvolutionError(f"{name}: the source's schema cannot be applied to the "
                                       f"mirror: {java_message(exc)}") from None
        if wanted.sameSchema(mirror.schema()):
            return False
        update.commit()
        return True

    def _follow_renames(self, src: JavaObject, mirror: JavaObject) -> bool:
        """Rename the mirror's columns the source renamed (core/renames.py); whether any was."""
        to_json = self.iceberg.SchemaParser.toJson
        current, held = json.loads(to_json(src.schema())), json.loads(to_json(mirror.schema()))
        if set(field_names(current).values()) <= set(field_names(held).values()):
            return False  # every source name is in the mirror: no older schema is needed
        schemas = [json.loads(to_json(s)) for s in src.schemas().values()]
        found = renames(schemas, int(src.schema().schemaId()), held)
        if not found:
            return False
        update = mirror.updateSchema()
        for old, new in found:
            update = update.renameColumn(old, new)
        update.commit()
        return True

    def _follow_order(self, src: JavaObject, mirror: JavaObject) -> bool:
        schema = mirror.schema()
        wanted = order_terms(self._wanted_order(src, schema), schema)
        if wanted == order_terms(mirror.sortOrder(), schema):
            return False
        replace = mirror.replaceSortOrder()
        for transform, column, direction, nulls in wanted:
            term = self._term(transform, column)
            nulls_java = self.iceberg.NullOrder.valueOf(nulls)
            replace = replace.asc(term, nulls_java) if direction == "ASC" else replace.desc(term, nulls_java)
        replace.commit()
        return True

    def _wanted_order(self, src: JavaObject, schema: JavaObject) -> JavaObject:
        order = src.sortOrder()
        if order.isUnsorted():
            order = self.iceberg.SortOrder.builderFor(schema).asc("_olake_id").build()
        return order

    def _term(self, transform: str, column: str) -> JavaObject:
        exprs = self.iceberg.expressions.Expressions
        name, _, arg = transform.partition("[")
        if name == "identity":
            return exprs.ref(column)
        if name in ("bucket", "truncate"):
            return getattr(exprs, name)(column, int(arg.rstrip("]")))
        if name in ("year", "month", "day", "hour"):
            return getattr(exprs, name)(column)
        raise SchemaEvolutionError(f"partition or sort transform {transform!r} on {column!r} is not supported")

    def _follow_spec(self, src: JavaObject, mirror: JavaObject) -> None:
        want = set(spec_terms(src))
        schema = mirror.schema()
        update = mirror.updateSpec()
        have = set()
        for f in mirror.spec().fields():
            term = (str(f.transform().toString()), str(schema.findColumnName(f.sourceId())))
            if term[0] == "void":
                continue
            have.add(term)
            if term not in want:
                update = update.removeField(f.name())
        for transform, column in sorted(want - have):
            update = update.addField(self._term(transform, column))
        update.commit()


def spec_terms(table: JavaObject) -> List[SpecTerm]:
    schema = table.schema()
    return sorted((str(f.transform().toString()), str(schema.findColumnName(f.sourceId())))
                  for f in table.spec().fields() if str(f.transform().toString()) != "void")


def order_terms(order: JavaObject, schema: JavaObject) -> List[OrderTerm]:
    return [(str(f.transform().toString()), str(schema.findColumnName(f.sourceId())),
             str(f.direction().name()), str(f.nullOrder().name())) for f in order.fields()]
