// The transport: one fetch per call, the bearer key, a per-call timeout,
// the caller's AbortSignal, and retries with backoff for calls that are
// safe to repeat. It uses only what fetch platforms share (Node 20+,
// browsers, Deno, Bun): no Node module is imported.
import { CanceledError, InvalidError, PrimerError, TimeoutError, errorFromResponse, makeError } from "./errors.js";
/** Transport sends requests to one server. */
export class Transport {
    baseUrl;
    token;
    timeoutMs;
    fetchFn;
    attempts;
    baseDelay;
    maxDelay;
    userAgent;
    constructor(o) {
        let base = o.baseUrl.trim().replace(/\/+$/, "");
        if (base && !base.includes("://"))
            base = "http://" + base;
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
    url(path, query) {
        let u = this.baseUrl + path;
        if (query) {
            const q = new URLSearchParams();
            for (const [k, v] of Object.entries(query))
                if (v !== undefined && v !== "")
                    q.set(k, String(v));
            const s = q.toString();
            if (s)
                u += "?" + s;
        }
        return u;
    }
    /** headers are the headers every request carries. */
    headers(extra) {
        const h = { ...extra };
        if (this.token)
            h["Authorization"] = "Bearer " + this.token;
        if (this.userAgent)
            h["User-Agent"] = this.userAgent;
        return h;
    }
    /**
     * send makes the call and returns the successful response (status < 400);
     * a failure is thrown as PrimerError. A streaming response's body is the
     * caller's to read or cancel; any other's is read already (within the
     * timeout) and may be read again from the returned Response.
     */
    async send(r) {
        const a = await this.retrying(r);
        if (a instanceof Response)
            return a;
        return new Response(a.status === 204 || a.status === 205 || a.status === 304 ? null : a.text, { status: a.status, headers: a.headers });
    }
    /** json makes the call and decodes its JSON answer (undefined for 204 or an empty body). */
    async json(r) {
        const a = await this.retrying({ ...r, stream: false });
        if (a instanceof Response)
            throw new Error("unreachable: a whole-body call answered a stream");
        if (!a.text)
            return undefined;
        try {
            return JSON.parse(a.text);
        }
        catch (e) {
            throw makeError("internal", `${r.method} ${r.path}: answer is not JSON: ${a.text.slice(0, 200)}`, a.status, {}, undefined, e);
        }
    }
    async retrying(r) {
        const idempotent = r.idempotent ?? (r.method === "GET" || r.method === "HEAD" || r.method === "PUT" || r.method === "DELETE");
        // A body that is a stream can be sent once only.
        const repeatable = idempotent && !(typeof ReadableStream !== "undefined" && r.body instanceof ReadableStream);
        const tries = repeatable ? this.attempts : 1;
        for (let attempt = 1;; attempt++) {
            let err;
            try {
                return await this.once(r);
            }
            catch (e) {
                if (!(e instanceof PrimerError))
                    throw e;
                err = e;
            }
            if (attempt >= tries || !retryable(err) || r.signal?.aborted)
                throw err;
            let delay = Math.min(this.maxDelay, this.baseDelay * 2 ** (attempt - 1));
            delay = delay / 2 + Math.random() * (delay / 2);
            if (err.retryAfter !== undefined)
                delay = Math.max(delay, Math.min(err.retryAfter * 1000, 10_000));
            await sleep(delay, r.signal);
        }
    }
    async once(r) {
        const timeout = r.timeoutMs ?? this.timeoutMs;
        if (r.signal?.aborted)
            throw new CanceledError("canceled", "call canceled before it was sent", 0);
        // A controller only when there is something to stop the call: the
        // common command call (no timeout, no signal) makes none.
        let ctl;
        let timedOut = false;
        let timer;
        const onAbort = () => ctl?.abort();
        if (timeout > 0 || r.signal) {
            ctl = new AbortController();
            if (timeout > 0)
                timer = setTimeout(() => { timedOut = true; ctl?.abort(); }, timeout);
            r.signal?.addEventListener("abort", onAbort, { once: true });
        }
        const headers = this.headers(r.headers);
        let body = r.body;
        if (r.json !== undefined) {
            body = JSON.stringify(r.json);
            headers["Content-Type"] = "application/json";
        }
        const init = { method: r.method, headers, body, signal: ctl?.signal };
        if (typeof ReadableStream !== "undefined" && body instanceof ReadableStream)
            init.duplex = "half";
        const release = () => {
            if (timer !== undefined)
                clearTimeout(timer);
            r.signal?.removeEventListener("abort", onAbort);
        };
        const failed = (e, what) => {
            if (e instanceof PrimerError)
                return e;
            if (timedOut)
                return new TimeoutError("timeout", `${r.method} ${r.path}: ${what} within ${timeout} ms`, 0, {}, undefined, { cause: e });
            if (r.signal?.aborted)
                return new CanceledError("canceled", `${r.method} ${r.path}: canceled`, 0, {}, undefined, { cause: e });
            return makeError("unavailable", `${r.method} ${r.path}: ${e?.message ?? e}${causeOf(e)}`, 0, {}, undefined, e);
        };
        let resp;
        try {
            resp = await this.fetchFn(this.url(r.path, r.query), init);
        }
        catch (e) {
            release();
            throw failed(e, "no answer");
        }
        if (resp.status >= 400) {
            try {
                throw await errorFromResponse(resp);
            }
            finally {
                release();
            }
        }
        if (r.stream) {
            // The timeout bounded the wait for the headers; from here the
            // caller's signal alone ends the stream (it still aborts ctl).
            if (timer !== undefined)
                clearTimeout(timer);
            return resp;
        }
        // A whole-body answer: the timeout covers reading it too.
        try {
            return { status: resp.status, headers: resp.headers, text: await resp.text() };
        }
        catch (e) {
            throw failed(e, "answer not read");
        }
        finally {
            release();
        }
    }
}
/** retryable says whether a failed call may be tried again. */
function retryable(e) {
    if (e instanceof CanceledError)
        return false;
    if (e.status === 0)
        return e.kind === "unavailable";
    return e.status === 502 || e.status === 503 || e.status === 504 || (e.status === 429 && e.retryAfter !== undefined && e.retryAfter <= 10);
}
function causeOf(e) {
    const c = e?.cause;
    return c ? ` (${c.code ?? c.message ?? c})` : "";
}
/** sleep waits ms, or rejects with CanceledError when signal aborts. */
export function sleep(ms, signal) {
    return new Promise((resolve, reject) => {
        if (signal?.aborted)
            return reject(new CanceledError("canceled", "canceled", 0));
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
export function seg(s) {
    if (s === "" || s === "." || s === "..")
        throw new InvalidError("invalid", `id ${JSON.stringify(s)} is not a valid id`, 400, { field: "id" });
    return encodeURIComponent(s);
}
