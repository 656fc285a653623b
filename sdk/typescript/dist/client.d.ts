import { APIKeys, Audit, Tenants } from "./admin.js";
import { TenantEvents } from "./events.js";
import { type CallOptions, type FetchLike, type RetryOptions, Transport } from "./http.js";
import { Agents, LLMProviders, Pools, Providers, Templates } from "./resources.js";
import { Sessions } from "./sessions.js";
import { Runs, Suites } from "./suites.js";
import { Snapshots } from "./snapshots.js";
import { Workspaces } from "./workspaces.js";
/** PrimerOptions configure a client. */
export interface PrimerOptions {
    /** url is the server (e.g. http://127.0.0.1:8080). */
    url: string;
    /** token is the API key, sent as a bearer token. */
    token?: string;
    /** timeoutMs bounds each call that is not a stream or a command (default 30000; 0: none). */
    timeoutMs?: number;
    /** retry bounds the retries of idempotent calls. */
    retry?: RetryOptions;
    /** fetch replaces globalThis.fetch. */
    fetch?: FetchLike;
    /** userAgent is sent where the platform allows setting it. */
    userAgent?: string;
}
/** Primer talks to one Primer API server. */
export declare class Primer {
    readonly transport: Transport;
    readonly providers: Providers;
    readonly templates: Templates;
    readonly pools: Pools;
    readonly workspaces: Workspaces;
    readonly snapshots: Snapshots;
    readonly sessions: Sessions;
    readonly llmProviders: LLMProviders;
    readonly agents: Agents;
    readonly runs: Runs;
    readonly suites: Suites;
    readonly events: TenantEvents;
    readonly tenants: Tenants;
    readonly apiKeys: APIKeys;
    readonly audit: Audit;
    constructor(o: PrimerOptions);
    /**
     * connect makes a client the way primectl finds its server and key:
     * options, else PRIMER_URL / PRIMER_TOKEN, else the config file, else
     * (on this machine) a local primer serve's admin key.
     */
    static connect(o?: Partial<PrimerOptions>): Promise<Primer>;
    /** url is the server's address. */
    get url(): string;
    /** healthz checks the server is alive. */
    healthz(o?: CallOptions): Promise<void>;
    /** readyz checks the server's database and Temporal answer. */
    readyz(o?: CallOptions): Promise<void>;
}
