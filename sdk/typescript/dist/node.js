// Node-only helpers, imported from "@primer/sdk/node": files moved between
// the local disk and a workspace as streams (never whole in memory). The
// client core (the package's main entry) imports no Node module; this one
// is for programs that run on Node (or Deno and Bun, which provide these
// modules).
import { createReadStream, createWriteStream } from "node:fs";
import { stat } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
/** uploadFile streams the local file at localPath to remotePath in the workspace (mode: the local file's unless given). */
export async function uploadFile(files, localPath, remotePath, o = {}) {
    const st = await stat(localPath);
    const body = Readable.toWeb(createReadStream(localPath));
    return files.write(remotePath, body, { ...o, mode: o.mode ?? st.mode & 0o777 });
}
/** downloadFile streams remotePath in the workspace to the local file at localPath and returns the bytes written. */
export async function downloadFile(files, remotePath, localPath, o = {}) {
    const dl = await files.read(remotePath, o);
    let n = 0;
    const counted = new TransformStream({ transform(chunk, ctl) { n += chunk.length; ctl.enqueue(chunk); } });
    await pipeline(Readable.fromWeb(dl.body.pipeThrough(counted)), createWriteStream(localPath, dl.mode !== undefined ? { mode: dl.mode } : {}));
    return n;
}
