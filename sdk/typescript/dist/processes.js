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
     * the last 16 KiB the runtime kept) until it exits. It needs a WebSocket
     * that sends headers (Node 22+, Node 20 with --experimental-websocket,
     * Deno, Bun); browsers cannot send the key on a WebSocket.
     */
    async *attach(pid, o = {}) {
        const WS = globalThis.WebSocket;
        if (!WS)
            throw makeError("unavailable", "attach: this platform has no WebSocket (Node 20 needs --experimental-websocket)", 0);
        const url = this.t.url(this.path(pid, "attach"), { replay: o.replay ? true : undefined }).replace(/^http/, "ws");
        const ws = new WS(url, { headers: this.t.headers() });
        const queue = [];
        let wake;
        let closed = false;
        let failure;
        ws.onmessage = (ev) => { queue.push(ev.data); wake?.(); };
        ws.onclose = () => { closed = true; wake?.(); };
        ws.onerror = (ev) => { failure ??= ev; closed = true; wake?.(); };
        const onAbort = () => ws.close();
        o.signal?.addEventListener("abort", onAbort, { once: true });
        try {
            for (;;) {
                while (queue.length === 0 && !closed)
                    await new Promise((r) => (wake = r));
                const raw = queue.shift();
                if (raw === undefined) {
                    if (o.signal?.aborted)
                        throw makeError("canceled", "attach: canceled", 0);
                    throw makeError("unavailable", `attach: the connection closed before the process's exit${failure ? "" : ""}`, 0);
                }
                const m = JSON.parse(typeof raw === "string" ? raw : new TextDecoder().decode(raw));
                if (m.type === "output")
                    yield { type: "output", stream: m.stream ?? "stdout", data: fromBase64(m.data ?? "") };
                else if (m.type === "exit" && m.exit)
                    return m.exit;
                else if (m.type === "error")
                    throw errorFromEnvelope({ error: m.error }, 200) ?? makeError("internal", "attach: error", 200);
            }
        }
        finally {
            o.signal?.removeEventListener("abort", onAbort);
            ws.close();
        }
    }
}
function fromBase64(s) {
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++)
        out[i] = bin.charCodeAt(i);
    return out;
}
