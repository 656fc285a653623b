import { type CallOptions, type Transport } from "./http.js";
import type { ExecChunk, ExecExit, ExecResult, ExecSpec } from "./types.js";
/** ExecOptions are exec's options besides the command. */
export interface ExecOptions extends CallOptions, Omit<ExecSpec, "command" | "stdin"> {
    /** stdin is fed to the command (text, or bytes decoded as UTF-8). */
    stdin?: string | Uint8Array;
}
/** Command is a command line: an argv array, or a string run by sh -c. */
export type Command = string[] | string;
/** argv turns a command into the argv exec sends. */
export declare function argv(cmd: Command): string[];
/** exec runs cmd to its end and returns its output and exit code. */
export declare function exec(t: Transport, id: string, cmd: Command, o?: ExecOptions): Promise<ExecResult>;
/**
 * ExecStream is a running command's output as an async iterator of
 * chunks; exit resolves when the command ended. Stopping the iteration
 * early (break) or aborting the signal cancels the command.
 */
export declare class ExecStream implements AsyncIterable<ExecChunk> {
    private readonly open;
    /** exit resolves with the command's exit once the stream ended. */
    readonly exit: Promise<ExecExit>;
    private resolveExit;
    private rejectExit;
    private started;
    constructor(open: () => Promise<Response>);
    [Symbol.asyncIterator](): AsyncGenerator<ExecChunk>;
    /** collect reads the stream to its end: the output joined, and the exit. */
    collect(onChunk?: (c: ExecChunk) => void): Promise<ExecResult>;
}
/** execStream starts cmd with its output streamed. */
export declare function execStream(t: Transport, id: string, cmd: Command, o?: ExecOptions): ExecStream;
