"""The table id: one rule for every door and every file that names a table.

A table id is part of URLs (``/api/tables/{id}``), MQTT topic levels and, in the broadcast
feed's text files, a directory name (``DIR/<id>/``). So it is 1 to 32 ASCII letters, digits,
``_`` or ``-``: never ``.``, ``/``, a NUL or a newline, never empty (issue 35 point 5).

``is_table_id`` matches the whole string. A Python ``re.match`` of ``^...$`` does not: its
``$`` also matches before a final newline, so ``"7\\n"`` passed the service's own checks.
``TABLE_ID_PATTERN`` is the same rule for JSON Schema and OpenAPI, where ``$`` is the end.
"""

from __future__ import annotations

import re

__all__ = ["TABLE_ID_PATTERN", "TABLE_ID_RULE", "is_table_id"]

TABLE_ID_PATTERN = r"^[A-Za-z0-9_-]{1,32}$"
TABLE_ID_RULE = "1-32 letters, digits, '-' or '_'"
_TABLE_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")


def is_table_id(value: object) -> bool:
    """Whether ``value`` is a table id (a str, matched whole)."""
    return isinstance(value, str) and _TABLE_ID.fullmatch(value) is not None
