// Sessions: an agent's place on a workspace. Tool calls recorded as
// commits, their history, diff and restore, and agent runs whose
// transcript streams as it is written.
import { makeError } from "./errors.js";
import { seg } from "./http.js";
import { followSSE } from "./events.js";
/** Session is a handle on one session. */
export class Session {
    t;
    data;
    constructor(t, data) {
        this.t = t;
        this.data = data;
    }
    get id() { return this.data.id; }
    path(op) {
        return `/v1/sessions/${seg(this.id)}` + (op ? "/" + op : "");
    }
    /** refresh reads the session again. */
    async refresh(o = {}) {
        this.data = await this.t.json({ method: "GET", path: this.path(), signal: o.signal, timeoutMs: o.timeoutMs });
        return this.data;
    }
    /** end ends the session (reason default ended_by_user); ending again keeps the first reason. */
    async end(reason, o = {}) {
        this.data = await this.t.json({ method: "POST", path: this.path("end"), json: reason ? { reason } : {}, idempotent: true, signal: o.signal, timeoutMs: o.timeoutMs });
        return this.data;
    }
    /** tool calls a session tool by name with args. */
    tool(name, args, o = {}) {
        return this.t.json({ method: "POST", path: this.path("tools/" + seg(name)), json: args, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs ?? 0 });
    }
    /** exec runs a command through the workspace__exec tool: an argv array, or a string run by sh -c. */
    exec(cmd, o = {}) {
        const { signal, timeoutMs, ...rest } = o;
        return this.tool("workspace__exec", { ...(typeof cmd === "string" ? { command: cmd } : { args: cmd }), ...rest }, { signal, timeoutMs });
    }
    /** write writes a file through the workspace__write tool (bytes go as base64). */
    write(path, content, o = {}) {
        const args = typeof content === "string" ? { path, content } : { path, content: toBase64(content), encoding: "base64" };
        if (o.mode)
            args.mode = o.mode;
        return this.tool("workspace__write", args, o);
    }
    /** read reads a file through the workspace__read tool. */
    read(path, o = {}) {
        return this.tool("workspace__read", { path }, o);
    }
    /** history lists the session's commits, newest first. */
    history(o = {}) {
        return this.t.json({ method: "GET", path: this.path("history"), query: { include_resumed: o.includeResumed ? true : undefined }, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** diff is a commit against its parent ({commit}) or between two ({from, to}). */
    diff(q, o = {}) {
        return this.t.json({ method: "GET", path: this.path("diff"), query: q, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** restore makes the workspace's files those of commit (recorded as a new commit). */
    restore(commit, o = {}) {
        return this.t.json({ method: "POST", path: this.path("restore"), json: { commit }, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs ?? 0 });
    }
    /** run starts agent's run on this session with instructions. */
    run(agent, instructions, o = {}) {
        return this.t.json({ method: "POST", path: this.path("run"), json: { agent, instructions }, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** cancel asks the session's agent run to stop. */
    async cancel(o = {}) {
        await this.t.send({ method: "POST", path: this.path("cancel"), json: {}, idempotent: true, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** transcript returns the transcript as it stands. */
    transcript(o = {}) {
        return this.t.json({ method: "GET", path: this.path("transcript"), signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /**
     * followTranscript yields each transcript entry once it is final, in
     * order, until the run ends; a dropped stream resumes after the last
     * entry. The ended run is the generator's return value, and `ended` of
     * the session after it.
     */
    async *followTranscript(o = {}) {
        let run;
        const it = followSSE(this.t, this.path("transcript"), {}, o, (event, data) => (event === "end" ? { end: JSON.parse(data) } : { entry: JSON.parse(data) }), (event) => event === "end");
        for await (const v of it) {
            if (v.end)
                run = v.end;
            else if (v.entry)
                yield v.entry;
        }
        if (!run)
            throw makeError("internal", `session ${this.id}: transcript ended without the run`, 200);
        return run;
    }
    /** Symbol.asyncDispose ends the session (for `await using`). */
    async [Symbol.asyncDispose]() {
        await this.end().catch(() => { });
    }
}
/** Sessions creates and finds sessions. */
export class Sessions {
    t;
    constructor(t) {
        this.t = t;
    }
    /** create opens a session on a workspace (with instructions and agent, its agent run starts at once). */
    async create(req, o = {}) {
        return new Session(this.t, await this.t.json({ method: "POST", path: "/v1/sessions", json: req, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs }));
    }
    /** get returns a handle on session id. */
    async get(id, o = {}) {
        return new Session(this.t, await this.t.json({ method: "GET", path: `/v1/sessions/${seg(id)}`, signal: o.signal, timeoutMs: o.timeoutMs }));
    }
    /** list lists sessions, newest first. */
    async list(q = {}) {
        const { signal, timeoutMs, ...query } = q;
        return (await this.t.json({ method: "GET", path: "/v1/sessions", query, signal, timeoutMs })).items;
    }
}
function toBase64(b) {
    let s = "";
    for (let i = 0; i < b.length; i += 0x8000)
        s += String.fromCharCode(...b.subarray(i, i + 0x8000));
    return btoa(s);
}
