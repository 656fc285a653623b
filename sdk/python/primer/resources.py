"""Providers, templates, model providers and agents (``client.providers``,
``client.templates``, ``client.llm_providers``, ``client.agents``), and the
admin's tenants, API keys and audit log."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Union

from ._core import Req, one
from ._decode import decode
from ._util import Duration, compact, dur, items, rfc3339, seg
from .streams import EventStream
from .types import (Agent, AgentModel, APIKey, AuditEntry, CreatedAPIKey, EventPage, LLMProvider, Provider, Quota,
                    Template, Tenant)

if TYPE_CHECKING:  # pragma: no cover
    from .client import _ClientBase


class _Crud:
    """Create, get, list, update and delete of one id-keyed resource."""

    _path = ""
    _cls: Any = None

    def __init__(self, client: "_ClientBase") -> None:
        self._client = client

    def _parse(self, d: Any) -> Any:
        return decode(self._cls, d)

    def _create(self, body: Dict[str, Any]) -> Any:
        return self._client._run(one(Req("POST", self._path, json=body, idempotent=False), self._parse))

    def _update(self, id: str, body: Dict[str, Any]) -> Any:
        return self._client._run(one(Req("PUT", f"{self._path}/{seg(id)}", json=body), self._parse))

    def get(self, id: str) -> Any:
        """The resource ``id``."""
        return self._client._run(one(Req("GET", f"{self._path}/{seg(id)}"), self._parse))

    def list(self, **params: Any) -> List[Any]:
        """Every resource (filtered by the keyword parameters the route takes)."""
        return self._client._run(one(Req("GET", self._path, params=params or None), items(self._cls)))

    def delete(self, id: str) -> None:
        """Deletes the resource ``id``."""
        return self._client._run(one(Req("DELETE", f"{self._path}/{seg(id)}"), lambda d: None))


class Providers(_Crud):
    """``client.providers``: how to reach a backend."""

    _path, _cls = "/v1/providers", Provider

    def create(self, id: str, provider: str, config: Optional[Mapping[str, Any]] = None, shared: Optional[bool] = None) -> Provider:
        """Creates a provider of type ``provider`` (local, worktree,
        container, kubernetes, vm) with its ``config`` document."""
        return self._create(compact({"id": id, "provider": provider, "config": dict(config or {}), "shared": shared}))

    def update(self, id: str, provider: str, config: Optional[Mapping[str, Any]] = None, shared: Optional[bool] = None) -> Provider:
        """Replaces the provider ``id``."""
        return self._update(id, compact({"provider": provider, "config": dict(config or {}), "shared": shared}))


class Templates(_Crud):
    """``client.templates``: the recipes workspaces are made from."""

    _path, _cls = "/v1/templates", Template

    def create(self, id: str, provider_id: str, backend: Mapping[str, Any], description: Optional[str] = None) -> Template:
        """Creates a template on a provider; ``backend`` is its document
        with ``kind`` (``{"kind": "container", "image": ...}``)."""
        return self._create(compact({"id": id, "provider_id": provider_id, "backend": dict(backend), "description": description}))

    def update(self, id: str, provider_id: str, backend: Mapping[str, Any], description: Optional[str] = None) -> Template:
        """Replaces the template ``id`` (its generation grows by one)."""
        return self._update(id, compact({"provider_id": provider_id, "backend": dict(backend), "description": description}))


class LLMProviders(_Crud):
    """``client.llm_providers``: model endpoints agents call."""

    _path, _cls = "/v1/llm-providers", LLMProvider

    def create(self, id: str, kind: str, base_url: str, api_key: Optional[str] = None, api_key_env: Optional[str] = None) -> LLMProvider:
        """Creates a model provider (``kind`` openai or anthropic)."""
        return self._create(compact({"id": id, "kind": kind, "base_url": base_url, "api_key": api_key, "api_key_env": api_key_env}))

    def update(self, id: str, kind: str, base_url: str, api_key: Optional[str] = None, api_key_env: Optional[str] = None) -> LLMProvider:
        """Replaces the model provider ``id`` (``api_key="(redacted)"`` keeps the stored key)."""
        return self._update(id, compact({"kind": kind, "base_url": base_url, "api_key": api_key, "api_key_env": api_key_env}))


def _model(m: Union[AgentModel, Mapping[str, Any]]) -> Dict[str, Any]:
    if isinstance(m, AgentModel):
        return compact({"provider_id": m.provider_id, "model_name": m.model_name, "temperature": m.temperature,
                        "top_p": m.top_p, "max_tokens": m.max_tokens or None})
    return dict(m)


class Agents(_Crud):
    """``client.agents``: a model, its instructions and its tools."""

    _path, _cls = "/v1/agents", Agent

    def _body(self, model: Any, system_prompt: Any, tools: Any, max_turns: Any, timeout: Any, description: Any) -> Dict[str, Any]:
        if isinstance(system_prompt, str):
            system_prompt = [system_prompt]
        return compact({"model": _model(model) if model is not None else None,
                        "system_prompt": list(system_prompt) if system_prompt else None,
                        "tools": list(tools) if tools else None, "max_turns": max_turns or None,
                        "timeout": dur(timeout), "description": description})

    def create(self, id: str, model: Union[AgentModel, Mapping[str, Any]], *, system_prompt: Union[str, Sequence[str], None] = None,
               tools: Optional[Sequence[str]] = None, max_turns: int = 0, timeout: Optional[Duration] = None,
               description: Optional[str] = None) -> Agent:
        """Creates an agent."""
        return self._create(dict(self._body(model, system_prompt, tools, max_turns, timeout, description), id=id))

    def update(self, id: str, model: Union[AgentModel, Mapping[str, Any]], *, system_prompt: Union[str, Sequence[str], None] = None,
               tools: Optional[Sequence[str]] = None, max_turns: int = 0, timeout: Optional[Duration] = None,
               description: Optional[str] = None) -> Agent:
        """Replaces the agent ``id``."""
        return self._update(id, self._body(model, system_prompt, tools, max_turns, timeout, description))


def _quota(q: Union[Quota, Mapping[str, Any], None]) -> Dict[str, Any]:
    if q is None:
        return {}
    if isinstance(q, Quota):
        return {k: v for k, v in vars(q).items() if v}
    return dict(q)


class Tenants(_Crud):
    """``client.tenants`` (admin keys create, update and delete)."""

    _path, _cls = "/v1/tenants", Tenant

    def create(self, id: str, description: str = "", quota: Union[Quota, Mapping[str, Any], None] = None) -> Tenant:
        """Creates a tenant with a quota (0 fields: no limit)."""
        return self._create({"id": id, "description": description, "quota": _quota(quota)})

    def update(self, id: str, description: str = "", quota: Union[Quota, Mapping[str, Any], None] = None) -> Tenant:
        """Replaces the tenant's description and quota."""
        return self._update(id, {"description": description, "quota": _quota(quota)})


