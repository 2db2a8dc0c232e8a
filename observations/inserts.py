"""Rows inserted by a statement written out: what ``bulk_create`` inserts (and updates,
on a conflict), without the query it builds and compiles on every call.

For the rows every unit of a session writes (its observations, ledger entries, model
calls), where building and compiling the ORM's INSERT cost the hub more than the
database takes to run it (columns.py is the same for the statements it reads)."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection as default_connection
from django.db import transaction
from django.db.models import Model
from django.db.models.constants import OnConflict

MAX_BOUND_VALUES = 65_535  # PostgreSQL's limit per statement (SQLite's is in its bulk_batch_size)


def rows_insert(model: type[Model], rows: Sequence[Model], *, unique_fields: Sequence[str] = (),
                update_fields: Sequence[str] = (), connection=default_connection) -> None:
    """Insert ``rows`` as ``model.objects.bulk_create`` does (each field's pre_save and
    database value; their primary keys left unset); with ``unique_fields``, a row that
    conflicts on them updates the existing row's ``update_fields`` instead. Values are
    plain values (no expressions, no database defaults: the models it writes have none)."""
    if not rows:
        return
    if bool(unique_fields) != bool(update_fields):
        raise ValueError("a conflict needs both unique_fields and update_fields")
    opts = model._meta
    fields = [f for f in opts.concrete_fields if f is not opts.auto_field and not f.generated]
    quote = connection.ops.quote_name
    suffix = ""
    if unique_fields:
        suffix = " " + connection.ops.on_conflict_suffix_sql(
            fields, OnConflict.UPDATE, [opts.get_field(name).column for name in update_fields],
            [opts.get_field(name).column for name in unique_fields])
    head = f"INSERT INTO {quote(opts.db_table)} ({', '.join(quote(f.column) for f in fields)}) VALUES "
    row = f"({', '.join(['%s'] * len(fields))})"
    batch = max(1, min(connection.ops.bulk_batch_size(fields, rows), MAX_BOUND_VALUES // len(fields)))
    with transaction.atomic(using=connection.alias, savepoint=False), connection.cursor() as cursor:
        for start in range(0, len(rows), batch):
            part = rows[start:start + batch]
            values = [field.get_db_prep_save(field.pre_save(obj, add=True), connection)
                      for obj in part for field in fields]
            cursor.execute(head + ", ".join([row] * len(part)) + suffix, values)
    for obj in rows:
        obj._state.adding, obj._state.db = False, connection.alias
