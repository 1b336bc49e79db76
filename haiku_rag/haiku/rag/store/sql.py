"""The store's SQL literals: the one place a value or a list of ids becomes a LanceDB ``where``
clause (imported by the engine, the documents module, the vectors module and search; never
above the client: scopes travel as ids)."""

from __future__ import annotations


def sql_quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: list[str] | set[str]) -> str:
    return f"{column} IN ({', '.join(sql_quote(v) for v in sorted(values))})"
