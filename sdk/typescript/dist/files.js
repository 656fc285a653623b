// Files of a workspace: bodies stream both ways (a file is never held
// whole unless the caller asks for bytes or text).
import { InvalidError } from "./errors.js";
import { seg } from "./http.js";
/** filePath is the API path of path in workspace id; an absolute path keeps its leading slash (files//etc/hostname). */
export function filePath(id, path) {
    const abs = path.startsWith("/");
    const parts = path.split("/").filter((s) => s !== "" && s !== ".");
    // fetch's URL parser resolves ".." (escaped or not) before sending, so
    // "../x" would name another route, or another workspace: refused here,
    // as the server refuses a path that leaves the root.
    if (parts.includes(".."))
        throw new InvalidError("invalid", `path ${JSON.stringify(path)}: ".." is not allowed in a workspace path`, 400, { field: "path" });
    return `/v1/workspaces/${seg(id)}/files/` + (abs && parts.length > 0 ? "/" : "") + parts.map(encodeURIComponent).join("/");
}
function toBody(data) {
    if (typeof data === "string" || data instanceof Uint8Array || data instanceof ArrayBuffer || (typeof Blob !== "undefined" && data instanceof Blob) || (typeof ReadableStream !== "undefined" && data instanceof ReadableStream)) {
        return data;
    }
    const it = data;
    const iter = Symbol.asyncIterator in it ? it[Symbol.asyncIterator]() : it[Symbol.iterator]();
    return new ReadableStream({
        async pull(ctl) {
            const { value, done } = await iter.next();
            if (done)
                ctl.close();
            else
                ctl.enqueue(value);
        },
        async cancel() {
            await iter.return?.();
        },
    });
}
/** Files reads and writes one workspace's files. */
export class Files {
    t;
    id;
    constructor(t, id) {
        this.t = t;
        this.id = id;
    }
    /** write puts data at path (parents made), streaming it; answers the file's info. */
    write(path, data, o = {}) {
        const headers = { "Content-Type": "application/octet-stream" };
        if (o.mode !== undefined)
            headers["X-Primer-File-Mode"] = typeof o.mode === "number" ? "0" + o.mode.toString(8) : o.mode;
        return this.t.json({ method: "PUT", path: filePath(this.id, path), query: { user: o.user }, body: toBody(data), headers, signal: o.signal, timeoutMs: o.timeoutMs ?? 0 });
    }
    /** read opens path for reading; the body streams. */
    async read(path, o = {}) {
        const resp = await this.t.send({ method: "GET", path: filePath(this.id, path), stream: true, signal: o.signal, timeoutMs: o.timeoutMs });
        if ((resp.headers.get("Content-Type") ?? "").startsWith("application/json")) {
            await resp.body?.cancel();
            throw new InvalidError("invalid", `workspace ${this.id}: read ${path}: is a directory`, 400, { field: "path" });
        }
        const len = resp.headers.get("Content-Length");
        const mode = resp.headers.get("X-Primer-File-Mode");
        const body = resp.body ?? new ReadableStream({ start: (c) => c.close() });
        return {
            size: len !== null ? Number(len) : undefined,
            mode: mode ? parseInt(mode, 8) : undefined,
            body,
            bytes: async () => new Uint8Array(await new Response(body).arrayBuffer()),
            text: () => new Response(body).text(),
        };
    }
    /** readBytes reads the whole file. */
    async readBytes(path, o = {}) {
        return (await this.read(path, o)).bytes();
    }
    /** readText reads the whole file as UTF-8. */
    async readText(path, o = {}) {
        return (await this.read(path, o)).text();
    }
    /** list lists the directory at path ("" or "." for the root). */
    async list(path = "", o = {}) {
        const d = await this.t.json({ method: "GET", path: filePath(this.id, path), headers: { Accept: "application/json" }, signal: o.signal, timeoutMs: o.timeoutMs });
        if (!d || !Array.isArray(d.items))
            throw new InvalidError("invalid", `workspace ${this.id}: list ${path}: not a directory`, 400, { field: "path" });
        return d.items;
    }
    /** stat describes path (a symlink itself). */
    stat(path, o = {}) {
        return this.t.json({ method: "GET", path: filePath(this.id, path), query: { stat: true }, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** exists says whether path exists. */
    async exists(path, o = {}) {
        try {
            await this.stat(path, o);
            return true;
        }
        catch (e) {
            if (e.kind === "not_found")
                return false;
            throw e;
        }
    }
    /** mkdir makes the directory path and its parents. */
    mkdir(path, o = {}) {
        return this.t.json({ method: "PUT", path: filePath(this.id, path), query: { mkdir: true, user: o.user }, signal: o.signal, timeoutMs: o.timeoutMs });
    }
    /** remove deletes path; a non-empty directory needs recursive. */
    async remove(path, o = {}) {
        await this.t.send({ method: "DELETE", path: filePath(this.id, path), query: { recursive: o.recursive ? true : undefined }, signal: o.signal, timeoutMs: o.timeoutMs });
    }
}
