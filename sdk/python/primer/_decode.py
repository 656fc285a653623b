"""Decoding of API answers into the SDK's dataclasses.

Fields are read by name from the JSON the server sends; unknown fields are
ignored (a newer server may send more) and missing ones take the
dataclass's default, so the SDK keeps working across server versions.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import typing
from datetime import datetime, timezone
from typing import Any, Dict, Optional, Tuple, Type, TypeVar

T = TypeVar("T")

_hints: Dict[type, Dict[str, Any]] = {}
_fields: Dict[type, Tuple[Tuple[str, str], ...]] = {}

# Go writes times in RFC 3339 with up to nine fractional digits; Python's
# fromisoformat takes at most six.
_FRAC = re.compile(r"(\.\d{6})\d+")


def parse_time(v: Any) -> Optional[datetime]:
    """Parses an RFC 3339 time as the API writes it; None for none."""
    if v is None or v == "":
        return None
    if isinstance(v, datetime):
        return v
    s = _FRAC.sub(r"\1", str(v))
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    t = datetime.fromisoformat(s)
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t


def decode(cls: Type[T], data: Any) -> T:
    """Builds a ``cls`` dataclass from decoded JSON."""
    return _convert(cls, data)


def _type_hints(cls: type) -> Dict[str, Any]:
    h = _hints.get(cls)
    if h is None:
        mod = sys.modules[cls.__module__]
        h = typing.get_type_hints(cls, vars(mod))
        _hints[cls] = h
        # A field's JSON name is metadata "json", else its name without a
        # trailing underscore (from_ reads "from").
        _fields[cls] = tuple(
            (f.name, f.metadata.get("json") or (f.name[:-1] if f.name.endswith("_") else f.name))
            for f in dataclasses.fields(cls)
            if f.init
        )
    return h


def _convert(tp: Any, v: Any) -> Any:
    if v is None:
        return None
    if tp is Any:
        return v
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(v, dict):
            return v
        hints = _type_hints(tp)
        kw = {}
        for name, key in _fields[tp]:
            if key in v:
                kw[name] = _convert(hints[name], v[key])
        return tp(**kw)
    if tp is datetime:
        return parse_time(v)
    if tp in (int, float, str, bool):
        if tp is float and isinstance(v, int):
            return float(v)
        return v
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union:
        inner = [a for a in args if a is not type(None)]
        return _convert(inner[0], v) if len(inner) == 1 else v
    if origin in (list, typing.List) and isinstance(v, list):
        return [_convert(args[0], x) for x in v] if args else v
    if origin in (dict, typing.Dict) and isinstance(v, dict):
        return {k: _convert(args[1], x) for k, x in v.items()} if args else v
    return v
