"""Errors of the Primer SDK.

Every failure the API reports arrives in one envelope,
``{"error": {"code", "message", "details"}}``; the SDK raises it as a
:class:`PrimerError` subclass chosen by ``code`` (the server's error kind),
so callers catch what they can act on (``except primer.NotFound``) and still
see the server's message, HTTP status and, for bad input, the field.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Type


class PrimerError(Exception):
    """An API or transport failure.

    ``kind`` is the API's error code (``not_found``, ``invalid``, ...),
    ``message`` the server's message, ``status`` the HTTP status (0 when no
    answer arrived, 200 for an error reported inside a stream), ``field``
    the input field at fault for ``invalid`` and ``details`` the envelope's
    details object.
    """

    kind: str = "internal"

    def __init__(
        self,
        message: str,
        *,
        kind: Optional[str] = None,
        status: int = 0,
        details: Optional[Mapping[str, Any]] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind
        self.status = status
        self.details: Dict[str, Any] = dict(details or {})
        self.retry_after = retry_after

    @property
    def field(self) -> Optional[str]:
        """The input field the error names (``details.field``), if any."""
        f = self.details.get("field")
        return f if isinstance(f, str) and f else None

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(kind={self.kind!r}, status={self.status}, message={self.message!r})"


class Invalid(PrimerError):
    """400: bad input; ``field`` names it when there is one."""

    kind = "invalid"


class Unauthorized(PrimerError):
    """401: no valid API key (missing, malformed, unknown, revoked, expired)."""

    kind = "unauthenticated"


class Forbidden(PrimerError):
    """403: the key's role or the resource's rules do not allow it."""

    kind = "forbidden"


class NotFound(PrimerError):
    """404: no such resource (or another tenant's, which looks the same)."""

    kind = "not_found"


class MethodNotAllowed(PrimerError):
    """405: the route exists but not with this method."""

    kind = "method_not_allowed"


class Conflict(PrimerError):
    """409: the resource exists, or its state forbids the change."""

    kind = "conflict"


class FailedPrecondition(Conflict):
    """409: the resource is not in a state that allows the call (exec on a
    pending workspace, returning a workspace that is not leased). A
    :class:`Conflict`, so ``except Conflict`` catches every 409."""

    kind = "failed_precondition"


class TooLarge(PrimerError):
    """413: a body or file is past the server's limit."""

    kind = "too_large"


class QuotaExceeded(PrimerError):
    """429: a tenant quota, a stream or upload cap, or the failed-key
    throttle; ``retry_after`` is the server's Retry-After in seconds."""

    kind = "resource_exhausted"


class Internal(PrimerError):
    """500: the server failed; not the caller's fault."""

    kind = "internal"


class Unavailable(PrimerError):
    """503 (or no answer at all): the server, a backend or a workspace's
    runtime cannot be reached now; retrying may help."""

    kind = "unavailable"


class Timeout(PrimerError, TimeoutError):
    """504, or the client's own timeout ran out."""

    kind = "timeout"


class Canceled(PrimerError):
    """The operation was canceled."""

    kind = "canceled"


class WorkspaceFailed(FailedPrecondition):
    """A wait for ``running`` ended because the workspace failed, escalated
    or started terminating: it will not get there by itself."""


_BY_KIND: Dict[str, Type[PrimerError]] = {
    c.kind: c
    for c in (
        Invalid,
        Unauthorized,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        Conflict,
        FailedPrecondition,
        TooLarge,
        QuotaExceeded,
        Internal,
        Unavailable,
        Timeout,
        Canceled,
    )
}

_BY_STATUS: Dict[int, str] = {
    400: "invalid",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    429: "resource_exhausted",
    502: "unavailable",
    503: "unavailable",
    504: "timeout",
}


def error_for(
    kind: str,
    message: str,
    status: int = 0,
    details: Optional[Mapping[str, Any]] = None,
    retry_after: Optional[float] = None,
) -> PrimerError:
    """Returns the exception of the class ``kind`` names (PrimerError for
    a kind this SDK does not know, keeping the kind)."""
    cls = _BY_KIND.get(kind, PrimerError)
    return cls(message, kind=kind, status=status, details=details, retry_after=retry_after)


def from_envelope(body: Any, status: int, retry_after: Optional[float] = None) -> Optional[PrimerError]:
    """Returns the error an envelope (decoded JSON) describes, or None when
    ``body`` is not one."""
    if not isinstance(body, dict):
        return None
    err = body.get("error")
    if not isinstance(err, dict) or not isinstance(err.get("code"), str) or not err["code"]:
        return None
    details = err.get("details") if isinstance(err.get("details"), dict) else {}
    return error_for(err["code"], str(err.get("message") or err["code"]), status, details, retry_after)


def from_response(status: int, content: bytes, method: str, path: str, retry_after: Optional[float] = None) -> PrimerError:
    """Turns a non-2xx answer into an exception: the envelope's when it is
    one, else one derived from the status (a proxy's error page)."""
    try:
        env = from_envelope(json.loads(content), status, retry_after)
    except ValueError:
        env = None
    if env is not None:
        return env
    text = content[:200].decode("utf-8", "replace").strip()
    msg = f"{method} {path}: http {status}"
    if text:
        msg += ": " + text
    return error_for(_BY_STATUS.get(status, "internal"), msg, status, None, retry_after)
