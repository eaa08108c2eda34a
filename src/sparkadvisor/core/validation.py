"""Validation of catalog data against `core.schema`, by pydantic.

The only core module that imports pydantic, and only when a catalog file has changed
or `check` runs: a warm start-up reads the cached records instead.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

from sparkadvisor.core.schema import Catalog

if TYPE_CHECKING:
    from pydantic import TypeAdapter

T = TypeVar("T")


@cache
def _adapter(cls: type[Any]) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter

    return TypeAdapter(cls)


def validate(cls: type[T], data: Any) -> T:
    """`data` (a dict of one table, as TOML gives it) checked as a `cls` record; raises
    pydantic's ValidationError listing every problem. Calling `cls(...)` checks nothing."""
    adapter: TypeAdapter[T] = _adapter(cls)  # type: ignore[arg-type]
    return adapter.validate_python(data)


def validate_catalog(data: Any) -> Catalog:
    """`data` (parsed TOML) as a Catalog; raises pydantic's ValidationError listing every problem."""
    return validate(Catalog, data)
