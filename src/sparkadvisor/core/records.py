"""Catalog records: frozen stdlib dataclasses, and their plain (JSON-ready) form.

A catalog table is declared once, in `core.schema`, with `@record` and `checked(...)`.
At run time it is a plain frozen dataclass: building the index from the cache costs no
pydantic import. When a catalog file changes, `core.validation` hands the same classes
to pydantic, which reads the limits `checked` stores in each field's metadata
(`gt`, `ge`, `le`, `lt`, `min_length`) and the config `record` attaches.
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, Field, FrozenInstanceError, dataclass, field, fields, is_dataclass
from operator import attrgetter
from types import MappingProxyType
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")

PYDANTIC_CONFIG = {"extra": "forbid", "allow_inf_nan": False}
"""What pydantic enforces on every record: unknown keys refused, no inf or nan."""
STRICT_SCALARS = frozenset({"bool", "int", "float", "bool | None", "int | None", "float | None"})
"""Field types pydantic checks strictly: TOML's `true` is not the number 1, `32.5` is not a
layer count, and `1` is not `true` (an int still passes where a float is expected)."""


def checked(*, default: Any = MISSING, default_factory: Any = MISSING, **limits: Any) -> Any:
    """A field with limits that validation enforces (`gt=0`, `min_length=1`, `pattern=...`)."""
    return field(default=default, default_factory=default_factory, metadata=limits)


@overload
def record(cls: type[T], /) -> type[T]: ...
@overload
def record(*, kw_only: bool = True) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(field, checked))
def record(cls: type[T] | None = None, /, *, kw_only: bool = True) -> Any:
    """A frozen, slotted record, keyword-only unless `kw_only=False`; pydantic refuses
    unknown keys when it validates one.

    `dataclasses.dataclass` generates six methods per class by compiling source for each,
    about 1.5 ms a class on this project's machines; a record compiles only `__init__`
    and shares one `__repr__`, `__eq__`, `__hash__` and frozen `__setattr__`."""
    def make(target: type[T]) -> type[T]:
        target.__pydantic_config__ = PYDANTIC_CONFIG  # type: ignore[attr-defined]
        for name, method in _SHARED.items():
            setattr(target, name, method)
        made = dataclass(init=False, repr=False, eq=False, slots=True, kw_only=kw_only)(target)
        for spec in fields(made):  # type: ignore[arg-type]
            if spec.type in STRICT_SCALARS and "strict" not in spec.metadata:
                spec.metadata = MappingProxyType({**spec.metadata, "strict": True})
        made.__init__ = _init_on_first_use(made, kw_only)  # type: ignore[method-assign]
        names = field_names(made)
        made._values = attrgetter(*names) if names else _no_values  # type: ignore[attr-defined]
        return made

    return make(cls) if cls is not None else make


def _init_on_first_use(cls: type, kw_only: bool) -> Callable[..., None]:
    """An `__init__` that compiles the real one the first time a `cls` is made, then hands
    over to it: compiling costs ~0.3 ms a class, and a warm start builds the catalog's
    records with `from_plain`, which needs none."""
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init = _make_init(cls, kw_only)
        cls.__init__ = init  # type: ignore[misc]
        init(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _make_init(cls: type, kw_only: bool) -> Callable[..., None]:
    """`__init__(self, *, a, b=<default>, ...)` setting each field once, then `__post_init__`.

    A frozen record cannot assign `self.a`. While it sets its fields, the record is an instance of
    an unlocked twin of its class (`_unlocked`: the same slots, the default `__setattr__`), so each
    field is one plain slot store; it is its own class again before `__post_init__` runs and before
    anyone else can see it. The two class switches cost about what three slot setters
    (`object.__setattr__`'s faster cousin) do, and a plan's dozen records set some 120 fields a
    build: this halves what making them costs."""
    params, lines = [], []
    env: dict[str, Any] = {"_MISSING": MISSING, "_cls": cls, "_open": _unlocked(cls), "_switch": object.__setattr__}
    for spec in fields(cls):
        if spec.default is not MISSING:
            env[f"_d_{spec.name}"] = spec.default
            params.append(f"{spec.name}=_d_{spec.name}")
            lines.append(f"    self.{spec.name} = {spec.name}")
        elif spec.default_factory is not MISSING:
            env[f"_f_{spec.name}"] = spec.default_factory
            params.append(f"{spec.name}=_MISSING")
            lines.append(f"    self.{spec.name} = _f_{spec.name}() if {spec.name} is _MISSING else {spec.name}")
        else:
            params.append(spec.name)
            lines.append(f"    self.{spec.name} = {spec.name}")
    lines = ["    _switch(self, '__class__', _open)", *lines, "    self.__class__ = _cls"]
    if hasattr(cls, "__post_init__"):
        lines.append("    self.__post_init__()")
    star = "*, " if kw_only and params else ""
    source = f"def __init__(self, {star}{', '.join(params)}):\n" + "\n".join(lines) + "\n"
    exec(compile(source, f"<record {cls.__qualname__}>", "exec"), env)
    init: Callable[..., None] = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _unlocked(cls: type) -> type:
    """A subclass of `cls` that adds no slot (so an instance may switch between the two) and
    assigns its fields as any class does: what a record is while its `__init__` runs."""
    return type(cls.__name__, (cls,), {"__slots__": (), "__setattr__": object.__setattr__,
                                       "__delattr__": object.__delattr__,
                                       "__qualname__": f"{cls.__qualname__}.<unlocked>",
                                       "__module__": cls.__module__})


def _no_values(self: Any) -> tuple[Any, ...]:
    return ()


def _repr(self: Any) -> str:
    inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__dataclass_fields__)
    return f"{type(self).__qualname__}({inner})"


def _eq(self: Any, other: Any) -> bool:
    if type(other) is not type(self):
        return NotImplemented
    return bool(self._values(self) == other._values(other))


def _hash(self: Any) -> int:
    return hash(self._values(self))


def _setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r} of a {type(self).__name__} record")


def _delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r} of a {type(self).__name__} record")


_SHARED = {"__repr__": _repr, "__eq__": _eq, "__hash__": _hash, "__setattr__": _setattr, "__delattr__": _delattr}


def field_names(cls: type) -> list[str]:
    """The keys a table accepts, in declaration order."""
    return [f.name for f in fields(cls)]


def iter_tables(obj: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every record in a catalog object, depth first, with its field path."""
    yield path, obj
    for name in field_names(type(obj)):
        value = getattr(obj, name)
        child = f"{path}.{name}" if path else name
        if is_dataclass(value):
            yield from iter_tables(value, child)
        elif isinstance(value, tuple | list):
            for position, item in enumerate(value):
                if is_dataclass(item):
                    label = f"{child}[{position}]"
                    if isinstance(item_id := getattr(item, "id", None), str):
                        label += f' "{item_id}"'
                    yield from iter_tables(item, label)
        elif isinstance(value, dict):
            for key, item in value.items():
                if is_dataclass(item):
                    yield from iter_tables(item, f"{child}.{key}")


# --- plain form ---------------------------------------------------------------


def to_plain(obj: Any, drop_defaults: bool = False, drop_none: bool = False) -> Any:
    """Records as dicts, tuples as lists: what json.dumps and tomli_w take."""
    if is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        for spec in fields(obj):
            value = getattr(obj, spec.name)
            if (drop_none and value is None) or (drop_defaults and _is_default(spec, value)):
                continue
            out[spec.name] = to_plain(value, drop_defaults, drop_none)
        return out
    if isinstance(obj, tuple | list):
        return [to_plain(item, drop_defaults, drop_none) for item in obj]
    if isinstance(obj, dict):
        return {key: to_plain(item, drop_defaults, drop_none) for key, item in obj.items()}
    return obj


def _is_default(spec: Field[Any], value: Any) -> bool:
    if spec.default is not MISSING:
        return bool(value == spec.default)
    if spec.default_factory is not MISSING:
        return bool(value == spec.default_factory())
    return False


def from_plain(cls: type[T], data: Mapping[str, Any]) -> T:
    """A record rebuilt from `to_plain` output, without validation (the data was validated once).

    It sets the fields itself rather than calling `__init__` (a warm start then compiles no
    catalog record's `__init__`), and runs `__post_init__`'s cross-field checks all the same."""
    decoders = _decoders(cls)
    made = object.__new__(cls)
    for name, default, factory in _field_defaults(cls):
        if name in data:
            value = data[name]
            _set_field(made, name, decoders[name](value) if name in decoders else value)
        elif default is not MISSING:
            _set_field(made, name, default)
        elif factory is not MISSING:
            _set_field(made, name, factory())
        else:
            raise TypeError(f"{cls.__name__} is missing its field {name!r}")
    if len(data) > len(_field_defaults(cls)) or not data.keys() <= _FIELD_NAMES[cls]:
        raise TypeError(f"{cls.__name__} has no field {sorted(data.keys() - _FIELD_NAMES[cls])[0]!r}")
    if hasattr(made, "__post_init__"):
        made.__post_init__()
    return made


_set_field = object.__setattr__
_FIELD_DEFAULTS: dict[type, tuple[tuple[str, Any, Any], ...]] = {}
_FIELD_NAMES: dict[type, frozenset[str]] = {}


def _field_defaults(cls: type) -> tuple[tuple[str, Any, Any], ...]:
    """(name, default, default factory) of each field of `cls`, in order (filled on first use)."""
    found = _FIELD_DEFAULTS.get(cls)
    if found is None:
        found = tuple((f.name, f.default, f.default_factory) for f in fields(cls))
        _FIELD_NAMES[cls] = frozenset(name for name, _, _ in found)
        _FIELD_DEFAULTS[cls] = found
    return found


_DECODERS: dict[type, dict[str, Callable[[Any], Any]]] = {}
"""Per record class, how to rebuild each field that holds records or tuples (filled on first use)."""


def _decoders(cls: type) -> dict[str, Callable[[Any], Any]]:
    found = _DECODERS.get(cls)
    if found is None:
        namespace = vars(sys.modules[cls.__module__])
        found = {}
        for spec in fields(cls):
            if _plain_already(spec.type, namespace):
                continue
            # What typing.get_type_hints does: the annotation text of our own class, in its module.
            hint = eval(spec.type, namespace) if isinstance(spec.type, str) else spec.type
            if (decode := _decoder(hint)) is not None:
                found[spec.name] = decode
        _DECODERS[cls] = found
    return found


def _plain_already(annotation: Any, namespace: dict[str, Any]) -> bool:
    """True for `str`, `float | None`, a Literal alias and the like, which JSON gives back as they were:
    deciding this from the annotation's text spares evaluating every annotation at start-up."""
    if not isinstance(annotation, str) or "[" in annotation:
        return False
    names = [name.strip() for name in annotation.split("|")]
    return all(name in _BUILTIN_NAMES or _literal_alias(namespace.get(name)) for name in names)


_BUILTIN_NAMES = frozenset({"str", "int", "float", "bool", "None"})


def _literal_alias(value: Any) -> bool:
    return typing.get_origin(value) is typing.Literal


def _decoder(hint: Any) -> Callable[[Any], Any] | None:
    """How to rebuild a value of type `hint` from its plain form; None when it is already right."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if is_dataclass(hint):
        return lambda value: from_plain(hint, value)  # type: ignore[arg-type]
    if origin is tuple:
        item = _decoder(args[0])
        if item is None:
            return tuple
        return lambda value: tuple(map(item, value))
    if origin is dict:
        inner = _decoder(args[1])
        return (lambda value: {k: inner(v) for k, v in value.items()}) if inner else None
    if origin in (typing.Union, _UnionType):
        options = [(a, _decoder(a)) for a in args if a is not type(None)]
        return _union_decoder(options)
    return None


_UnionType = type(int | None)


def _union_decoder(options: list[tuple[Any, Callable[[Any], Any] | None]]) -> Callable[[Any], Any] | None:
    """`X | None` decodes as X; `str | tuple[str, ...]` decodes a list as the tuple."""
    active = [(hint, decode) for hint, decode in options if decode is not None]
    if not active:
        return None
    if len(active) > 1:
        raise TypeError(f"cannot decode a union of several record types: {options}")
    decode = active[0][1]
    assert decode is not None
    return lambda value: None if value is None else (decode(value) if isinstance(value, dict | list) else value)
