// Files of a workspace: bodies stream both ways (a file is never held
// whole unless the caller asks for bytes or text).

import { InvalidError } from "./errors.js";
import { type CallOptions, type Transport, seg } from "./http.js";
import type { DirListing, FileInfo } from "./types.js";

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
export function filePath(id: string, path: string): string {
  const abs = path.startsWith("/");
  const parts = path.split("/").filter((s) => s !== "" && s !== ".");
  // fetch's URL parser resolves ".." (escaped or not) before sending, so
  // "../x" would name another route, or another workspace: refused here,
  // as the server refuses a path that leaves the root.
  if (parts.includes("..")) throw new InvalidError("invalid", `path ${JSON.stringify(path)}: ".." is not allowed in a workspace path`, 400, { field: "path" });
  return `/v1/workspaces/${seg(id)}/files/` + (abs && parts.length > 0 ? "/" : "") + parts.map(encodeURIComponent).join("/");
}

function toBody(data: Uploadable): BodyInit {
  if (typeof data === "string" || data instanceof Uint8Array || data instanceof ArrayBuffer || (typeof Blob !== "undefined" && data instanceof Blob) || (typeof ReadableStream !== "undefined" && data instanceof ReadableStream)) {
    return data as BodyInit;
  }
  const it = data as AsyncIterable<Uint8Array> | Iterable<Uint8Array>;
  const iter: AsyncIterator<Uint8Array> | Iterator<Uint8Array> = Symbol.asyncIterator in it ? (it as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]() : (it as Iterable<Uint8Array>)[Symbol.iterator]();
  return new ReadableStream<Uint8Array>({
    async pull(ctl) {
      const { value, done } = await iter.next();
      if (done) ctl.close();
      else ctl.enqueue(value);
    },
    async cancel() {
      await iter.return?.();
    },
  });
}

/** Files reads and writes one workspace's files. */
export class Files {
  constructor(private readonly t: Transport, private readonly id: string) {}

  /** write puts data at path (parents made), streaming it; answers the file's info. */
  write(path: string, data: Uploadable, o: WriteOptions = {}): Promise<FileInfo> {
    const headers: Record<string, string> = { "Content-Type": "application/octet-stream" };
    if (o.mode !== undefined) headers["X-Primer-File-Mode"] = typeof o.mode === "number" ? "0" + o.mode.toString(8) : o.mode;
    return this.t.json<FileInfo>({ method: "PUT", path: filePath(this.id, path), query: { user: o.user }, body: toBody(data), headers, signal: o.signal, timeoutMs: o.timeoutMs ?? 0 });
  }

  /** read opens path for reading; the body streams. */
  async read(path: string, o: CallOptions = {}): Promise<Download> {
    const resp = await this.t.send({ method: "GET", path: filePath(this.id, path), stream: true, signal: o.signal, timeoutMs: o.timeoutMs });
    if ((resp.headers.get("Content-Type") ?? "").startsWith("application/json")) {
      await resp.body?.cancel();
      throw new InvalidError("invalid", `workspace ${this.id}: read ${path}: is a directory`, 400, { field: "path" });
    }
    const len = resp.headers.get("Content-Length");
    const mode = resp.headers.get("X-Primer-File-Mode");
    const body = resp.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() });
    return {
      size: len !== null ? Number(len) : undefined,
      mode: mode ? parseInt(mode, 8) : undefined,
      body,
      bytes: async () => new Uint8Array(await new Response(body).arrayBuffer()),
      text: () => new Response(body).text(),
    };
  }

  /** readBytes reads the whole file. */
  async readBytes(path: string, o: CallOptions = {}): Promise<Uint8Array> {
    return (await this.read(path, o)).bytes();
  }

  /** readText reads the whole file as UTF-8. */
  async readText(path: string, o: CallOptions = {}): Promise<string> {
    return (await this.read(path, o)).text();
  }

  /** list lists the directory at path ("" or "." for the root). */
  async list(path = "", o: CallOptions = {}): Promise<FileInfo[]> {
    const d = await this.t.json<DirListing | undefined>({ method: "GET", path: filePath(this.id, path), headers: { Accept: "application/json" }, signal: o.signal, timeoutMs: o.timeoutMs });
    if (!d || !Array.isArray(d.items)) throw new InvalidError("invalid", `workspace ${this.id}: list ${path}: not a directory`, 400, { field: "path" });
    return d.items;
  }

  /** stat describes path (a symlink itself). */
  stat(path: string, o: CallOptions = {}): Promise<FileInfo> {
    return this.t.json<FileInfo>({ method: "GET", path: filePath(this.id, path), query: { stat: true }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** exists says whether path exists. */
  async exists(path: string, o: CallOptions = {}): Promise<boolean> {
    try {
      await this.stat(path, o);
      return true;
    } catch (e) {
      if ((e as { kind?: string }).kind === "not_found") return false;
      throw e;
    }
  }

  /** mkdir makes the directory path and its parents. */
  mkdir(path: string, o: CallOptions & { user?: string } = {}): Promise<FileInfo> {
    return this.t.json<FileInfo>({ method: "PUT", path: filePath(this.id, path), query: { mkdir: true, user: o.user }, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** remove deletes path; a non-empty directory needs recursive. */
  async remove(path: string, o: CallOptions & { recursive?: boolean } = {}): Promise<void> {
    await this.t.send({ method: "DELETE", path: filePath(this.id, path), query: { recursive: o.recursive ? true : undefined }, signal: o.signal, timeoutMs: o.timeoutMs });
  }
}
