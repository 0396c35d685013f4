"""``value``: a frozen dataclass for type checkers, a light one at run time.

The Stop hook imports the brain on every stop of every session. ``import dataclasses`` pulls in
``inspect`` and generates code for each class: about 20 ms on a slow machine, more than half of
the hook's budget. The value classes the hook needs (markers, conditions) only need
``__init__`` with defaults, equality, hashing, ``repr`` and immutability, built here from the
class annotations with closures. Type checkers see a real ``dataclasses.dataclass``.
"""

from __future__ import annotations

__all__ = ["value"]

TYPE_CHECKING = False  # the typing module is one more import on the hook's hot path
if TYPE_CHECKING:
    from dataclasses import dataclass as value
else:

    def value(cls=None, /, **_options):
        """Decorate a class whose fields are its annotations (defaults as class attributes)."""
        if cls is None:
            return value
        names = tuple(cls.__dict__.get("__annotations__", {}))  # noqa: RUF063 (no inspect)
        defaults = {name: cls.__dict__[name] for name in names if name in cls.__dict__}
        post_init = cls.__dict__.get("__post_init__")

        def __init__(self, *args, **kwargs):
            if len(args) > len(names):
                raise TypeError(f"{cls.__name__} takes at most {len(names)} arguments")
            values = dict(zip(names, args, strict=False))
            for key, item in kwargs.items():
                if key not in names or key in values:
                    raise TypeError(f"{cls.__name__}: unexpected or repeated argument {key!r}")
                values[key] = item
            for name in names:
                if name not in values:
                    if name not in defaults:
                        raise TypeError(f"{cls.__name__}: missing argument {name!r}")
                    values[name] = defaults[name]
                object.__setattr__(self, name, values[name])
            if post_init is not None:
                post_init(self)

        def _fields(self):
            return tuple(getattr(self, name) for name in names)

        def __eq__(self, other):
            if other.__class__ is not self.__class__:
                return NotImplemented
            return _fields(self) == _fields(other)

        def __hash__(self):
            return hash(_fields(self))

        def __repr__(self):
            inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
            return f"{cls.__name__}({inner})"

        def __setattr__(self, name, item):
            raise AttributeError(f"{cls.__name__} is immutable: cannot set {name!r}")

        for method in (__init__, __eq__, __hash__, __repr__, __setattr__):
            method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
            setattr(cls, method.__name__, method)
        cls.__match_args__ = names
        return cls
