"""Reversible edits of a settings JSON document: add a key or a list item, then take it back.

Pure functions over decoded JSON. Each ``apply`` returns a new document and an ``Edit``
recording what it needs to undo itself: the value it replaced, and the objects and lists it
had to create. ``revert`` never touches anything else, so keys added by the user or by Claude
Code in the meantime survive an uninstall.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

JSON = Any
Path = tuple[str, ...]


class SettingsError(ValueError):
    """A settings document whose shape does not allow the edit; nothing was changed."""


@dataclass(frozen=True, slots=True)
class Edit:
    """One change: ``value`` set at ``path``, or appended to the list at ``path``."""

    path: Path
    value: JSON
    append: bool = False
    had_previous: bool = False
    previous: JSON = None
    created: tuple[Path, ...] = ()

    def to_json(self) -> dict[str, JSON]:
        return {
            "path": list(self.path),
            "value": self.value,
            "append": self.append,
            "had_previous": self.had_previous,
            "previous": self.previous,
            "created": [list(p) for p in self.created],
        }

    @classmethod
    def from_json(cls, data: dict[str, JSON]) -> Edit:
        return cls(
            path=tuple(data["path"]),
            value=data["value"],
            append=bool(data["append"]),
            had_previous=bool(data["had_previous"]),
            previous=data["previous"],
            created=tuple(tuple(p) for p in data["created"]),
        )


def set_key(doc: dict[str, JSON], path: Path, value: JSON) -> tuple[dict[str, JSON], Edit]:
    """Set ``path`` (an object key, creating the objects above it) to ``value``."""
    result = copy.deepcopy(doc)
    parent, created = _objects(result, path[:-1])
    key = path[-1]
    edit = Edit(path, value, False, key in parent, parent.get(key), created)
    parent[key] = copy.deepcopy(value)
    return result, edit


def append_item(doc: dict[str, JSON], path: Path, value: JSON) -> tuple[dict[str, JSON], Edit]:
    """Append ``value`` to the list at ``path``, creating the list and objects it needs."""
    result = copy.deepcopy(doc)
    parent, created = _objects(result, path[:-1])
    key = path[-1]
    if key not in parent:
        parent[key] = []
        created = (*created, path)
    elif not isinstance(parent[key], list):
        raise SettingsError(f"{'.'.join(path)} is not a JSON array")
    parent[key].append(copy.deepcopy(value))
    return result, Edit(path, value, True, created=created)


def revert(doc: dict[str, JSON], edit: Edit) -> dict[str, JSON]:
    """Undo ``edit``; parts the user has since changed into something else are left alone."""
    result = copy.deepcopy(doc)
    parent = _find(result, edit.path[:-1])
    key = edit.path[-1]
    if isinstance(parent, dict):
        if edit.append:
            _remove_last(parent.get(key), edit.value)
        elif edit.had_previous:
            parent[key] = copy.deepcopy(edit.previous)
        else:
            parent.pop(key, None)
    for created in sorted(edit.created, key=len, reverse=True):
        holder = _find(result, created[:-1])
        if isinstance(holder, dict) and holder.get(created[-1]) in ({}, []):
            del holder[created[-1]]
    return result


def _objects(doc: dict[str, JSON], path: Path) -> tuple[dict[str, JSON], tuple[Path, ...]]:
    """The object at ``path``, created as needed; also which of those objects were created."""
    node = doc
    created: tuple[Path, ...] = ()
    for depth, key in enumerate(path, start=1):
        if key not in node:
            node[key] = {}
            created = (*created, path[:depth])
        node = node[key]
        if not isinstance(node, dict):
            raise SettingsError(f"{'.'.join(path[:depth])} is not a JSON object")
    return node, created


def _find(doc: JSON, path: Path) -> JSON:
    node = doc
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _remove_last(items: JSON, value: JSON) -> None:
    if isinstance(items, list):
        for index in range(len(items) - 1, -1, -1):
            if items[index] == value:
                del items[index]
                return
