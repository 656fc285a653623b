// The transport: one fetch per call, the bearer key, a per-call timeout,
// the caller's AbortSignal, and retries with backoff for calls that are
// safe to repeat. It uses only what fetch platforms share (Node 20+,
// browsers, Deno, Bun): no Node module is imported.

import { CanceledError, InvalidError, PrimerError, TimeoutError, errorFromResponse, makeError } from "./errors.js";

/** FetchLike is the fetch the client calls (globalThis.fetch by default). */
export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

/** RetryOptions bound the retries of idempotent calls. */
export interface RetryOptions {
  /** attempts is the most tries of one call, the first included (default 3). */
  attempts?: number;
  /** baseDelayMs is the first backoff (default 100), doubled each try with jitter. */
  baseDelayMs?: number;
  /** maxDelayMs caps one backoff (default 2000). */
  maxDelayMs?: number;
}

/** CallOptions are what every call of the client takes. */
export interface CallOptions {
  /** signal stops the call (and its stream): it then rejects with CanceledError. */
  signal?: AbortSignal;
  /** timeoutMs overrides the client's timeout for this call; 0 means none. */
  timeoutMs?: number;
}

/** Request is one call as the resources describe it. */
export interface Request extends CallOptions {
  method: string;
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  /** json is sent as a JSON body. */
  json?: unknown;
  /** body is sent as is (files, JSONL). */
  body?: BodyInit;
  headers?: Record<string, string>;
  /** idempotent says the call may be repeated after a failure that did not reach the handler or a 502/503/504/429. GET, HEAD, PUT and DELETE are by default. */
  idempotent?: boolean;
  /** stream says the answer is read as a stream: the timeout then covers only the wait for the headers. */
  stream?: boolean;
}

/** TransportOptions configure the transport. */
export interface TransportOptions {
  baseUrl: string;
  token?: string;
  fetch?: FetchLike;
  timeoutMs?: number;
  retry?: RetryOptions;
  userAgent?: string;
}

/** Transport sends requests to one server. */
export class Transport {
  readonly baseUrl: string;
  readonly token?: string;
  readonly timeoutMs: number;
  private readonly fetchFn: FetchLike;
  private readonly attempts: number;
  private readonly baseDelay: number;
  private readonly maxDelay: number;
  private readonly userAgent?: string;

  constructor(o: TransportOptions) {
    let base = o.baseUrl.trim().replace(/\/+$/, "");
    if (base && !base.includes("://")) base = "http://" + base;
    this.baseUrl = base;
    this.token = o.token?.trim() || undefined;
    this.timeoutMs = o.timeoutMs ?? 30_000;
    this.fetchFn = o.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.attempts = Math.max(1, o.retry?.attempts ?? 3);
    this.baseDelay = o.retry?.baseDelayMs ?? 100;
    this.maxDelay = o.retry?.maxDelayMs ?? 2000;
    this.userAgent = o.userAgent;
  }

