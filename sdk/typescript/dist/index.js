// @primer/sdk: the TypeScript client of the Primer REST API (docs/API.md).
export { Primer } from "./client.js";
export { resolve, parseConfig, isLoopback, DEFAULT_URL } from "./config.js";
export * from "./errors.js";
export { Transport, sleep } from "./http.js";
export { ExecStream, argv } from "./exec.js";
export { Files, filePath } from "./files.js";
export { Processes, Attachment } from "./processes.js";
export { TenantEvents, followSSE } from "./events.js";
export { Workspace, Workspaces, waitGone } from "./workspaces.js";
export { Snapshots, waitSnapshot } from "./snapshots.js";
export { Collection, Providers, Templates, Pools, Lease, LLMProviders, Agents } from "./resources.js";
export { Session, Sessions } from "./sessions.js";
export { Suites, Runs, final } from "./suites.js";
export { Tenants, APIKeys, Audit } from "./admin.js";
export { lines, sse } from "./streams.js";
