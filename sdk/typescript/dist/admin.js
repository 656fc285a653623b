// Administration: tenants, API keys and the audit log.
import { seg } from "./http.js";
import { Collection } from "./resources.js";
/** Tenants are the isolation unit: admins create, update and delete them. */
export class Tenants extends Collection {
    constructor(t) { super(t, "/v1/tenants"); }
}
/** APIKeys mints, lists and revokes keys. */
export class APIKeys {
    t;
    constructor(t) {
        this.t = t;
    }
    /** create mints a key; the answer's key is shown this once. */
    create(req, o = {}) {
        return this.t.json({ method: "POST", path: "/v1/apikeys", json: req, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** list lists keys oldest first (tree: as a key tree with depth). */
    async list(q = {}) {
        return (await this.t.json({ method: "GET", path: "/v1/apikeys", query: { tenant: q.tenant, tree: q.tree ? 1 : undefined }, signal: q.signal, timeoutMs: q.timeoutMs })).items;
    }
    /** get reads one key (never its secret). */
    get(id, o = {}) {
        return this.t.json({ method: "GET", path: `/v1/apikeys/${seg(id)}`, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** revoke revokes the key and every key under it. */
    revoke(id, o = {}) {
        return this.t.json({ method: "POST", path: `/v1/apikeys/${seg(id)}/revoke`, idempotent: true, signal: o.signal, timeoutMs: o.timeoutMs });
    }
}
/** Audit reads the audit log. */
export class Audit {
    t;
    constructor(t) {
        this.t = t;
    }
    /** list: without after, the newest limit entries newest first; with after, the entries after it oldest first. */
    async list(q = {}) {
        return (await this.t.json({ method: "GET", path: "/v1/audit", query: { tenant: q.tenant, after: q.after, limit: q.limit }, signal: q.signal, timeoutMs: q.timeoutMs })).items;
    }
}
