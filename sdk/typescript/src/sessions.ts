// Sessions: an agent's place on a workspace. Tool calls recorded as
// commits, their history, diff and restore, and agent runs whose
// transcript streams as it is written.

import { makeError } from "./errors.js";
import { type CallOptions, type Transport, seg } from "./http.js";
import { type FollowOptions, followSSE } from "./events.js";
import type { CreateSessionRequest, Diff, History, Restore, Session as SessionData, SessionRun, ToolExecArgs, ToolExecResult, ToolReadResult, ToolWriteArgs, ToolWriteResult, Transcript, TranscriptEntry } from "./types.js";

/** Session is a handle on one session. */
export class Session implements AsyncDisposable {
  constructor(private readonly t: Transport, public data: SessionData) {}

  get id(): string { return this.data.id; }

  private path(op?: string): string {
    return `/v1/sessions/${seg(this.id)}` + (op ? "/" + op : "");
  }

  /** refresh reads the session again. */
  async refresh(o: CallOptions = {}): Promise<SessionData> {
    this.data = await this.t.json<SessionData>({ method: "GET", path: this.path(), signal: o.signal, timeoutMs: o.timeoutMs });
    return this.data;
  }

  /** end ends the session (reason default ended_by_user); ending again keeps the first reason. */
  async end(reason?: string, o: CallOptions = {}): Promise<SessionData> {
    this.data = await this.t.json<SessionData>({ method: "POST", path: this.path("end"), json: reason ? { reason } : {}, idempotent: true, signal: o.signal, timeoutMs: o.timeoutMs });
    return this.data;
  }

  /** tool calls a session tool by name with args. */
  tool<R = unknown>(name: string, args: unknown, o: CallOptions = {}): Promise<R> {
    return this.t.json<R>({ method: "POST", path: this.path("tools/" + seg(name)), json: args, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs ?? 0 });
  }

  /** exec runs a command through the workspace__exec tool: an argv array, or a string run by sh -c. */
  exec(cmd: string[] | string, o: CallOptions & Omit<ToolExecArgs, "args" | "command"> = {}): Promise<ToolExecResult> {
    const { signal, timeoutMs, ...rest } = o;
    return this.tool<ToolExecResult>("workspace__exec", { ...(typeof cmd === "string" ? { command: cmd } : { args: cmd }), ...rest }, { signal, timeoutMs });
  }

  /** write writes a file through the workspace__write tool (bytes go as base64). */
  write(path: string, content: string | Uint8Array, o: CallOptions & { mode?: string } = {}): Promise<ToolWriteResult> {
    const args: ToolWriteArgs = typeof content === "string" ? { path, content } : { path, content: toBase64(content), encoding: "base64" };
    if (o.mode) args.mode = o.mode;
    return this.tool<ToolWriteResult>("workspace__write", args, o);
  }

  /** read reads a file through the workspace__read tool. */
  read(path: string, o: CallOptions = {}): Promise<ToolReadResult> {
    return this.tool<ToolReadResult>("workspace__read", { path }, o);
  }

  /** history lists the session's commits, newest first. */
  history(o: CallOptions & { includeResumed?: boolean } = {}): Promise<History> {
    return this.t.json<History>({ method: "GET", path: this.path("history"), query: { include_resumed: o.includeResumed ? true : undefined }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** diff is a commit against its parent ({commit}) or between two ({from, to}). */
  diff(q: { commit?: string; from?: string; to?: string }, o: CallOptions = {}): Promise<Diff> {
    return this.t.json<Diff>({ method: "GET", path: this.path("diff"), query: q, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** restore makes the workspace's files those of commit (recorded as a new commit). */
  restore(commit: string, o: CallOptions = {}): Promise<Restore> {
    return this.t.json<Restore>({ method: "POST", path: this.path("restore"), json: { commit }, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs ?? 0 });
  }

  /** run starts agent's run on this session with instructions. */
  run(agent: string, instructions: string, o: CallOptions = {}): Promise<SessionRun> {
    return this.t.json<SessionRun>({ method: "POST", path: this.path("run"), json: { agent, instructions }, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** cancel asks the session's agent run to stop. */
  async cancel(o: CallOptions = {}): Promise<void> {
    await this.t.send({ method: "POST", path: this.path("cancel"), json: {}, idempotent: true, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** transcript returns the transcript as it stands. */
  transcript(o: CallOptions = {}): Promise<Transcript> {
    return this.t.json<Transcript>({ method: "GET", path: this.path("transcript"), signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /**
   * followTranscript yields each transcript entry once it is final, in
   * order, until the run ends; a dropped stream resumes after the last
   * entry. The ended run is the generator's return value, and `ended` of
   * the session after it.
   */
  async *followTranscript(o: FollowOptions = {}): AsyncGenerator<TranscriptEntry, SessionRun> {
    let run: SessionRun | undefined;
    type Item = { seq?: number; entry?: TranscriptEntry; end?: SessionRun };
    const it = followSSE<Item>(this.t, this.path("transcript"), {}, o,
      (event, data) => (event === "end" ? { end: JSON.parse(data) as SessionRun } : { entry: JSON.parse(data) as TranscriptEntry }),
      (event) => event === "end");
    for await (const v of it) {
      if (v.end) run = v.end;
      else if (v.entry) yield v.entry;
    }
    if (!run) throw makeError("internal", `session ${this.id}: transcript ended without the run`, 200);
    return run;
  }

  /** Symbol.asyncDispose ends the session (for `await using`). */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.end().catch(() => {});
  }
}

/** Sessions creates and finds sessions. */
export class Sessions {
  constructor(private readonly t: Transport) {}

  /** create opens a session on a workspace (with instructions and agent, its agent run starts at once). */
  async create(req: CreateSessionRequest, o: CallOptions = {}): Promise<Session> {
    return new Session(this.t, await this.t.json<SessionData>({ method: "POST", path: "/v1/sessions", json: req, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs }));
  }

  /** get returns a handle on session id. */
  async get(id: string, o: CallOptions = {}): Promise<Session> {
    return new Session(this.t, await this.t.json<SessionData>({ method: "GET", path: `/v1/sessions/${seg(id)}`, signal: o.signal, timeoutMs: o.timeoutMs }));
  }

  /** list lists sessions, newest first. */
  async list(q: CallOptions & { workspace_id?: string; status?: string } = {}): Promise<SessionData[]> {
    const { signal, timeoutMs, ...query } = q;
    return (await this.t.json<{ items: SessionData[] }>({ method: "GET", path: "/v1/sessions", query, signal, timeoutMs })).items;
  }
}

function toBase64(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return btoa(s);
}
