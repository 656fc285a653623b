import { type CallOptions, type Transport } from "./http.js";
import type { FileInfo } from "./types.js";
/** Uploadable is what a file's content may be given as. */
export type Uploadable = string | Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | Iterable<Uint8Array>;
/** WriteOptions are a write's options. */
export interface WriteOptions extends CallOptions {
    /** mode is the permission bits, a number (0o600) or an octal string ("0600"). */
    mode?: number | string;
    /** user owns what the write creates (a user of the sandbox). */
    user?: string;
}
/** Download is a file being read: its size and mode, and a body to read once. */
export interface Download {
    /** size is Content-Length, when the server sent it. */
    size?: number;
    /** mode is the permission bits (X-Primer-File-Mode). */
    mode?: number;
    /** body streams the bytes. */
    body: ReadableStream<Uint8Array>;
    bytes(): Promise<Uint8Array>;
    text(): Promise<string>;
}
/** filePath is the API path of path in workspace id; an absolute path keeps its leading slash (files//etc/hostname). */
export declare function filePath(id: string, path: string): string;
/** Files reads and writes one workspace's files. */
export declare class Files {
    private readonly t;
    private readonly id;
    constructor(t: Transport, id: string);
    /** write puts data at path (parents made), streaming it; answers the file's info. */
    write(path: string, data: Uploadable, o?: WriteOptions): Promise<FileInfo>;
    /** read opens path for reading; the body streams. */
    read(path: string, o?: CallOptions): Promise<Download>;
    /** readBytes reads the whole file. */
    readBytes(path: string, o?: CallOptions): Promise<Uint8Array>;
    /** readText reads the whole file as UTF-8. */
    readText(path: string, o?: CallOptions): Promise<string>;
    /** list lists the directory at path ("" or "." for the root). */
    list(path?: string, o?: CallOptions): Promise<FileInfo[]>;
    /** stat describes path (a symlink itself). */
    stat(path: string, o?: CallOptions): Promise<FileInfo>;
    /** exists says whether path exists. */
    exists(path: string, o?: CallOptions): Promise<boolean>;
    /** mkdir makes the directory path and its parents. */
    mkdir(path: string, o?: CallOptions & {
        user?: string;
    }): Promise<FileInfo>;
    /** remove deletes path; a non-empty directory needs recursive. */
    remove(path: string, o?: CallOptions & {
        recursive?: boolean;
    }): Promise<void>;
}
