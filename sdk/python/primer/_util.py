"""Small conversions the resources share."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, List, Optional, Sequence, Type, TypeVar, Union
from urllib.parse import quote

from ._decode import decode

T = TypeVar("T")

#: A duration: a Go duration string ("30s", "1h30m"), seconds, or a timedelta.
Duration = Union[str, int, float, timedelta]
#: A command: a list of arguments run as they are, or a string run with ``sh -c``.
Command = Union[str, Sequence[str]]


def seg(s: Any) -> str:
    """Escapes one path segment (an id)."""
    return quote(str(s), safe="")


def dur(v: Optional[Duration]) -> Optional[str]:
    """Writes a duration as the API reads it (a Go duration string)."""
    if v is None or v == "":
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, timedelta):
        v = v.total_seconds()
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"duration: want a string, seconds or a timedelta, not {type(v).__name__}")
    return f"{int(v)}s" if float(v).is_integer() else f"{v:.6f}s"


def seconds(v: Optional[Duration]) -> Optional[float]:
    """Reads a duration as seconds (Go strings: h, m, s, ms, us, ns)."""
    if v is None:
        return None
    if isinstance(v, timedelta):
        return v.total_seconds()
    if isinstance(v, (int, float)):
        return float(v)
    import re

    total = 0.0
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    for num, unit in re.findall(r"([0-9.]+)(h|ms|m|s|us|µs|ns)", v):
        total += float(num) * units[unit]
    return total


def rfc3339(t: Union[str, datetime]) -> str:
    """Writes a time as RFC 3339 (a naive datetime is taken as UTC)."""
    if isinstance(t, str):
        return t
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.isoformat()


def argv(command: Command) -> List[str]:
    """The argument vector of a command (a string runs with ``sh -c``)."""
    if isinstance(command, str):
        return ["sh", "-c", command]
    out = [str(a) for a in command]
    if not out:
        raise ValueError("command is empty")
    return out


def file_path(ws_id: str, p: str) -> str:
    """The URL path of a file: each segment escaped; a leading "/" is kept
    (an absolute path, written files//etc/x) for the server to judge."""
    if p in (".", "/"):
        p = ""
    # Dot segments are escaped: URL libraries resolve them away ("a/../b"
    # becomes "b"), and the server, not the client, judges a path.
    return f"/v1/workspaces/{seg(ws_id)}/files/" + "/".join(
        s.replace(".", "%2E") if s in (".", "..") else quote(s, safe="") for s in p.split("/"))


def compact(d: Dict[str, Any]) -> Dict[str, Any]:
    """Drops None values (fields the API should not see)."""
    return {k: v for k, v in d.items() if v is not None}


def items(cls: Type[T], bind: Optional[Callable[[T], T]] = None) -> Callable[[Any], List[T]]:
    """A parser of ``{"items": [...]}`` into a list of ``cls``."""

    def parse(d: Any) -> List[T]:
        out = [decode(cls, x) for x in ((d or {}).get("items") or [])]
        return [bind(x) for x in out] if bind else out

    return parse
