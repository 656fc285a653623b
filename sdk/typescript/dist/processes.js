// Background processes: commands that outlive the request, owned by the
// workspace's runtime, with input, signals and (where the platform has a
// WebSocket that can send headers) attach to their output.
import { makeError, errorFromEnvelope } from "./errors.js";
import { seg, sleep } from "./http.js";
import { argv } from "./exec.js";
/** Processes manages one workspace's background processes. */
export class Processes {
    t;
    id;
    constructor(t, id) {
        this.t = t;
        this.id = id;
    }
    path(pid, op) {
        let p = `/v1/workspaces/${seg(this.id)}/processes`;
        if (pid !== undefined)
            p += "/" + pid;
        if (op)
            p += "/" + op;
        return p;
    }
    /** start starts cmd in the background. */
    start(cmd, o = {}) {
        const { signal, timeoutMs, ...spec } = o;
        return this.t.json({ method: "POST", path: this.path(), json: { ...spec, command: argv(cmd) }, idempotent: false, signal, timeoutMs });
    }
    /** list lists running processes and the last that ended. */
    async list(o = {}) {
        return (await this.t.json({ method: "GET", path: this.path(), signal: o.signal, timeoutMs: o.timeoutMs })).items;
    }
    /** get returns one process. */
    get(pid, o = {}) {
        return this.t.json({ method: "GET", path: this.path(pid), signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** input writes data to the process's stdin (or terminal). */
    async input(pid, data, o = {}) {
        await this.t.send({ method: "POST", path: this.path(pid, "input"), json: { data }, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** signal sends a signal ("TERM", "INT", "KILL", ...). */
    async signal(pid, sig, o = {}) {
        await this.t.send({ method: "POST", path: this.path(pid, "signal"), json: { signal: sig }, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** resize resizes the process's terminal. */
    async resize(pid, cols, rows, o = {}) {
        await this.t.send({ method: "POST", path: this.path(pid, "resize"), json: { cols, rows }, idempotent: true, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** closeStdin closes the process's stdin (EOF). */
    async closeStdin(pid, o = {}) {
        await this.t.send({ method: "POST", path: this.path(pid, "close-stdin"), json: {}, idempotent: true, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** wait polls the process until it ended and returns its exit. */
    async wait(pid, o = {}) {
        for (;;) {
            const p = await this.get(pid, o);
            if (!p.running && p.exit)
                return p.exit;
            await sleep(o.pollMs ?? 100, o.signal);
        }
    }
    /**
     * attach yields the process's output from now on (with replay, first
     * the last 16 KiB the runtime kept) until it exits, and returns the
     * exit. It needs a WebSocket that sends headers (Node 22+, Node 20 with
     * --experimental-websocket, Deno, Bun); browsers cannot send the key on
     * a WebSocket.
     */
    async *attach(pid, o = {}) {
        const a = await this.open(pid, o);
        try {
            for await (const out of a)
                yield out;
            return await a.exit;
        }
        finally {
            a.close();
        }
    }
    /**
     * open attaches to the process both ways: iterate the Attachment for
     * output, send input, resizes, signals and EOF on it, await exit.
     * Closing it detaches; the process runs on.
     */
    async open(pid, o = {}) {
        const WS = globalThis.WebSocket;
        if (!WS)
            throw makeError("unavailable", "attach: this platform has no WebSocket (Node 20 needs --experimental-websocket)", 0);
        const url = this.t.url(this.path(pid, "attach"), { replay: o.replay ? true : undefined }).replace(/^http/, "ws");
        const a = new Attachment(new WS(url, { headers: this.t.headers() }), o.signal);
        await a.opened;
        return a;
    }
}
/**
 * Attachment is one attach to a process: an async iterator of its output,
 * input and control messages, and its exit.
 */
export class Attachment {
    ws;
    /** exit resolves with the process's exit; it rejects when the connection ends first. */
    exit;
    /** opened resolves once the connection is up. */
    opened;
    queue = [];
    wake;
    done = false;
    failure;
    resolveExit;
    rejectExit;
    constructor(ws, signal) {
        this.ws = ws;
        this.exit = new Promise((res, rej) => { this.resolveExit = res; this.rejectExit = rej; });
        this.exit.catch(() => { });
        this.opened = new Promise((res, rej) => {
            ws.onopen = () => res();
            ws.onerror = () => {
                const e = makeError("unavailable", "attach: the connection failed (a refused attach: unknown pid, a viewer key, or no WebSocket upgrade)", 0);
                rej(e);
                this.finish(e);
            };
        });
        this.opened.catch(() => { });
        ws.onmessage = (ev) => {
            const raw = ev.data;
            const m = JSON.parse(typeof raw === "string" ? raw : new TextDecoder().decode(raw));
            if (m.type === "output")
                this.queue.push({ type: "output", stream: m.stream ?? "stdout", data: fromBase64(m.data ?? "") });
            else if (m.type === "exit" && m.exit) {
                this.resolveExit(m.exit);
                this.finish();
            }
            else if (m.type === "error")
                this.finish(errorFromEnvelope({ error: m.error }, 200) ?? makeError("internal", "attach: error", 200));
            this.wake?.();
        };
        ws.onclose = () => this.finish(makeError("unavailable", "attach: the connection closed before the process's exit", 0));
        signal?.addEventListener("abort", () => { this.finish(makeError("canceled", "attach: canceled", 0)); ws.close(); }, { once: true });
    }
    finish(e) {
        if (this.done)
            return;
        this.done = true;
        if (e !== undefined) {
            this.failure = e;
            this.rejectExit(e);
        }
        this.wake?.();
    }
    async *[Symbol.asyncIterator]() {
        for (;;) {
            while (this.queue.length === 0 && !this.done)
                await new Promise((r) => (this.wake = r));
            const next = this.queue.shift();
            if (next) {
                yield next;
                continue;
            }
            if (this.failure !== undefined)
                throw this.failure;
            return;
        }
    }
    send(m) {
        if (this.done)
            throw makeError("failed_precondition", "attach: the process ended or the connection closed", 0);
        this.ws.send(JSON.stringify(m));
    }
    /** input writes data to the process's stdin or terminal. */
    input(data) {
        this.send({ type: "input", data: toBase64(typeof data === "string" ? new TextEncoder().encode(data) : data) });
    }
    /** resize resizes the process's terminal. */
    resize(cols, rows) {
        this.send({ type: "resize", cols, rows });
    }
    /** signal sends a signal ("INT", "TERM", ...). */
    signal(sig) {
        this.send({ type: "signal", signal: sig });
    }
    /** closeStdin closes the process's stdin. */
    closeStdin() {
        this.send({ type: "close_stdin" });
    }
    /** close detaches; the process runs on. */
    close() {
        this.ws.close();
    }
    [Symbol.dispose]() {
        this.close();
    }
}
function fromBase64(s) {
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++)
        out[i] = bin.charCodeAt(i);
    return out;
}
function toBase64(b) {
    let s = "";
    for (let i = 0; i < b.length; i += 0x8000)
        s += String.fromCharCode(...b.subarray(i, i + 0x8000));
    return btoa(s);
}
