// Snapshots: captures of a workspace's sandbox that new workspaces start
// from (create with snapshot_id, or a fork); take one with
// workspace.snapshot(), find, wait for and delete them here.
import { FailedPreconditionError, makeError } from "./errors.js";
import { seg, sleep } from "./http.js";
/** Snapshots finds, waits for and deletes snapshots. */
export class Snapshots {
    t;
    constructor(t) {
        this.t = t;
    }
    /** get returns snapshot id (NotFoundError when unknown or another tenant's). */
    get(id, o = {}) {
        return this.t.json({ method: "GET", path: `/v1/snapshots/${seg(id)}`, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** list lists snapshots, newest first. */
    async list(q = {}) {
        const { signal, timeoutMs, ...query } = q;
        return (await this.t.json({ method: "GET", path: "/v1/snapshots", query: query, signal, timeoutMs })).items;
    }
    /** wait waits until snapshot id is ready; failed or deleting is an error. */
    wait(id, o = {}) {
        return waitSnapshot(this.t, id, o);
    }
    /** delete deletes snapshot id (it answers deleting); a ConflictError while a pool fills from it. */
    delete(id, o = {}) {
        return this.t.json({ method: "DELETE", path: `/v1/snapshots/${seg(id)}`, signal: o.signal, timeoutMs: o.timeoutMs });
    }
}
/** waitSnapshot polls snapshot id until it is ready. */
export async function waitSnapshot(t, id, o = {}) {
    const deadline = Date.now() + (o.waitTimeoutMs ?? 300_000);
    for (;;) {
        const s = await t.json({ method: "GET", path: `/v1/snapshots/${seg(id)}`, signal: o.signal, timeoutMs: o.timeoutMs });
        if (s.phase === "ready")
            return s;
        if (s.phase === "failed" || s.phase === "deleting") {
            throw new FailedPreconditionError("failed_precondition", `snapshot ${id}: is ${s.phase}${s.reason ? ": " + s.reason : ""}`, 409);
        }
        if (Date.now() > deadline)
            throw makeError("timeout", `snapshot ${id}: still ${s.phase} after ${o.waitTimeoutMs ?? 300_000} ms`, 0);
        await sleep(o.pollMs ?? 100, o.signal);
    }
}
