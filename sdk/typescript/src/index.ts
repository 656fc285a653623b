// @primer/sdk: the TypeScript client of the Primer REST API (docs/API.md).

export { Primer, type PrimerOptions } from "./client.js";
export { resolve, parseConfig, isLoopback, DEFAULT_URL, type Settings } from "./config.js";
export * from "./errors.js";
export { Transport, sleep, type CallOptions, type FetchLike, type RetryOptions, type TransportOptions } from "./http.js";
export { ExecStream, argv, type Command, type ExecOptions } from "./exec.js";
export { Files, filePath, type Download, type Uploadable, type WriteOptions } from "./files.js";
export { Processes, Attachment, type AttachOutput, type StartOptions } from "./processes.js";
export { TenantEvents, followSSE, type FollowOptions } from "./events.js";
export { Workspace, Workspaces, waitGone, type CreateOptions, type Forked, type WaitOptions } from "./workspaces.js";
export { Snapshots, waitSnapshot, type SnapshotWaitOptions } from "./snapshots.js";
export { type ListOptions, Collection, Providers, Templates, Pools, Lease, LLMProviders, Agents } from "./resources.js";
export { Session, Sessions } from "./sessions.js";
export { Suites, Runs, final, type RunOptions } from "./suites.js";
export { Tenants, APIKeys, Audit } from "./admin.js";
export { lines, sse, type SSEMessage } from "./streams.js";
export type * from "./types.js";