  /** url builds the address of path with query. */
  url(path: string, query?: Request["query"]): string {
    let u = this.baseUrl + path;
    if (query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== "") q.set(k, String(v));
      const s = q.toString();
      if (s) u += "?" + s;
    }
    return u;
  }

  /** headers are the headers every request carries. */
  headers(extra?: Record<string, string>): Record<string, string> {
    const h: Record<string, string> = { ...extra };
    if (this.token) h["Authorization"] = "Bearer " + this.token;
    if (this.userAgent) h["User-Agent"] = this.userAgent;
    return h;
  }

  /**
   * send makes the call and returns the successful response (status < 400);
   * a failure is thrown as PrimerError. A streaming response's body is the
   * caller's to read or cancel; any other's is read already (within the
   * timeout) and may be read again from the returned Response.
   */
  async send(r: Request): Promise<Response> {
    const a = await this.retrying(r);
    if (a instanceof Response) return a;
    return new Response(a.status === 204 || a.status === 205 || a.status === 304 ? null : a.text, { status: a.status, headers: a.headers });
  }

  /** json makes the call and decodes its JSON answer (undefined for 204 or an empty body). */
  async json<T>(r: Request): Promise<T> {
    const a = await this.retrying({ ...r, stream: false });
    if (a instanceof Response) throw new Error("unreachable: a whole-body call answered a stream");
    if (!a.text) return undefined as T;
    try {
      return JSON.parse(a.text) as T;
    } catch (e) {
      throw makeError("internal", `${r.method} ${r.path}: answer is not JSON: ${a.text.slice(0, 200)}`, a.status, {}, undefined, e);
    }
  }

  private async retrying(r: Request): Promise<Response | Whole> {
    const idempotent = r.idempotent ?? (r.method === "GET" || r.method === "HEAD" || r.method === "PUT" || r.method === "DELETE");
    // A body that is a stream can be sent once only.
    const repeatable = idempotent && !(typeof ReadableStream !== "undefined" && r.body instanceof ReadableStream);
    const tries = repeatable ? this.attempts : 1;
    for (let attempt = 1; ; attempt++) {
      let err: PrimerError;
      try {
        return await this.once(r);
      } catch (e) {
        if (!(e instanceof PrimerError)) throw e;
        err = e;
      }
      if (attempt >= tries || !retryable(err) || r.signal?.aborted) throw err;
      let delay = Math.min(this.maxDelay, this.baseDelay * 2 ** (attempt - 1));
      delay = delay / 2 + Math.random() * (delay / 2);
      if (err.retryAfter !== undefined) delay = Math.max(delay, Math.min(err.retryAfter * 1000, 10_000));
      await sleep(delay, r.signal);
    }
  }

  private async once(r: Request): Promise<Response | Whole> {
    const timeout = r.timeoutMs ?? this.timeoutMs;
    if (r.signal?.aborted) throw new CanceledError("canceled", "call canceled before it was sent", 0);
    // A controller only when there is something to stop the call: the
    // common command call (no timeout, no signal) makes none.
    let ctl: AbortController | undefined;
    let timedOut = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onAbort = () => ctl?.abort();
    if (timeout > 0 || r.signal) {
      ctl = new AbortController();
      if (timeout > 0) timer = setTimeout(() => { timedOut = true; ctl?.abort(); }, timeout);
      r.signal?.addEventListener("abort", onAbort, { once: true });
    }
    const headers = this.headers(r.headers);
    let body: BodyInit | undefined = r.body;
    if (r.json !== undefined) {
      body = JSON.stringify(r.json);
      headers["Content-Type"] = "application/json";
    }
    const init: RequestInit & { duplex?: string } = { method: r.method, headers, body, signal: ctl?.signal };
    if (typeof ReadableStream !== "undefined" && body instanceof ReadableStream) init.duplex = "half";
    const release = () => {
      if (timer !== undefined) clearTimeout(timer);
      r.signal?.removeEventListener("abort", onAbort);
    };
    const failed = (e: unknown, what: string): PrimerError => {
      if (e instanceof PrimerError) return e;
      if (timedOut) return new TimeoutError("timeout", `${r.method} ${r.path}: ${what} within ${timeout} ms`, 0, {}, undefined, { cause: e });
      if (r.signal?.aborted) return new CanceledError("canceled", `${r.method} ${r.path}: canceled`, 0, {}, undefined, { cause: e });
      return makeError("unavailable", `${r.method} ${r.path}: ${(e as Error)?.message ?? e}${causeOf(e)}`, 0, {}, undefined, e);
    };
    let resp: Response;
    try {
      resp = await this.fetchFn(this.url(r.path, r.query), init);
    } catch (e) {
      release();
      throw failed(e, "no answer");
    }
    if (resp.status >= 400) {
      try {
        throw await errorFromResponse(resp);
      } finally {
        release();
      }
    }
    if (r.stream) {
      // The timeout bounded the wait for the headers; from here the
      // caller's signal alone ends the stream (it still aborts ctl).
      if (timer !== undefined) clearTimeout(timer);
      return resp;
    }
    // A whole-body answer: the timeout covers reading it too.
    try {
      return { status: resp.status, headers: resp.headers, text: await resp.text() };
    } catch (e) {
      throw failed(e, "answer not read");
    } finally {
      release();
    }
  }
}

/** Whole is an answer read whole. */
interface Whole {
  status: number;
  headers: Headers;
  text: string;
}

/** retryable says whether a failed call may be tried again. */
function retryable(e: PrimerError): boolean {
  if (e instanceof CanceledError) return false;
  if (e.status === 0) return e.kind === "unavailable";
  return e.status === 502 || e.status === 503 || e.status === 504 || (e.status === 429 && e.retryAfter !== undefined && e.retryAfter <= 10);
}

function causeOf(e: unknown): string {
  const c = (e as { cause?: { code?: string; message?: string } })?.cause;
  return c ? ` (${c.code ?? c.message ?? c})` : "";
}

/** sleep waits ms, or rejects with CanceledError when signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new CanceledError("canceled", "canceled", 0));
    const t = setTimeout(() => { signal?.removeEventListener("abort", onAbort); resolve(); }, ms);
    const onAbort = () => { clearTimeout(t); reject(new CanceledError("canceled", "canceled", 0)); };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * seg escapes one path segment. An empty, "." or ".." id is refused: a URL
 * parser would drop or resolve it (even escaped as %2E), and the call would
 * reach another route.
 */
export function seg(s: string): string {
  if (s === "" || s === "." || s === "..") throw new InvalidError("invalid", `id ${JSON.stringify(s)} is not a valid id`, 400, { field: "id" });
  return encodeURIComponent(s);
}
