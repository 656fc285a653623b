import { type CallOptions, type Transport } from "./http.js";
import { type Command } from "./exec.js";
import type { ExecExit, Process, ProcessSpec } from "./types.js";
/** StartOptions are a process's options besides its command. */
export type StartOptions = CallOptions & Omit<ProcessSpec, "command">;
/** AttachMessage is one message of an attach stream. */
export interface AttachOutput {
    type: "output";
    stream: string;
    data: Uint8Array;
}
/** Processes manages one workspace's background processes. */
export declare class Processes {
    private readonly t;
    private readonly id;
    constructor(t: Transport, id: string);
    private path;
    /** start starts cmd in the background. */
    start(cmd: Command, o?: StartOptions): Promise<Process>;
    /** list lists running processes and the last that ended. */
    list(o?: CallOptions): Promise<Process[]>;
    /** get returns one process. */
    get(pid: number, o?: CallOptions): Promise<Process>;
    /** input writes data to the process's stdin (or terminal). */
    input(pid: number, data: string, o?: CallOptions): Promise<void>;
    /** signal sends a signal ("TERM", "INT", "KILL", ...). */
    signal(pid: number, sig: string, o?: CallOptions): Promise<void>;
    /** resize resizes the process's terminal. */
    resize(pid: number, cols: number, rows: number, o?: CallOptions): Promise<void>;
    /** closeStdin closes the process's stdin (EOF). */
    closeStdin(pid: number, o?: CallOptions): Promise<void>;
    /** wait polls the process until it ended and returns its exit. */
    wait(pid: number, o?: CallOptions & {
        pollMs?: number;
    }): Promise<ExecExit>;
    /**
     * attach yields the process's output from now on (with replay, first
     * the last 16 KiB the runtime kept) until it exits, and returns the
     * exit. It needs a WebSocket that sends headers (Node 22+, Node 20 with
     * --experimental-websocket, Deno, Bun); browsers cannot send the key on
     * a WebSocket.
     */
    attach(pid: number, o?: CallOptions & {
        replay?: boolean;
    }): AsyncGenerator<AttachOutput, ExecExit>;
    /**
     * open attaches to the process both ways: iterate the Attachment for
     * output, send input, resizes, signals and EOF on it, await exit.
     * Closing it detaches; the process runs on.
     */
    open(pid: number, o?: CallOptions & {
        replay?: boolean;
    }): Promise<Attachment>;
}
/**
 * Attachment is one attach to a process: an async iterator of its output,
 * input and control messages, and its exit.
 */
export declare class Attachment implements AsyncIterable<AttachOutput> {
    private readonly ws;
    /** exit resolves with the process's exit; it rejects when the connection ends first. */
    readonly exit: Promise<ExecExit>;
    /** opened resolves once the connection is up. */
    readonly opened: Promise<void>;
    private readonly queue;
    private wake?;
    private done;
    private failure?;
    private resolveExit;
    private rejectExit;
    constructor(ws: WebSocketLike, signal?: AbortSignal);
    private finish;
    [Symbol.asyncIterator](): AsyncGenerator<AttachOutput>;
    private send;
    /** input writes data to the process's stdin or terminal. */
    input(data: string | Uint8Array): void;
    /** resize resizes the process's terminal. */
    resize(cols: number, rows: number): void;
    /** signal sends a signal ("INT", "TERM", ...). */
    signal(sig: string): void;
    /** closeStdin closes the process's stdin. */
    closeStdin(): void;
    /** close detaches; the process runs on. */
    close(): void;
    [Symbol.dispose](): void;
}
interface WebSocketLike {
    onopen: ((ev: unknown) => void) | null;
    onmessage: ((ev: {
        data: unknown;
    }) => void) | null;
    onclose: ((ev: unknown) => void) | null;
    onerror: ((ev: unknown) => void) | null;
    send(data: string): void;
    close(): void;
}
export {};
