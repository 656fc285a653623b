import { type CallOptions, type Transport } from "./http.js";
import { type CreateOptions, type WaitOptions, Workspace } from "./workspaces.js";
import type { Agent, AgentSpec, LLMProvider, LLMProviderSpec, LeaseRequest, Pool, PoolSpec, Provider, ProviderSpec, Template, TemplateSpec, Workspace as WorkspaceData } from "./types.js";
/** ListOptions narrow a list by the query parameters the API takes. */
export interface ListOptions extends CallOptions {
    [param: string]: unknown;
}
/** Collection is CRUD on one kind of id-keyed resource. */
export declare class Collection<T, Spec> {
    protected readonly t: Transport;
    protected readonly base: string;
    constructor(t: Transport, base: string);
    /** create creates one from its spec. */
    create(spec: Spec, o?: CallOptions): Promise<T>;
    /** get reads one. */
    get(id: string, o?: CallOptions): Promise<T>;
    /** list lists them (query narrows, as the API allows: provider_id, template_id, tenant, ...). */
    list(query?: ListOptions): Promise<T[]>;
    /** update replaces one's spec. */
    update(id: string, spec: Spec, o?: CallOptions): Promise<T>;
    /** delete deletes one; one already gone is not an error when missingOk. */
    delete(id: string, o?: CallOptions & {
        missingOk?: boolean;
    }): Promise<void>;
}
/** Providers are where workspaces run (a root path, a container engine, a cluster). */
export declare class Providers extends Collection<Provider, ProviderSpec> {
    constructor(t: Transport);
}
/** Templates are recipes of workspaces on a provider. */
export declare class Templates extends Collection<Template, TemplateSpec> {
    constructor(t: Transport);
}
/** LLMProviders are model endpoints agents call. */
export declare class LLMProviders extends Collection<LLMProvider, LLMProviderSpec> {
    constructor(t: Transport);
}
/** Agents are a model, a prompt and tools, run on sessions. */
export declare class Agents extends Collection<Agent, AgentSpec> {
    constructor(t: Transport);
}
/**
 * Lease is a workspace leased from a pool: release (or `await using`)
 * gives it back (a cold lease's own workspace is deleted instead).
 */
export declare class Lease extends Workspace {
    /** source is "warm" (an idle member) or "cold" (a new workspace). */
    readonly source: string;
    constructor(t: Transport, data: WorkspaceData, source: string);
    /** release returns a pool member, or deletes a cold lease's workspace. */
    release(o?: CallOptions): Promise<void>;
    [Symbol.asyncDispose](): Promise<void>;
}
/** Pools keep warm workspaces of a template to lease. */
export declare class Pools extends Collection<Pool, PoolSpec> {
    constructor(t: Transport);
    /** waitReady waits until pool id holds ready idle members (its size minus those leased, or at least min). */
    waitReady(id: string, o?: WaitOptions & {
        min?: number;
    }): Promise<Pool>;
    /** lease takes a workspace from pool id: warm at once, or cold (waited for unless wait: false). */
    lease(id: string, req?: LeaseRequest, o?: CreateOptions): Promise<Lease>;
    /** withLease leases a workspace, runs fn with it, and gives it back however fn ends. */
    withLease<T>(id: string, fn: (ws: Lease) => Promise<T>, req?: LeaseRequest, o?: CreateOptions): Promise<T>;
    /**
     * map runs fn over inputs on workspaces leased from pool id, at most
     * concurrency at once (default: the pool's size), and returns the
     * results in input order. Each worker leases one workspace and runs its
     * inputs on it one after another (fresh: a lease per input instead, so
     * no input sees another's files). The first failure is thrown once the
     * leases in flight are given back; inputs not begun by then are not run.
     */
    map<I, R>(id: string, inputs: Iterable<I>, fn: (ws: Lease, input: I, index: number) => Promise<R>, o?: CreateOptions & {
        concurrency?: number;
        fresh?: boolean;
    }): Promise<R[]>;
}
