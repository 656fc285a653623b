import type { CallOptions } from "./http.js";
import type { Files, WriteOptions } from "./files.js";
import type { FileInfo } from "./types.js";
/** uploadFile streams the local file at localPath to remotePath in the workspace (mode: the local file's unless given). */
export declare function uploadFile(files: Files, localPath: string, remotePath: string, o?: WriteOptions): Promise<FileInfo>;
/** downloadFile streams remotePath in the workspace to the local file at localPath and returns the bytes written. */
export declare function downloadFile(files: Files, remotePath: string, localPath: string, o?: CallOptions): Promise<number>;
