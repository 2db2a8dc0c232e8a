"""Model instances read by a statement written out: the columns of several models in one
row, each value read as the ORM reads it (the field's and the backend's converters).

For the few statements the hub runs on every request, where building and compiling the
ORM's query cost ten times what the database takes to answer it (the gateway key's
look-up: four EXISTS and three joined models, some 5 ms to build and compile, 0.2 ms to
run)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection as default_connection
from django.db.models import Field, Model

Converter = Callable[[Any, Any, Any], Any]


class Columns:
    """A model's concrete columns under a table ``alias`` of a statement, but those
    ``deferred`` (left unread, as the ORM's ``defer`` leaves them: read when used)."""

    def __init__(self, model: type[Model], alias: str, *, deferred: tuple[str, ...] = ()) -> None:
        self.model, self.alias = model, alias
        self.fields: tuple[Field, ...] = tuple(f for f in model._meta.concrete_fields if f.name not in deferred)
        self._converters: dict[str, list[list[tuple[Converter, Any]]]] = {}

    @property
    def table(self) -> str:
        """The model's table and the alias, for a FROM or JOIN."""
        return f"{self._quoted(self.model._meta.db_table)} {self.alias}"

    def column(self, name: str) -> str:
        """A field's column, by the field's name (``room``, ``digest``)."""
        return f"{self.alias}.{self._quoted(self.model._meta.get_field(name).column)}"

    def select(self) -> str:
        """The select list of every concrete column, in ``fields``' order."""
        return ", ".join(f"{self.alias}.{self._quoted(field.column)}" for field in self.fields)

    def instance(self, values: Sequence[Any], connection: Any = default_connection) -> Model:
        """The model instance of ``values`` (this select list's part of a row), as the
        ORM would have made it."""
        converted = []
        for value, converters in zip(values, self._converters_of(connection), strict=True):
            for convert, expression in converters:
                value = convert(value, expression, connection)
            converted.append(value)
        return self.model.from_db(connection.alias, [field.attname for field in self.fields], converted)

    def _converters_of(self, connection: Any) -> list[list[tuple[Converter, Any]]]:
        # As SQLCompiler.get_converters finds them for a column: the backend's, then the field's.
        kept = self._converters.get(connection.vendor)
        if kept is None:
            kept = self._converters[connection.vendor] = [
                [(convert, column) for convert in [*connection.ops.get_db_converters(column),
                                                   *column.get_db_converters(connection)]]
                for column in (field.get_col(self.alias) for field in self.fields)]
        return kept

    @staticmethod
    def _quoted(name: str) -> str:
        return default_connection.ops.quote_name(name)


def instances(row: Sequence[Any], columns: Sequence[Columns], connection: Any = default_connection) -> list[Model]:
    """The instance of each model in ``columns``, from a row that selected their lists in
    that order (and anything after them)."""
    made, start = [], 0
    for part in columns:
        made.append(part.instance(row[start:start + len(part.fields)], connection))
        start += len(part.fields)
    return made
