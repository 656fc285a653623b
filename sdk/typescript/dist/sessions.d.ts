import { type CallOptions, type Transport } from "./http.js";
import { type FollowOptions } from "./events.js";
import type { CreateSessionRequest, Diff, History, Restore, Session as SessionData, SessionRun, ToolExecArgs, ToolExecResult, ToolReadResult, ToolWriteResult, Transcript, TranscriptEntry } from "./types.js";
/** Session is a handle on one session. */
export declare class Session implements AsyncDisposable {
    private readonly t;
    data: SessionData;
    constructor(t: Transport, data: SessionData);
    get id(): string;
    private path;
    /** refresh reads the session again. */
    refresh(o?: CallOptions): Promise<SessionData>;
    /** end ends the session (reason default ended_by_user); ending again keeps the first reason. */
    end(reason?: string, o?: CallOptions): Promise<SessionData>;
    /** tool calls a session tool by name with args. */
    tool<R = unknown>(name: string, args: unknown, o?: CallOptions): Promise<R>;
    /** exec runs a command through the workspace__exec tool: an argv array, or a string run by sh -c. */
    exec(cmd: string[] | string, o?: CallOptions & Omit<ToolExecArgs, "args" | "command">): Promise<ToolExecResult>;
    /** write writes a file through the workspace__write tool (bytes go as base64). */
    write(path: string, content: string | Uint8Array, o?: CallOptions & {
        mode?: string;
    }): Promise<ToolWriteResult>;
    /** read reads a file through the workspace__read tool. */
    read(path: string, o?: CallOptions): Promise<ToolReadResult>;
    /** history lists the session's commits, newest first. */
    history(o?: CallOptions & {
        includeResumed?: boolean;
    }): Promise<History>;
    /** diff is a commit against its parent ({commit}) or between two ({from, to}). */
    diff(q: {
        commit?: string;
        from?: string;
        to?: string;
    }, o?: CallOptions): Promise<Diff>;
    /** restore makes the workspace's files those of commit (recorded as a new commit). */
    restore(commit: string, o?: CallOptions): Promise<Restore>;
    /** run starts agent's run on this session with instructions. */
    run(agent: string, instructions: string, o?: CallOptions): Promise<SessionRun>;
    /** cancel asks the session's agent run to stop. */
    cancel(o?: CallOptions): Promise<void>;
    /** transcript returns the transcript as it stands. */
    transcript(o?: CallOptions): Promise<Transcript>;
    /**
     * followTranscript yields each transcript entry once it is final, in
     * order, until the run ends; a dropped stream resumes after the last
     * entry. The ended run is the generator's return value, and `ended` of
     * the session after it.
     */
    followTranscript(o?: FollowOptions): AsyncGenerator<TranscriptEntry, SessionRun>;
    /** Symbol.asyncDispose ends the session (for `await using`). */
    [Symbol.asyncDispose](): Promise<void>;
}
/** Sessions creates and finds sessions. */
export declare class Sessions {
    private readonly t;
    constructor(t: Transport);
    /** create opens a session on a workspace (with instructions and agent, its agent run starts at once). */
    create(req: CreateSessionRequest, o?: CallOptions): Promise<Session>;
    /** get returns a handle on session id. */
    get(id: string, o?: CallOptions): Promise<Session>;
    /** list lists sessions, newest first. */
    list(q?: CallOptions & {
        workspace_id?: string;
        status?: string;
    }): Promise<SessionData[]>;
}
