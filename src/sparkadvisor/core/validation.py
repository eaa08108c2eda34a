"""Validation of catalog data against `core.schema`, by pydantic.

The only core module that imports pydantic, and only when a catalog file has changed
or `check` runs: a warm start-up reads the cached records instead.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from sparkadvisor.core.schema import Catalog

if TYPE_CHECKING:
    from pydantic import TypeAdapter


@cache
def _catalog_adapter() -> TypeAdapter[Catalog]:
    from pydantic import TypeAdapter

    return TypeAdapter(Catalog)


def validate_catalog(data: Any) -> Catalog:
    """`data` (parsed TOML) as a Catalog; raises pydantic's ValidationError listing every problem."""
    return _catalog_adapter().validate_python(data)
