"""Errors the user can act on. Each names where the problem is (file, line, field, or setting)."""

from __future__ import annotations


class MedresError(Exception):
    """Base for errors shown to the user as one line, with a non-zero exit."""


class InputError(MedresError):
    """Bad input data: a file, a line and a field."""

    def __init__(self, path: object, line: int | None, field: str | None, message: str):
        self.path, self.line, self.field, self.message = str(path), line, field, message
        where = self.path if line is None else f"{self.path}:{line}"
        what = f" field '{field}'" if field else ""
        super().__init__(f"{where}:{what} {message}")


class ConfigError(MedresError):
    """A bad setting (model spec, environment variable, flag)."""

    def __init__(self, setting: str, message: str):
        self.setting = setting
        super().__init__(f"setting '{setting}': {message}")
