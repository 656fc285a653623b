// Administration: tenants, API keys and the audit log.

import { type CallOptions, type Transport, seg } from "./http.js";
import { Collection } from "./resources.js";
import type { APIKey, AuditEntry, CreateAPIKeyRequest, CreatedAPIKey, Tenant, TenantSpec } from "./types.js";

/** Tenants are the isolation unit: admins create, update and delete them. */
export class Tenants extends Collection<Tenant, TenantSpec> {
  constructor(t: Transport) { super(t, "/v1/tenants"); }
}

/** APIKeys mints, lists and revokes keys. */
export class APIKeys {
  constructor(private readonly t: Transport) {}

  /** create mints a key; the answer's key is shown this once. */
  create(req: CreateAPIKeyRequest, o: CallOptions = {}): Promise<CreatedAPIKey> {
    return this.t.json<CreatedAPIKey>({ method: "POST", path: "/v1/apikeys", json: req, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** list lists keys oldest first (tree: as a key tree with depth). */
  async list(q: CallOptions & { tenant?: string; tree?: boolean } = {}): Promise<APIKey[]> {
    return (await this.t.json<{ items: APIKey[] }>({ method: "GET", path: "/v1/apikeys", query: { tenant: q.tenant, tree: q.tree ? 1 : undefined }, signal: q.signal, timeoutMs: q.timeoutMs })).items;
  }

  /** get reads one key (never its secret). */
  get(id: string, o: CallOptions = {}): Promise<APIKey> {
    return this.t.json<APIKey>({ method: "GET", path: `/v1/apikeys/${seg(id)}`, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** revoke revokes the key and every key under it. */
  revoke(id: string, o: CallOptions = {}): Promise<APIKey> {
    return this.t.json<APIKey>({ method: "POST", path: `/v1/apikeys/${seg(id)}/revoke`, idempotent: true, signal: o.signal, timeoutMs: o.timeoutMs });
  }
}

/** Audit reads the audit log. */
export class Audit {
  constructor(private readonly t: Transport) {}

  /** list: without after, the newest limit entries newest first; with after, the entries after it oldest first. */
  async list(q: CallOptions & { tenant?: string; after?: number; limit?: number } = {}): Promise<AuditEntry[]> {
    return (await this.t.json<{ items: AuditEntry[] }>({ method: "GET", path: "/v1/audit", query: { tenant: q.tenant, after: q.after, limit: q.limit }, signal: q.signal, timeoutMs: q.timeoutMs })).items;
  }
}
