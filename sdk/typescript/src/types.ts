// The API's resources and request bodies, as docs/API.md and the Go
// package wire define them (JSON field names as sent on the wire).

export interface Items<T> { items: T[] }

export interface Provider { id: string; tenant_id: string; shared: boolean; provider: string; config: Record<string, unknown> | null; created_at: string; updated_at: string }
export interface ProviderSpec { id?: string; provider: string; config?: Record<string, unknown>; shared?: boolean }

export interface Template { id: string; tenant_id: string; provider_id: string; description?: string; backend: Record<string, unknown>; generation: number; created_at: string; updated_at: string }
export interface TemplateSpec { id?: string; provider_id: string; description?: string; backend?: Record<string, unknown> }

export interface PoolStatus { idle: number; starting: number; leased: number; returning: number }
export interface Pool { id: string; tenant_id: string; template_id: string; size: number; lease_ttl?: string; created_at: string; updated_at: string; status: PoolStatus }
export interface PoolSpec { id?: string; template_id: string; size?: number; lease_ttl?: string }
export interface LeaseRequest { labels?: Record<string, string>; lease_ttl?: string }

export type Phase = "pending" | "running" | "failed" | "escalated" | "terminating";

export interface Workspace {
  id: string; tenant_id: string; template_id: string; provider_id: string; backend: string; phase: Phase | string;
  reason?: string; labels?: Record<string, string>; template_generation: number; pool_id?: string; pool_state?: string;
  cpu_cores?: number; memory_bytes?: number;
  expires_at?: string; max_expires_at?: string; idle_deadline?: string; lease_expires_at?: string;
  workspace_path?: string; workflow_id: string; created_at: string; updated_at: string;
  /** source is "warm" or "cold" on a create or a lease. */
  source?: string;
}
export interface CreateWorkspaceRequest { template_id: string; labels?: Record<string, string>; ttl?: string; env?: Record<string, string> }
export interface WorkspaceListOptions { phase?: string; template_id?: string; provider_id?: string; backend?: string; pool_id?: string; pool_state?: string; limit?: number }
export interface ExtendRequest { by?: string; until?: string }

export interface ExecSpec { command: string[]; env?: Record<string, string>; cwd?: string; user?: string; stdin?: string; timeout?: string }
export interface ExecResult { exit_code: number; stdout: string; stderr: string; duration_ms: number; timed_out: boolean; canceled?: boolean; signal?: string; truncated?: boolean }
export interface ExecExit { exit_code: number; duration_ms: number; timed_out: boolean; canceled?: boolean; signal?: string }
/** ExecChunk is one piece of a streamed command's output. */
export interface ExecChunk { stream: "stdout" | "stderr" | string; data: string }

export interface FileInfo { name: string; path: string; size: number; mode: number; mod_time: string; is_dir: boolean; is_symlink: boolean; owner?: string; group?: string; link_target?: string }
export interface DirListing { path: string; items: FileInfo[] }

export interface TerminalSize { cols: number; rows: number }
export interface ProcessSpec { command: string[]; env?: Record<string, string>; cwd?: string; user?: string; tag?: string; stdin?: string; stdin_open?: boolean; pty?: TerminalSize; timeout?: string }
export interface Process { pid: number; tag?: string; command: string[]; cwd?: string; user?: string; pty?: TerminalSize; stdin_open?: boolean; started_at: string; running: boolean; exit?: ExecExit }

export interface Event { id: number; tenant_id: string; workspace_id: string; type: string; data: Record<string, unknown>; created_at: string }
export interface TenantEventPage { items: Event[]; latest_id: number }

export interface Session { id: string; tenant_id: string; workspace_id: string; agent?: string; metadata?: Record<string, string>; status: "open" | "ended" | string; resumed_from?: string; end_reason?: string; state_head?: string; history_bytes: number; created_at: string; ended_at?: string }
export interface CreateSessionRequest { workspace_id: string; agent?: string; metadata?: Record<string, string>; instructions?: string }
export interface ToolExecArgs { args?: string[]; command?: string; cwd?: string; env?: Record<string, string>; timeout?: string; stdin?: string }
export interface ToolExecResult { exit_code: number; stdout: string; stderr: string; timed_out: boolean; duration_ms: number; signal?: string; truncated?: boolean; commit: string }
export interface ToolWriteArgs { path: string; content: string; mode?: string; encoding?: "base64" }
export interface ToolWriteResult { path: string; size: number; commit: string }
export interface ToolReadResult { path: string; content: string; encoding: "utf-8" | "base64" | string; size: number; commit: string }
export interface HistoryEntry { commit: string; session: string; tool: string; time: string; author: string; summary: string; arguments?: unknown; result?: unknown }
export interface History { items: HistoryEntry[]; resumed_from?: string }
export interface StateChange { path: string; change: "added" | "modified" | "deleted" | string }
export interface Diff { from: string; to: string; files: StateChange[]; patch: string; truncated?: boolean }
export interface Restore { commit: string; restored_from: string; changed: StateChange[] }

