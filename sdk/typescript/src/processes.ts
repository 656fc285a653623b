// Background processes: commands that outlive the request, owned by the
// workspace's runtime, with input, signals and (where the platform has a
// WebSocket that can send headers) attach to their output.

import { makeError, errorFromEnvelope } from "./errors.js";
import { type CallOptions, type Transport, seg, sleep } from "./http.js";
import { type Command, argv } from "./exec.js";
import type { ExecExit, Process, ProcessSpec } from "./types.js";

/** StartOptions are a process's options besides its command. */
export type StartOptions = CallOptions & Omit<ProcessSpec, "command">;

/** AttachMessage is one message of an attach stream. */
export interface AttachOutput { type: "output"; stream: string; data: Uint8Array }

/** Processes manages one workspace's background processes. */
export class Processes {
  constructor(private readonly t: Transport, private readonly id: string) {}

  private path(pid?: number, op?: string): string {
    let p = `/v1/workspaces/${seg(this.id)}/processes`;
    if (pid !== undefined) p += "/" + pid;
    if (op) p += "/" + op;
    return p;
  }

  /** start starts cmd in the background. */
  start(cmd: Command, o: StartOptions = {}): Promise<Process> {
    const { signal, timeoutMs, ...spec } = o;
    return this.t.json<Process>({ method: "POST", path: this.path(), json: { ...spec, command: argv(cmd) }, idempotent: false, signal, timeoutMs });
  }

  /** list lists running processes and the last that ended. */
  async list(o: CallOptions = {}): Promise<Process[]> {
    return (await this.t.json<{ items: Process[] }>({ method: "GET", path: this.path(), signal: o.signal, timeoutMs: o.timeoutMs })).items;
  }

  /** get returns one process. */
  get(pid: number, o: CallOptions = {}): Promise<Process> {
    return this.t.json<Process>({ method: "GET", path: this.path(pid), signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** input writes data to the process's stdin (or terminal). */
  async input(pid: number, data: string, o: CallOptions = {}): Promise<void> {
    await this.t.send({ method: "POST", path: this.path(pid, "input"), json: { data }, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** signal sends a signal ("TERM", "INT", "KILL", ...). */
  async signal(pid: number, sig: string, o: CallOptions = {}): Promise<void> {
    await this.t.send({ method: "POST", path: this.path(pid, "signal"), json: { signal: sig }, idempotent: false, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** resize resizes the process's terminal. */
  async resize(pid: number, cols: number, rows: number, o: CallOptions = {}): Promise<void> {
    await this.t.send({ method: "POST", path: this.path(pid, "resize"), json: { cols, rows }, idempotent: true, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** closeStdin closes the process's stdin (EOF). */
  async closeStdin(pid: number, o: CallOptions = {}): Promise<void> {
    await this.t.send({ method: "POST", path: this.path(pid, "close-stdin"), json: {}, idempotent: true, signal: o.signal, timeoutMs: o.timeoutMs });
  }

  /** wait polls the process until it ended and returns its exit. */
  async wait(pid: number, o: CallOptions & { pollMs?: number } = {}): Promise<ExecExit> {
    for (;;) {
      const p = await this.get(pid, o);
      if (!p.running && p.exit) return p.exit;
      await sleep(o.pollMs ?? 100, o.signal);
    }
  }

  /**
   * attach yields the process's output from now on (with replay, first
   * the last 16 KiB the runtime kept) until it exits. It needs a WebSocket
   * that sends headers (Node 22+, Node 20 with --experimental-websocket,
   * Deno, Bun); browsers cannot send the key on a WebSocket.
   */
  async *attach(pid: number, o: CallOptions & { replay?: boolean } = {}): AsyncGenerator<AttachOutput, ExecExit> {
    const WS = (globalThis as { WebSocket?: new (url: string, init?: unknown) => WebSocketLike }).WebSocket;
    if (!WS) throw makeError("unavailable", "attach: this platform has no WebSocket (Node 20 needs --experimental-websocket)", 0);
    const url = this.t.url(this.path(pid, "attach"), { replay: o.replay ? true : undefined }).replace(/^http/, "ws");
    const ws = new WS(url, { headers: this.t.headers() });
    const queue: unknown[] = [];
    let wake: (() => void) | undefined;
    let closed = false;
    let failure: unknown;
    ws.onmessage = (ev: { data: unknown }) => { queue.push(ev.data); wake?.(); };
    ws.onclose = () => { closed = true; wake?.(); };
    ws.onerror = (ev: unknown) => { failure ??= ev; closed = true; wake?.(); };
    const onAbort = () => ws.close();
    o.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for (;;) {
        while (queue.length === 0 && !closed) await new Promise<void>((r) => (wake = r));
        const raw = queue.shift();
        if (raw === undefined) {
          if (o.signal?.aborted) throw makeError("canceled", "attach: canceled", 0);
          throw makeError("unavailable", `attach: the connection closed before the process's exit${failure ? "" : ""}`, 0);
        }
        const m = JSON.parse(typeof raw === "string" ? raw : new TextDecoder().decode(raw as ArrayBuffer)) as { type: string; stream?: string; data?: string; exit?: ExecExit; error?: unknown };
        if (m.type === "output") yield { type: "output", stream: m.stream ?? "stdout", data: fromBase64(m.data ?? "") };
        else if (m.type === "exit" && m.exit) return m.exit;
        else if (m.type === "error") throw errorFromEnvelope({ error: m.error }, 200) ?? makeError("internal", "attach: error", 200);
      }
    } finally {
      o.signal?.removeEventListener("abort", onAbort);
      ws.close();
    }
  }
}

interface WebSocketLike {
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: unknown) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  close(): void;
}

function fromBase64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
