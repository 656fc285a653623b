import { type CallOptions, type Transport } from "./http.js";
import { type Command, type ExecOptions, type ExecStream } from "./exec.js";
import { Files } from "./files.js";
import { Processes } from "./processes.js";
import { type FollowOptions } from "./events.js";
import { type Session } from "./sessions.js";
import type { CreateSessionRequest, CreateSnapshotRequest, CreateWorkspaceRequest, Event, ExecResult, ExtendRequest, ForkRequest, ListeningPort, PauseRequest, Preview, PreviewLink, Snapshot, Workspace as WorkspaceData, WorkspaceListOptions } from "./types.js";
/** Forked is a fork's answer: its implicit snapshot and the new workspaces. */
export interface Forked {
    snapshot: Snapshot;
    workspaces: Workspace[];
}
/** WaitOptions bound a wait. */
export interface WaitOptions extends CallOptions {
    /** waitTimeoutMs gives up after this long (default 5 minutes). */
    waitTimeoutMs?: number;
    /** pollMs is how often the workspace is read (default 100). */
    pollMs?: number;
}
/** CreateOptions are a create's options: wait for running (default) or not. */
export interface CreateOptions extends WaitOptions {
    /** wait waits until the workspace runs (default true). */
    wait?: boolean;
}
/** Workspace is a handle on one workspace: its last seen state and what it does. */
export declare class Workspace implements AsyncDisposable {
    protected readonly t: Transport;
    data: WorkspaceData;
    /** files reads and writes the workspace's files. */
    readonly files: Files;
    /** processes runs background processes in it. */
    readonly processes: Processes;
    constructor(t: Transport, data: WorkspaceData);
    get id(): string;
    get phase(): string;
    /** refresh reads the workspace again. */
    refresh(o?: CallOptions): Promise<WorkspaceData>;
    /** wait waits until the workspace runs; failed, escalated or gone is an error. */
    wait(o?: WaitOptions): Promise<this>;
    /** exec runs cmd (an argv array, or a string for sh -c) to its end. */
    exec(cmd: Command, o?: ExecOptions): Promise<ExecResult>;
    /** execStream runs cmd with its output streamed: iterate it, then await .exit. */
    execStream(cmd: Command, o?: ExecOptions): ExecStream;
    /** events returns the stored events after `after`. */
    events(o?: CallOptions & {
        after?: number;
    }): Promise<Event[]>;
    /** followEvents yields stored events, then new ones, until workspace.destroyed; a dropped stream resumes. */
    followEvents(o?: FollowOptions): AsyncGenerator<Event>;
    /** extend moves the workspace's deadlines: { by: "30m" } or { until: ISO time }. */
    extend(req: ExtendRequest | string, o?: CallOptions): Promise<WorkspaceData>;
    /** recover asks a failed or escalated workspace to be replaced now. */
    recover(o?: CallOptions): Promise<WorkspaceData>;
    /** return gives a workspace leased from a pool back to it. */
    return(o?: CallOptions): Promise<WorkspaceData>;
    /** delete deletes the workspace; with wait, until it is gone. A workspace already gone is not an error. */
    delete(o?: WaitOptions & {
        wait?: boolean;
    }): Promise<void>;
    /** ports lists the TCP ports programs listen on inside the workspace. */
    ports(o?: CallOptions): Promise<ListeningPort[]>;
    /** preview makes a link that opens port in a browser with no key until ttl (default 1h) passes or it is revoked; its url is shown this once. */
    preview(port: number, o?: CallOptions & {
        ttl?: string;
    }): Promise<PreviewLink>;
    /** previews lists the workspace's live preview links (without their urls). */
    previews(o?: CallOptions): Promise<Preview[]>;
    /** revokePreview revokes a preview link: it answers 403 from now on. */
    revokePreview(id: string, o?: CallOptions): Promise<Preview>;
    /** snapshot captures the workspace and (unless wait: false) waits until the snapshot is ready. */
    snapshot(req?: CreateSnapshotRequest, o?: CreateOptions): Promise<Snapshot>;
    /** fork makes N workspaces from one implicit snapshot of this one (all or nothing against quotas) and (unless wait: false) waits until each runs. */
    fork(req: ForkRequest | number, o?: CreateOptions): Promise<Forked>;
    /** pause stops the workspace's compute and keeps its files; (unless wait: false) until it is paused. */
    pause(req?: PauseRequest, o?: CreateOptions): Promise<WorkspaceData>;
    /** resume starts a paused workspace again with its files; (unless wait: false) until it runs. */
    resume(o?: CreateOptions): Promise<WorkspaceData>;
    /** waitPhase polls until the workspace is in phase; terminating or gone is an error. */
    private waitPhase;
    /** session opens a session on this workspace (an agent's place: tool calls recorded as commits). */
    session(o?: CallOptions & Omit<CreateSessionRequest, "workspace_id">): Promise<Session>;
    /** Symbol.asyncDispose deletes the workspace (for `await using`). */
    [Symbol.asyncDispose](): Promise<void>;
}
/** waitGone waits until workspace id is destroyed (GET is 404). */
export declare function waitGone(t: Transport, id: string, o?: WaitOptions): Promise<void>;
/** Workspaces creates, finds and deletes workspaces. */
export declare class Workspaces {
    private readonly t;
    constructor(t: Transport);
    /** create makes a workspace from a template and (unless wait: false) waits until it runs. */
    create(req: CreateWorkspaceRequest | string, o?: CreateOptions): Promise<Workspace>;
    /** with creates a workspace, runs fn with it, and deletes it however fn ends. */
    with<T>(req: CreateWorkspaceRequest | string, fn: (ws: Workspace) => Promise<T>, o?: CreateOptions): Promise<T>;
    /** get returns a handle on workspace id. */
    get(id: string, o?: CallOptions): Promise<Workspace>;
    /** handle returns a handle on workspace id without reading it. */
    handle(id: string): Workspace;
    /** list lists workspaces, newest first. */
    list(q?: WorkspaceListOptions & CallOptions): Promise<WorkspaceData[]>;
    /** delete deletes workspace id; with wait, until it is gone. */
    delete(id: string, o?: WaitOptions & {
        wait?: boolean;
    }): Promise<void>;
}
