// Primer is the client: one transport, and a property per resource.
import { APIKeys, Audit, Tenants } from "./admin.js";
import { resolve } from "./config.js";
import { TenantEvents } from "./events.js";
import { Transport } from "./http.js";
import { Agents, LLMProviders, Pools, Providers, Templates } from "./resources.js";
import { Sessions } from "./sessions.js";
import { Runs, Suites } from "./suites.js";
import { Snapshots } from "./snapshots.js";
import { Workspaces } from "./workspaces.js";
/** Primer talks to one Primer API server. */
export class Primer {
    transport;
    providers;
    templates;
    pools;
    workspaces;
    snapshots;
    sessions;
    llmProviders;
    agents;
    runs;
    suites;
    events;
    tenants;
    apiKeys;
    audit;
    constructor(o) {
        const t = new Transport({ baseUrl: o.url, token: o.token, timeoutMs: o.timeoutMs, retry: o.retry, fetch: o.fetch, userAgent: o.userAgent });
        this.transport = t;
        this.providers = new Providers(t);
        this.templates = new Templates(t);
        this.pools = new Pools(t);
        this.workspaces = new Workspaces(t);
        this.snapshots = new Snapshots(t);
        this.sessions = new Sessions(t);
        this.llmProviders = new LLMProviders(t);
        this.agents = new Agents(t);
        this.runs = new Runs(t);
        this.suites = new Suites(t, this.runs);
        this.events = new TenantEvents(t);
        this.tenants = new Tenants(t);
        this.apiKeys = new APIKeys(t);
        this.audit = new Audit(t);
    }
    /**
     * connect makes a client the way primectl finds its server and key:
     * options, else PRIMER_URL / PRIMER_TOKEN, else the config file, else
     * (on this machine) a local primer serve's admin key.
     */
    static async connect(o = {}) {
        const s = await resolve({ url: o.url, token: o.token });
        return new Primer({ ...o, url: s.url, token: s.token });
    }
    /** url is the server's address. */
    get url() { return this.transport.baseUrl; }
    /** healthz checks the server is alive. */
    async healthz(o = {}) {
        await this.transport.send({ method: "GET", path: "/healthz", signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** readyz checks the server's database and Temporal answer. */
    async readyz(o = {}) {
        await this.transport.send({ method: "GET", path: "/readyz", signal: o.signal, timeoutMs: o.timeoutMs });
    }
}
