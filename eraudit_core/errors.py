"""Errors the user can act on. Messages name the file, the record and the field."""

from __future__ import annotations


class ERAuditError(Exception):
    """Base of the errors this library raises on purpose."""


class InputError(ERAuditError, ValueError):
    """Bad input (a file, a record, a field, an argument). The CLI exits 2 on it."""


class StoreError(ERAuditError):
    """The database cannot be opened or written (locked, corrupt, newer schema)."""


class CancelledError(ERAuditError):
    """A run was cancelled by the user; what was stored stays stored."""