export interface SessionRun { session_id: string; tenant_id: string; agent: string; status: "running" | "ended" | string; end_reason?: string; error?: string; turns: number; created_at: string; ended_at?: string }
export interface TranscriptEntry { session_id: string; seq: number; turn: number; role: "user" | "assistant" | "tool" | string; content?: string; tool_calls?: unknown; tool_call_id?: string; tool_name?: string; tool_args?: unknown; tool_result?: unknown; state?: string; is_error?: boolean; commit?: string; input_tokens?: number; output_tokens?: number; created_at: string; updated_at: string }
export interface Transcript { session_id: string; run?: SessionRun; items: TranscriptEntry[]; usage: { input_tokens: number; output_tokens: number } }

export interface LLMProvider { id: string; tenant_id: string; kind: string; base_url: string; api_key?: string; api_key_env?: string; created_at: string; updated_at: string }
export interface LLMProviderSpec { id?: string; kind: "openai" | "anthropic" | string; base_url: string; api_key?: string; api_key_env?: string }
export interface AgentModel { provider_id: string; model_name: string; temperature?: number; top_p?: number; max_tokens?: number }
export interface Agent { id: string; tenant_id: string; description?: string; model: AgentModel; system_prompt?: string[]; tools?: string[]; max_turns: number; timeout: string; created_at: string; updated_at: string }
export interface AgentSpec { id?: string; description?: string; model?: AgentModel; system_prompt?: string[]; tools?: string[]; max_turns?: number; timeout?: string }

export interface CaseExpect { exit_code?: number; stdout_contains?: string[]; stdout_matches?: string; files?: Record<string, string> }
export interface SuiteCase { id: string; command: string[] | string; files?: Record<string, string | { base64: string }>; setup?: string[]; env?: Record<string, string>; timeout?: string; expect?: CaseExpect; score_file?: string; collect?: string[]; labels?: Record<string, string> }
export interface Schedule { cron?: string; interval?: string; time_zone?: string; overlap?: "skip" | "buffer_one" | "allow_all"; paused?: boolean }
export interface SuiteSpec {
  id?: string; description?: string; template_id?: string; pool_id?: string; concurrency?: number; retries?: number;
  defaults?: { timeout?: string; env?: Record<string, string>; files?: Record<string, string | { base64: string }>; setup?: string[] };
  webhook_url?: string; schedule?: Schedule; cases: SuiteCase[];
}
export interface ScheduleStatus { id: string; paused: boolean; note?: string; num_actions: number; next_run_times: string[]; recent_runs: { scheduled_at: string; started_at: string; workflow_id: string }[]; running_workflows: string[] }
export interface Suite { id: string; tenant_id: string; description?: string; template_id?: string; pool_id?: string; spec: Record<string, unknown>; case_count: number; created_at: string; updated_at: string; schedule_status?: ScheduleStatus; schedule_error?: string }
export interface RunRequest { cases?: string[]; labels?: Record<string, string>; triggered_by?: string }
export interface Progress { total: number; pending: number; running: number; pass: number; fail: number; error: number; canceled: number; pass_rate: number; mean_score?: number; duration_p50_ms: number; duration_p95_ms: number }
export type RunStatus = "pending" | "running" | "succeeded" | "canceled" | "failed";
export interface Run { id: string; tenant_id: string; suite_id: string; status: RunStatus | string; reason?: string; trigger: string; triggered_by?: string; selection?: { cases?: string[]; labels?: Record<string, string> }; total: number; workflow_id: string; created_at: string; started_at?: string; ended_at?: string; progress?: Progress }
export interface Artifact { path: string; size: number; data?: string; truncated?: boolean; error?: string }
export interface Attempt { attempt: number; workspace_id: string; verdict: string; reason?: string; started_at: string; ended_at?: string }
export interface CaseResult { run_id: string; ordinal: number; case_id: string; labels?: Record<string, string>; status: string; verdict?: "pass" | "fail" | "error" | string; reason?: string; exit_code?: number; duration_ms: number; command_ms: number; stdout?: string; stderr?: string; score?: number; metrics?: Record<string, number>; artifacts?: Artifact[]; attempts?: Attempt[]; started_at?: string; ended_at?: string }
export interface Comparison { base: string; head: string; regressions: { case: string; from: string; to: string; reason?: string }[]; fixes: { case: string; from: string; to: string; reason?: string }[]; new: string[]; missing: string[]; score_changes: { case: string; from: number; to: number; delta: number }[]; unchanged: number }

export interface Quota { max_workspaces?: number; max_cpu_cores?: number; max_memory_bytes?: number; max_pools?: number }
export interface Tenant { id: string; description?: string; quota: Quota; created_at: string; updated_at: string; usage?: { workspaces: number; cpu_cores: number; memory_bytes: number; pools: number } }
export interface TenantSpec { id?: string; description?: string; quota?: Quota }
export interface APIKey { id: string; tenant_id: string; role: "admin" | "member" | "viewer" | string; name?: string; created_by?: string; parent_id?: string; created_at: string; expires_at?: string; revoked_at?: string; last_used_at?: string; depth?: number; revoked_below?: number }
export interface CreateAPIKeyRequest { tenant_id?: string; role: "admin" | "member" | "viewer"; name?: string; expires_at?: string; ttl?: string; root?: boolean }
export interface CreatedAPIKey extends APIKey { key: string; e2b_key?: string }
export interface AuditEntry { id: number; key_id?: string; tenant_id?: string; action: string; resource?: string; status: number; result: string; address: string; created_at: string }
