// The API's resources and request bodies: the schemas of the OpenAPI
// document (docs/openapi.json, generated from the Go package wire) as
// openapi-typescript writes them into schema.ts (make sdk-ts-types), under
// the names the SDK uses. Nothing here is defined by hand but the few
// helpers the document has no schema for (list filters, literal unions).

import type { components } from "./schema.js";

type S = components["schemas"];

/** Items is the API's list envelope. */
export interface Items<T> { items: T[] }

export type Provider = S["Provider"];
export type ProviderSpec = S["ProviderSpec"];
export type Template = S["Template"];
export type TemplateSpec = S["TemplateSpec"];
export type PoolStatus = S["PoolStatus"];
/** Pool is a pool with its counts. */
export type Pool = S["PoolView"];
export type PoolSpec = S["PoolSpec"];
export type LeaseRequest = S["LeaseRequest"];

/** Workspace is a workspace; source ("warm" or "cold") is set on a create. */
export type Workspace = S["Workspace"] & { source?: string };
/** CreateWorkspaceRequest makes a workspace; template_id may be left out with a snapshot_id (the snapshot's template). */
export type CreateWorkspaceRequest = Omit<S["CreateWorkspaceRequest"], "template_id"> & { template_id?: string };
export type ExtendRequest = S["ExtendRequest"];
export type Snapshot = S["Snapshot"];
export type CreateSnapshotRequest = S["CreateSnapshotRequest"];
export type ForkRequest = S["ForkRequest"];
export type PauseRequest = S["PauseRequest"];
export type ListeningPort = S["ListeningPort"];
export type Preview = S["Preview"];
export type PreviewLink = S["PreviewLink"];
/** SnapshotListOptions filter a snapshot list. */
export interface SnapshotListOptions { workspace_id?: string; phase?: string }
/** Phase is a workspace's phase. */
export type Phase = "pending" | "running" | "paused" | "failed" | "escalated" | "terminating";
/** WorkspaceListOptions filter a workspace list. */
export interface WorkspaceListOptions { phase?: string; template_id?: string; provider_id?: string; backend?: string; pool_id?: string; pool_state?: string; limit?: number }

export type ExecSpec = S["ExecSpec"];
/** ExecResult is a command's whole output and exit. */
export type ExecResult = S["ExecResponse"];
export type ExecExit = S["ExecExit"];
/** ExecChunk is one piece of a streamed command's output. */
export type ExecChunk = S["ExecChunk"];

export type FileInfo = S["FileInfo"];
export type DirListing = S["DirListing"];

export type TerminalSize = S["TerminalSize"];
export type ProcessSpec = S["ProcessSpec"];
export type Process = S["Process"];

export type Event = S["Event"];
export type TenantEventPage = S["TenantEventPage"];

export type Session = S["Session"];
export type CreateSessionRequest = S["CreateSessionRequest"];
export type ToolExecArgs = S["ExecArgs"];
export type ToolExecResult = S["ToolExecResult"];
export type ToolWriteArgs = S["WriteArgs"];
export type ToolWriteResult = S["ToolWriteResult"];
export type ToolReadResult = S["ToolReadResult"];
export type HistoryEntry = S["HistoryEntry"];
export type History = S["History"];
export type StateChange = S["StateChange"];
export type Diff = S["Diff"];
export type Restore = S["Restore"];
export type SessionRun = S["SessionRun"];
export type TranscriptEntry = S["TranscriptEntry"];
export type Transcript = S["Transcript"];

/** LLMProvider is a model provider as answers show it (its key redacted). */
export type LLMProvider = S["LLMProviderView"];
export type LLMProviderSpec = S["LLMProviderSpec"];
export type AgentModel = S["AgentModel"];
export type Agent = S["Agent"];
export type AgentSpec = S["AgentSpec"];

/** SuiteCase is one case of a suite. */
export type SuiteCase = S["Case"];
export type CaseExpect = S["Expect"];
export type CaseDefaults = S["CaseDefaults"];
export type Schedule = S["Schedule"];
export type SuiteSpec = S["SuiteSpec"];
export type ScheduleStatus = S["ScheduleStatus"];
/** Suite is a suite with its schedule's status. */
export type Suite = S["SuiteView"];
export type RunRequest = S["RunRequest"];
export type Progress = S["Progress"];
/** RunStatus is a run's status. */
export type RunStatus = "pending" | "running" | "succeeded" | "canceled" | "failed";
/** Run is a run; progress is left out of lists. */
export type Run = Omit<S["RunView"], "progress"> & { progress?: S["Progress"] };
export type Artifact = S["Artifact"];
export type Attempt = S["Attempt"];
export type CaseResult = S["CaseResult"];
export type Comparison = S["Comparison"];

export type Quota = S["Quota"];
/** Tenant is a tenant; usage is set on a get. */
export type Tenant = S["Tenant"] & { usage?: S["Usage"] };
export type TenantSpec = S["TenantSpec"];
/** APIKey is a key (never its secret); depth is set in a tree list, revoked_below on a revoke. */
export type APIKey = S["APIKey"] & { depth?: number; revoked_below?: number };
export type CreateAPIKeyRequest = S["CreateAPIKeyRequest"];
export type CreatedAPIKey = S["CreatedAPIKey"];
export type AuditEntry = S["AuditEntry"];
