// Where the client finds its server and key, as primectl does: PRIMER_URL
// and PRIMER_TOKEN, else the config file ($PRIMER_CONFIG, else
// $XDG_CONFIG_HOME/primer/config.yaml, else ~/.config/primer/config.yaml:
// "url:" and "token:"), else, for a server on this machine only, the admin
// key a local `primer serve` wrote (PRIMER_DATA_DIR, a .data directory here
// or above, the default data directory). Node's file system is loaded only
// when it exists (Node, Deno, Bun); in a browser only what the caller
// passes counts.

/** DEFAULT_URL is the server without any setting, as primectl's. */
export const DEFAULT_URL = "http://127.0.0.1:8080";

/** Settings are what resolve found. */
export interface Settings {
  url: string;
  token?: string;
  /** tokenSource says where the key came from: option, env, config, admin.key, or none. */
  tokenSource: "option" | "env" | "config" | "admin.key" | "none";
}

interface NodeBits {
  readFile(p: string): string | undefined;
  env: Record<string, string | undefined>;
  home?: string;
  cwd?: string;
  join(...p: string[]): string;
  dirname(p: string): string;
}

async function nodeBits(): Promise<NodeBits | undefined> {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined>; cwd?: () => string; versions?: { node?: string } } }).process;
  if (!proc?.versions?.node) return undefined;
  try {
    // Variable specifiers keep bundlers for browsers from pulling Node in.
    const fsName = "node:fs", pathName = "node:path", osName = "node:os";
    const fs = (await import(fsName)) as { readFileSync(p: string, e: string): string };
    const path = (await import(pathName)) as { join(...p: string[]): string; dirname(p: string): string };
    const os = (await import(osName)) as { homedir(): string };
    let home: string | undefined;
    try { home = os.homedir(); } catch { home = undefined; }
    return {
      readFile: (p) => { try { return fs.readFileSync(p, "utf8"); } catch { return undefined; } },
      env: proc.env ?? {}, home, cwd: proc.cwd?.(), join: path.join, dirname: path.dirname,
    };
  } catch {
    return undefined;
  }
}

/** parseConfig reads the config file's url and token (a flat YAML map). */
export function parseConfig(text: string): { url?: string; token?: string } {
  const out: { url?: string; token?: string } = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s+#.*$/, "").trim();
    const m = /^(url|token)\s*:\s*(.*)$/.exec(line);
    if (!m) continue;
    let v = (m[2] ?? "").trim();
    if ((v.startsWith('"') && v.endsWith('"')) || (v.startsWith("'") && v.endsWith("'"))) v = v.slice(1, -1);
    if (v) out[m[1] as "url" | "token"] = v;
  }
  return out;
}

/** isLoopback says whether url names a server on this machine. */
export function isLoopback(url: string): boolean {
  try {
    const host = new URL(url.includes("://") ? url : "http://" + url).hostname.replace(/^\[|\]$/g, "");
    return host === "localhost" || /^127\./.test(host) || host === "::1";
  } catch {
    return false;
  }
}

/** resolve finds the server and key the way primectl does; given values win. */
export async function resolve(given: { url?: string; token?: string } = {}): Promise<Settings> {
  const n = await nodeBits();
  const env = n?.env ?? {};
  let cfg: { url?: string; token?: string } = {};
  if (n) {
    const p = env.PRIMER_CONFIG || (env.XDG_CONFIG_HOME ? n.join(env.XDG_CONFIG_HOME, "primer", "config.yaml") : n.home ? n.join(n.home, ".config", "primer", "config.yaml") : undefined);
    const text = p ? n.readFile(p) : undefined;
    if (text) cfg = parseConfig(text);
  }
  const url = given.url?.trim() || env.PRIMER_URL?.trim() || cfg.url || DEFAULT_URL;
  if (given.token?.trim()) return { url, token: given.token.trim(), tokenSource: "option" };
  if (env.PRIMER_TOKEN?.trim()) return { url, token: env.PRIMER_TOKEN.trim(), tokenSource: "env" };
  if (cfg.token) return { url, token: cfg.token, tokenSource: "config" };
  if (n && isLoopback(url)) {
    // A key found on disk is never sent to another machine.
    const paths: string[] = [];
    if (env.PRIMER_DATA_DIR) paths.push(n.join(env.PRIMER_DATA_DIR, "admin.key"));
    if (n.cwd) {
      for (let dir = n.cwd; ; dir = n.dirname(dir)) {
        paths.push(n.join(dir, ".data", "admin.key"));
        if (n.dirname(dir) === dir) break;
      }
    }
    if (env.XDG_DATA_HOME) paths.push(n.join(env.XDG_DATA_HOME, "primer", "admin.key"));
    else if (n.home) paths.push(n.join(n.home, ".local", "share", "primer", "admin.key"));
    for (const p of paths) {
      const k = n.readFile(p)?.trim();
      if (k) return { url, token: k, tokenSource: "admin.key" };
    }
  }
  return { url, tokenSource: "none" };
}