class APIKeys:
    """``client.api_keys``: bearer keys. A key minted by a key never outlives it."""

    def __init__(self, client: "_ClientBase") -> None:
        self._client = client

    def create(self, role: str, *, tenant_id: Optional[str] = None, name: Optional[str] = None,
               ttl: Optional[Duration] = None, expires_at: Optional[Union[str, datetime]] = None,
               root: Optional[bool] = None) -> CreatedAPIKey:
        """Mints a key (``role`` admin, member or viewer); the answer's
        ``key`` is shown this once."""
        body = compact({"role": role, "tenant_id": tenant_id, "name": name, "ttl": dur(ttl),
                        "expires_at": rfc3339(expires_at) if expires_at is not None else None, "root": root})
        return self._client._run(one(Req("POST", "/v1/apikeys", json=body, idempotent=False), lambda d: decode(CreatedAPIKey, d)))

    def list(self, tenant: Optional[str] = None, tree: bool = False) -> List[APIKey]:
        """The keys (of a tenant), oldest first; ``tree`` lists them as a
        key tree with each key's ``depth``."""
        return self._client._run(one(Req("GET", "/v1/apikeys", params={"tenant": tenant, "tree": "1" if tree else None}),
                                     items(APIKey)))

    def get(self, id: str) -> APIKey:
        """The key ``id``'s record."""
        return self._client._run(one(Req("GET", f"/v1/apikeys/{seg(id)}"), lambda d: decode(APIKey, d)))

    def revoke(self, id: str) -> APIKey:
        """Revokes the key and every key minted under it (``revoked_below`` counts them)."""
        return self._client._run(one(Req("POST", f"/v1/apikeys/{seg(id)}/revoke"), lambda d: decode(APIKey, d)))


class Audit:
    """``client.audit``: the log of mutating requests."""

    def __init__(self, client: "_ClientBase") -> None:
        self._client = client

    def list(self, tenant: Optional[str] = None, after: Optional[int] = None, limit: Optional[int] = None) -> List[AuditEntry]:
        """Without ``after`` the newest ``limit`` entries, newest first; with
        ``after`` the entries after it, oldest first."""
        return self._client._run(one(Req("GET", "/v1/audit", params={"tenant": tenant, "after": after, "limit": limit}),
                                     items(AuditEntry)))


class Events:
    """``client.events``: the events of the caller's tenant across its workspaces."""

    def __init__(self, client: "_ClientBase") -> None:
        self._client = client

    def list(self, after: Optional[int] = None, limit: Optional[int] = None, tenant: Optional[str] = None) -> EventPage:
        """A page of events after the id ``after``, oldest first, and the newest id."""
        return self._client._run(one(Req("GET", "/v1/events", params={"after": after, "limit": limit, "tenant": tenant}),
                                     lambda d: decode(EventPage, d)))

    def follow(self, after: int = 0, tenant: Optional[str] = None) -> EventStream:
        """Iterates events as they are written, after the id ``after``;
        it never ends on its own (``close()`` or leave the loop)."""
        return EventStream(self._client, "/v1/events", after, params={"tenant": tenant} if tenant else None)
