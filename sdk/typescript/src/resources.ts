// The id-keyed resources with create, get, list, update and delete:
// providers, templates, model providers and agents; pools add leases.

import { NotFoundError, makeError } from "./errors.js";
import { type CallOptions, type Transport, seg, sleep } from "./http.js";
import { type CreateOptions, type WaitOptions, Workspace } from "./workspaces.js";
import type { Agent, AgentSpec, LLMProvider, LLMProviderSpec, LeaseRequest, Pool, PoolSpec, Provider, ProviderSpec, Template, TemplateSpec, Workspace as WorkspaceData } from "./types.js";

/** ListOptions narrow a list by the query parameters the API takes. */
export interface ListOptions extends CallOptions {
  [param: string]: unknown;
}

/** Collection is CRUD on one kind of id-keyed resource. */
export class Collection<T, Spec> {
  constructor(protected readonly t: Transport, protected readonly base: string) {}

  /** create creates one from its spec. */
  create(spec: Spec, o: CallOptions = {}): Promise<T> {
    return this.t.json<T>({ method: "POST", path: this.base, json: spec, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** get reads one. */
  get(id: string, o: CallOptions = {}): Promise<T> {
    return this.t.json<T>({ method: "GET", path: `${this.base}/${seg(id)}`, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** list lists them (query narrows, as the API allows: provider_id, template_id, tenant, ...). */
  async list(query: ListOptions = {}): Promise<T[]> {
    const { signal, timeoutMs, ...q } = query;
    return (await this.t.json<{ items: T[] }>({ method: "GET", path: this.base, query: q as Record<string, string>, signal, timeoutMs })).items;
  }

  /** update replaces one's spec. */
  update(id: string, spec: Spec, o: CallOptions = {}): Promise<T> {
    return this.t.json<T>({ method: "PUT", path: `${this.base}/${seg(id)}`, json: spec, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** delete deletes one; one already gone is not an error when missingOk. */
  async delete(id: string, o: CallOptions & { missingOk?: boolean } = {}): Promise<void> {
    try {
      await this.t.send({ method: "DELETE", path: `${this.base}/${seg(id)}`, signal: o.signal, timeoutMs: o.timeoutMs });
    } catch (e) {
      if (o.missingOk && e instanceof NotFoundError) return;
      throw e;
    }
  }
}

/** Providers are where workspaces run (a root path, a container engine, a cluster). */
export class Providers extends Collection<Provider, ProviderSpec> {
  constructor(t: Transport) { super(t, "/v1/providers"); }
}

/** Templates are recipes of workspaces on a provider. */
export class Templates extends Collection<Template, TemplateSpec> {
  constructor(t: Transport) { super(t, "/v1/templates"); }
}

/** LLMProviders are model endpoints agents call. */
export class LLMProviders extends Collection<LLMProvider, LLMProviderSpec> {
  constructor(t: Transport) { super(t, "/v1/llm-providers"); }
}

/** Agents are a model, a prompt and tools, run on sessions. */
export class Agents extends Collection<Agent, AgentSpec> {
  constructor(t: Transport) { super(t, "/v1/agents"); }
}

/**
 * Lease is a workspace leased from a pool: release (or `await using`)
 * gives it back (a cold lease's own workspace is deleted instead).
 */
export class Lease extends Workspace {
  /** source is "warm" (an idle member) or "cold" (a new workspace). */
  readonly source: string;

  constructor(t: Transport, data: WorkspaceData, source: string) {
    super(t, data);
    this.source = source;
  }

  /** release returns a pool member, or deletes a cold lease's workspace. */
  async release(o: CallOptions = {}): Promise<void> {
    try {
      if (this.data.pool_id) await this.return(o);
      else await this.delete(o);
    } catch (e) {
      if (e instanceof NotFoundError) return;
      throw e;
    }
  }

  override async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }
}

/** Pools keep warm workspaces of a template to lease. */
export class Pools extends Collection<Pool, PoolSpec> {
  constructor(t: Transport) { super(t, "/v1/pools"); }

  /** waitReady waits until pool id holds ready idle members (its size minus those leased, or at least min). */
  async waitReady(id: string, o: WaitOptions & { min?: number } = {}): Promise<Pool> {
    const deadline = Date.now() + (o.waitTimeoutMs ?? 300_000);
    for (;;) {
      const pool = await this.get(id, o);
      const want = o.min ?? pool.size - pool.status.leased - pool.status.returning;
      if (pool.status.idle >= want) return pool;
      if (Date.now() > deadline) throw makeError("timeout", `pool ${id}: ${pool.status.idle} idle of ${want} after ${o.waitTimeoutMs ?? 300_000} ms`, 0);
      await sleep(o.pollMs ?? 200, o.signal);
    }
  }

  /** lease takes a workspace from pool id: warm at once, or cold (waited for unless wait: false). */
  async lease(id: string, req: LeaseRequest = {}, o: CreateOptions = {}): Promise<Lease> {
    const l = await this.t.json<{ workspace: WorkspaceData; source: string }>({ method: "POST", path: `/v1/pools/${seg(id)}/lease`, json: req, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
    const lease = new Lease(this.t, l.workspace, l.source);
    if (o.wait !== false) {
      try {
        await lease.wait(o);
      } catch (e) {
        await lease.release().catch(() => {});
        throw e;
      }
    }
    return lease;
  }

  /** withLease leases a workspace, runs fn with it, and gives it back however fn ends. */
  async withLease<T>(id: string, fn: (ws: Lease) => Promise<T>, req: LeaseRequest = {}, o: CreateOptions = {}): Promise<T> {
    const lease = await this.lease(id, req, o);
    try {
      return await fn(lease);
    } finally {
      await lease.release().catch(() => {});
    }
  }

  /**
   * map runs fn over inputs on workspaces leased from pool id, at most
   * concurrency at once (default: the pool's size), and returns the
   * results in input order. Each worker leases one workspace and runs its
   * inputs on it one after another (fresh: a lease per input instead, so
   * no input sees another's files). The first failure is thrown once the
   * leases in flight are given back; inputs not begun by then are not run.
   */
  async map<I, R>(id: string, inputs: Iterable<I>, fn: (ws: Lease, input: I, index: number) => Promise<R>, o: CreateOptions & { concurrency?: number; fresh?: boolean } = {}): Promise<R[]> {
    const items = [...inputs];
    const concurrency = o.concurrency ?? (await this.get(id, o)).size;
    const out = new Array<R>(items.length);
    let next = 0;
    let failed: { e: unknown } | undefined;
    const take = () => (failed === undefined && next < items.length ? next++ : -1);
    const run = async (ws: Lease, i: number) => {
      try {
        out[i] = await fn(ws, items[i] as I, i);
      } catch (e) {
        failed ??= { e };
      }
    };
    const worker = async () => {
      if (o.fresh) {
        for (let i = take(); i >= 0; i = take()) await this.withLease(id, (ws) => run(ws, i), {}, o).catch((e) => { failed ??= { e }; });
        return;
      }
      let i = take();
      if (i < 0) return;
      await this.withLease(id, async (ws) => {
        for (; i >= 0; i = take()) await run(ws, i);
      }, {}, o).catch((e) => { failed ??= { e }; });
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker));
    if (failed !== undefined) throw failed.e;
    return out;
  }
}
