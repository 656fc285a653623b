// Exec: a command run to its end in a workspace, whole (one JSON answer)
// or streamed (NDJSON lines, as output arrives).
import { errorFromEnvelope, makeError } from "./errors.js";
import { seg } from "./http.js";
import { lines } from "./streams.js";
/** argv turns a command into the argv exec sends. */
export function argv(cmd) {
    return typeof cmd === "string" ? ["sh", "-c", cmd] : cmd;
}
function body(cmd, o, stream) {
    const b = { command: argv(cmd) };
    if (o.env)
        b.env = o.env;
    if (o.cwd)
        b.cwd = o.cwd;
    if (o.user)
        b.user = o.user;
    if (o.timeout)
        b.timeout = o.timeout;
    if (o.stdin !== undefined)
        b.stdin = typeof o.stdin === "string" ? o.stdin : new TextDecoder().decode(o.stdin);
    if (stream)
        b.stream = true;
    return b;
}
/** exec runs cmd to its end and returns its output and exit code. */
export function exec(t, id, cmd, o = {}) {
    // A command is not idempotent, and its own timeout bounds it: the call
    // has no client timeout unless the caller gives one.
    return t.json({ method: "POST", path: `/v1/workspaces/${seg(id)}/exec`, json: body(cmd, o, false), idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs ?? 0 });
}
/**
 * ExecStream is a running command's output as an async iterator of
 * chunks; exit resolves when the command ended. Stopping the iteration
 * early (break) or aborting the signal cancels the command.
 */
export class ExecStream {
    open;
    /** exit resolves with the command's exit once the stream ended. */
    exit;
    resolveExit;
    rejectExit;
    started = false;
    constructor(open) {
        this.open = open;
        this.exit = new Promise((res, rej) => { this.resolveExit = res; this.rejectExit = rej; });
        // A caller that awaits only exit must not see an unhandled rejection
        // on the iterator's account, nor the other way round.
        this.exit.catch(() => { });
    }
    async *[Symbol.asyncIterator]() {
        if (this.started)
            throw new Error("ExecStream: iterated twice");
        this.started = true;
        let ended = false;
        try {
            const resp = await this.open();
            for await (const line of lines(resp.body)) {
                if (!line)
                    continue;
                const m = JSON.parse(line);
                if (m.exit) {
                    ended = true;
                    this.resolveExit(m.exit);
                    return;
                }
                const err = errorFromEnvelope(m, 200);
                if (err)
                    throw err;
                if (m.stream !== undefined)
                    yield { stream: m.stream, data: m.data ?? "" };
            }
            throw makeError("unavailable", "exec: the stream ended before the command's exit", 200);
        }
        catch (e) {
            ended = true;
            this.rejectExit(e);
            throw e;
        }
        finally {
            if (!ended)
                this.rejectExit(makeError("canceled", "exec: the stream was left before the command ended", 0));
        }
    }
    /** collect reads the stream to its end: the output joined, and the exit. */
    async collect(onChunk) {
        let stdout = "";
        let stderr = "";
        for await (const c of this) {
            onChunk?.(c);
            if (c.stream === "stderr")
                stderr += c.data;
            else
                stdout += c.data;
        }
        const x = await this.exit;
        return { ...x, stdout, stderr };
    }
}
/** execStream starts cmd with its output streamed. */
export function execStream(t, id, cmd, o = {}) {
    return new ExecStream(() => t.send({ method: "POST", path: `/v1/workspaces/${seg(id)}/exec`, json: body(cmd, o, true), headers: { Accept: "application/x-ndjson" }, idempotent: false, stream: true, signal: o.signal, timeoutMs: o.timeoutMs }));
}
