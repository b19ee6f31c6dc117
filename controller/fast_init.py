"""A faster ``__init__`` for the frozen, slotted dataclasses the table makes for every event.

A frozen dataclass's generated ``__init__`` sets each field with ``object.__setattr__(self,
name, value)``, which looks the name up on the type again for every field of every instance.
:func:`fast_init` replaces it with one of the same signature that calls each slot's setter
directly (then ``__post_init__``, if the class has one): the instance, its fields, equality,
repr, hash and frozenness are the dataclass's own, and about half the cost of making it.

>>> from dataclasses import dataclass
>>> @fast_init
... @dataclass(frozen=True, slots=True)
... class Pair:
...     left: int
...     right: str = "x"
>>> Pair(1), Pair(1, right="y") == Pair(1, "y")
(Pair(left=1, right='x'), True)
>>> Pair(1).left = 2
Traceback (most recent call last):
...
dataclasses.FrozenInstanceError: cannot assign to field 'left'
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T", bound=type)

PATCHED: dict[type, Any] = {}
"""Every class :func:`fast_init` gave its ``__init__``, with the dataclass's own ``__init__``
it replaced (the tests compare the two)."""


def _setter(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name].__set__
    raise TypeError(f"{cls.__name__}.{name} has no slot")  # pragma: no cover - slots=True


def fast_init(cls: T) -> T:
    """Give the frozen, slotted dataclass ``cls`` an ``__init__`` that sets its slots directly
    (same parameters, defaults and ``__post_init__``). Fields with a default factory, init-only
    and keyword-only fields are not supported (TypeError)."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} is not a frozen dataclass with slots")
    namespace: dict[str, Any] = {}
    args, body = [], []
    for field in dataclasses.fields(cls):
        name = field.name
        if not field.init or field.kw_only or field.default_factory is not dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{name}: fast_init takes plain fields only")
        if field.default is dataclasses.MISSING:
            args.append(name)
        else:
            namespace[f"_default_{name}"] = field.default
            args.append(f"{name}=_default_{name}")
        namespace[f"_set_{name}"] = _setter(cls, name)
        body.append(f"    _set_{name}(self, {name})")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__(self, {', '.join(args)}):\n" + "\n".join(body or ["    pass"])
    exec(source, namespace)  # the code is built from the field names above
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    PATCHED[cls] = cls.__init__
    cls.__init__ = init  # type: ignore[misc]
    return cls
