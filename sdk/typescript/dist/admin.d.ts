import { type CallOptions, type Transport } from "./http.js";
import { Collection } from "./resources.js";
import type { APIKey, AuditEntry, CreateAPIKeyRequest, CreatedAPIKey, Tenant, TenantSpec } from "./types.js";
/** Tenants are the isolation unit: admins create, update and delete them. */
export declare class Tenants extends Collection<Tenant, TenantSpec> {
    constructor(t: Transport);
}
/** APIKeys mints, lists and revokes keys. */
export declare class APIKeys {
    private readonly t;
    constructor(t: Transport);
    /** create mints a key; the answer's key is shown this once. */
    create(req: CreateAPIKeyRequest, o?: CallOptions): Promise<CreatedAPIKey>;
    /** list lists keys oldest first (tree: as a key tree with depth). */
    list(q?: CallOptions & {
        tenant?: string;
        tree?: boolean;
    }): Promise<APIKey[]>;
    /** get reads one key (never its secret). */
    get(id: string, o?: CallOptions): Promise<APIKey>;
    /** revoke revokes the key and every key under it. */
    revoke(id: string, o?: CallOptions): Promise<APIKey>;
}
/** Audit reads the audit log. */
export declare class Audit {
    private readonly t;
    constructor(t: Transport);
    /** list: without after, the newest limit entries newest first; with after, the entries after it oldest first. */
    list(q?: CallOptions & {
        tenant?: string;
        after?: number;
        limit?: number;
    }): Promise<AuditEntry[]>;
}
