// Workspaces: create (and wait until running), a handle with everything a
// workspace does (exec, files, processes, events, lifetimes), and delete;
// `await using` or withWorkspace deletes one when the code using it ends.
import { FailedPreconditionError, NotFoundError, makeError } from "./errors.js";
import { seg, sleep } from "./http.js";
import { exec, execStream } from "./exec.js";
import { Files } from "./files.js";
import { Processes } from "./processes.js";
import { decodeEvent, followSSE } from "./events.js";
import { Sessions } from "./sessions.js";
import { waitSnapshot } from "./snapshots.js";
/** Workspace is a handle on one workspace: its last seen state and what it does. */
export class Workspace {
    t;
    data;
    /** files reads and writes the workspace's files. */
    files;
    /** processes runs background processes in it. */
    processes;
    constructor(t, data) {
        this.t = t;
        this.data = data;
        this.files = new Files(t, data.id);
        this.processes = new Processes(t, data.id);
    }
    get id() { return this.data.id; }
    get phase() { return this.data.phase; }
    /** refresh reads the workspace again. */
    async refresh(o = {}) {
        this.data = await this.t.json({ method: "GET", path: `/v1/workspaces/${seg(this.id)}`, signal: o.signal, timeoutMs: o.timeoutMs });
        return this.data;
    }
    /** wait waits until the workspace runs; failed, escalated or gone is an error. */
    async wait(o = {}) {
        const deadline = Date.now() + (o.waitTimeoutMs ?? 300_000);
        for (;;) {
            const ws = this.data.phase === "running" ? this.data : await this.refresh(o);
            if (ws.phase === "running")
                return this;
            if (ws.phase === "failed" || ws.phase === "escalated" || ws.phase === "terminating") {
                throw new FailedPreconditionError("failed_precondition", `workspace ${ws.id}: is ${ws.phase}${ws.reason ? ": " + ws.reason : ""}`, 409);
            }
            if (Date.now() > deadline)
                throw makeError("timeout", `workspace ${ws.id}: still ${ws.phase} after ${o.waitTimeoutMs ?? 300_000} ms`, 0);
            await sleep(o.pollMs ?? 100, o.signal);
        }
    }
    /** exec runs cmd (an argv array, or a string for sh -c) to its end. */
    exec(cmd, o = {}) {
        return exec(this.t, this.id, cmd, o);
    }
    /** execStream runs cmd with its output streamed: iterate it, then await .exit. */
    execStream(cmd, o = {}) {
        return execStream(this.t, this.id, cmd, o);
    }
    /** events returns the stored events after `after`. */
    async events(o = {}) {
        return (await this.t.json({ method: "GET", path: `/v1/workspaces/${seg(this.id)}/events`, query: { after: o.after }, signal: o.signal, timeoutMs: o.timeoutMs })).items;
    }
    /** followEvents yields stored events, then new ones, until workspace.destroyed; a dropped stream resumes. */
    followEvents(o = {}) {
        return followSSE(this.t, `/v1/workspaces/${seg(this.id)}/events`, {}, o, decodeEvent, (ev) => ev === "workspace.destroyed");
    }
    /** extend moves the workspace's deadlines: { by: "30m" } or { until: ISO time }. */
    async extend(req, o = {}) {
        const body = typeof req === "string" ? { by: req } : req;
        this.data = await this.t.json({ method: "POST", path: `/v1/workspaces/${seg(this.id)}/extend`, json: body, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
        return this.data;
    }
    /** recover asks a failed or escalated workspace to be replaced now. */
    async recover(o = {}) {
        this.data = await this.t.json({ method: "POST", path: `/v1/workspaces/${seg(this.id)}/recover`, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
        return this.data;
    }
    /** return gives a workspace leased from a pool back to it. */
    async return(o = {}) {
        this.data = await this.t.json({ method: "POST", path: `/v1/workspaces/${seg(this.id)}/return`, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
        return this.data;
    }
    /** delete deletes the workspace; with wait, until it is gone. A workspace already gone is not an error. */
    async delete(o = {}) {
        try {
            this.data = await this.t.json({ method: "DELETE", path: `/v1/workspaces/${seg(this.id)}`, signal: o.signal, timeoutMs: o.timeoutMs });
        }
        catch (e) {
            if (e instanceof NotFoundError)
                return;
            throw e;
        }
        if (o.wait)
            await waitGone(this.t, this.id, o);
    }
    /** ports lists the TCP ports programs listen on inside the workspace. */
    async ports(o = {}) {
        return (await this.t.json({ method: "GET", path: `/v1/workspaces/${seg(this.id)}/ports`, signal: o.signal, timeoutMs: o.timeoutMs })).items;
    }
    /** preview makes a link that opens port in a browser with no key until ttl (default 1h) passes or it is revoked; its url is shown this once. */
    preview(port, o = {}) {
        return this.t.json({ method: "POST", path: `/v1/workspaces/${seg(this.id)}/previews`, json: { port, ttl: o.ttl }, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** previews lists the workspace's live preview links (without their urls). */
    async previews(o = {}) {
        return (await this.t.json({ method: "GET", path: `/v1/workspaces/${seg(this.id)}/previews`, signal: o.signal, timeoutMs: o.timeoutMs })).items;
    }
    /** revokePreview revokes a preview link: it answers 403 from now on. */
    revokePreview(id, o = {}) {
        return this.t.json({ method: "DELETE", path: `/v1/workspaces/${seg(this.id)}/previews/${seg(id)}`, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** snapshot captures the workspace and (unless wait: false) waits until the snapshot is ready. */
    async snapshot(req = {}, o = {}) {
        const s = await this.t.json({ method: "POST", path: `/v1/workspaces/${seg(this.id)}/snapshots`, json: req, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
        return o.wait === false || s.phase === "ready" ? s : waitSnapshot(this.t, s.id, o);
    }
    /** fork makes N workspaces from one implicit snapshot of this one (all or nothing against quotas) and (unless wait: false) waits until each runs. */
    async fork(req, o = {}) {
        const body = typeof req === "number" ? { count: req } : req;
        const d = await this.t.json({ method: "POST", path: `/v1/workspaces/${seg(this.id)}/fork`, json: body, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
        const children = d.workspaces.map((w) => new Workspace(this.t, w));
        if (o.wait !== false)
            await Promise.all(children.map((w) => w.wait(o)));
        return { snapshot: d.snapshot, workspaces: children };
    }
    /** pause stops the workspace's compute and keeps its files; (unless wait: false) until it is paused. */
    async pause(req = {}, o = {}) {
        this.data = await this.t.json({ method: "POST", path: `/v1/workspaces/${seg(this.id)}/pause`, json: req, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
        if (o.wait === false)
            return this.data;
        return this.waitPhase("paused", o);
    }
    /** resume starts a paused workspace again with its files; (unless wait: false) until it runs. */
    async resume(o = {}) {
        this.data = await this.t.json({ method: "POST", path: `/v1/workspaces/${seg(this.id)}/resume`, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
        if (o.wait === false)
            return this.data;
        await this.wait(o);
        return this.data;
    }
    /** waitPhase polls until the workspace is in phase; terminating or gone is an error. */
    async waitPhase(phase, o) {
        const deadline = Date.now() + (o.waitTimeoutMs ?? 300_000);
        for (;;) {
            const ws = this.data.phase === phase ? this.data : await this.refresh(o);
            if (ws.phase === phase)
                return ws;
            if (ws.phase === "failed" || ws.phase === "escalated" || ws.phase === "terminating") {
                throw new FailedPreconditionError("failed_precondition", `workspace ${ws.id}: is ${ws.phase}${ws.reason ? ": " + ws.reason : ""}`, 409);
            }
            if (Date.now() > deadline)
                throw makeError("timeout", `workspace ${ws.id}: still ${ws.phase} after ${o.waitTimeoutMs ?? 300_000} ms`, 0);
            await sleep(o.pollMs ?? 100, o.signal);
        }
    }
    /** session opens a session on this workspace (an agent's place: tool calls recorded as commits). */
    async session(o = {}) {
        const { signal, timeoutMs, ...req } = o;
        return new Sessions(this.t).create({ ...req, workspace_id: this.id }, { signal, timeoutMs });
    }
    /** Symbol.asyncDispose deletes the workspace (for `await using`). */
    async [Symbol.asyncDispose]() {
        await this.delete();
    }
}
/** waitGone waits until workspace id is destroyed (GET is 404). */
export async function waitGone(t, id, o = {}) {
    const deadline = Date.now() + (o.waitTimeoutMs ?? 300_000);
    for (;;) {
        try {
            await t.json({ method: "GET", path: `/v1/workspaces/${seg(id)}`, signal: o.signal, timeoutMs: o.timeoutMs });
        }
        catch (e) {
            if (e instanceof NotFoundError)
                return;
            throw e;
        }
        if (Date.now() > deadline)
            throw makeError("timeout", `workspace ${id}: not gone after ${o.waitTimeoutMs ?? 300_000} ms`, 0);
        await sleep(o.pollMs ?? 100, o.signal);
    }
}
/** Workspaces creates, finds and deletes workspaces. */
export class Workspaces {
    t;
    constructor(t) {
        this.t = t;
    }
    /** create makes a workspace from a template and (unless wait: false) waits until it runs. */
    async create(req, o = {}) {
        const body = typeof req === "string" ? { template_id: req } : req;
        const data = await this.t.json({ method: "POST", path: "/v1/workspaces", json: body, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
        const ws = new Workspace(this.t, data);
        if (o.wait !== false) {
            try {
                await ws.wait(o);
            }
            catch (e) {
                // A workspace that never ran is of no use to the caller, who has no
                // handle on it yet: it is deleted rather than left behind.
                await ws.delete().catch(() => { });
                throw e;
            }
        }
        return ws;
    }
    /** with creates a workspace, runs fn with it, and deletes it however fn ends. */
    async with(req, fn, o = {}) {
        const ws = await this.create(req, o);
        try {
            return await fn(ws);
        }
        finally {
            await ws.delete().catch(() => { });
        }
    }
    /** get returns a handle on workspace id. */
    async get(id, o = {}) {
        return new Workspace(this.t, await this.t.json({ method: "GET", path: `/v1/workspaces/${seg(id)}`, signal: o.signal, timeoutMs: o.timeoutMs }));
    }
    /** handle returns a handle on workspace id without reading it. */
    handle(id) {
        return new Workspace(this.t, { id });
    }
    /** list lists workspaces, newest first. */
    async list(q = {}) {
        const { signal, timeoutMs, ...query } = q;
        return (await this.t.json({ method: "GET", path: "/v1/workspaces", query: query, signal, timeoutMs })).items;
    }
    /** delete deletes workspace id; with wait, until it is gone. */
    delete(id, o = {}) {
        return this.handle(id).delete(o);
    }
}
