// Events: stored lists and live SSE streams that resume where they left
// off (Last-Event-ID) when the connection drops.
import { PrimerError, errorFromEnvelope, makeError } from "./errors.js";
import { sleep } from "./http.js";
import { sse } from "./streams.js";
/**
 * followSSE yields the events of path's SSE stream, reconnecting with
 * Last-Event-ID after a drop until the server ends the stream (ends
 * says when an event is the last) or the signal aborts. Errors the server
 * sends (event: error) and refusals (4xx) end it with a PrimerError.
 */
export async function* followSSE(t, path, query, o, decode, ends) {
    let last = o.after !== undefined ? String(o.after) : undefined;
    for (;;) {
        let resp;
        try {
            resp = await t.send({
                method: "GET", path, query: { ...query, follow: "true" }, stream: true, signal: o.signal, timeoutMs: o.timeoutMs,
                headers: { Accept: "text/event-stream", ...(last !== undefined ? { "Last-Event-ID": last } : {}) },
            });
        }
        catch (e) {
            if (!(e instanceof PrimerError) || e.status !== 0 || e.kind !== "unavailable")
                throw e;
            await sleep(o.reconnectDelayMs ?? 500, o.signal);
            continue;
        }
        try {
            for await (const m of sse(resp.body)) {
                if (m.event === "error")
                    throw errorFromEnvelope(safeJSON(m.data), 200) ?? makeError("internal", m.data, 200);
                const v = decode(m.event, m.data);
                if (m.id !== undefined && m.id !== "")
                    last = m.id;
                if (v !== undefined)
                    yield v;
                if (ends(m.event, v))
                    return;
            }
        }
        catch (e) {
            if (o.signal?.aborted)
                throw makeError("canceled", `${path}: canceled`, 0, {}, undefined, e);
            // The connection dropped mid-stream (unavailable, status 0): resume
            // after the last id. Anything else the server said ends the stream.
            if (!(e instanceof PrimerError) || e.status !== 0 || e.kind !== "unavailable")
                throw e;
        }
        if (o.signal?.aborted)
            throw makeError("canceled", `${path}: canceled`, 0);
        await sleep(o.reconnectDelayMs ?? 500, o.signal);
    }
}
function safeJSON(s) {
    try {
        return JSON.parse(s);
    }
    catch {
        return undefined;
    }
}
/** decodeEvent decodes an event's data. */
export function decodeEvent(_event, data) {
    return JSON.parse(data);
}
/** TenantEvents reads the events of the caller's tenant across its workspaces. */
export class TenantEvents {
    t;
    constructor(t) {
        this.t = t;
    }
    /** list returns a page of stored events after `after` and the newest id. */
    list(o = {}) {
        return this.t.json({ method: "GET", path: "/v1/events", query: { after: o.after, limit: o.limit, tenant: o.tenant }, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** follow yields stored events after `after`, then new ones as they happen; it never ends by itself (abort the signal or break). */
    follow(o = {}) {
        return followSSE(this.t, "/v1/events", { tenant: o.tenant }, o, decodeEvent, () => false);
    }
}
