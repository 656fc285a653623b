"""The resources of Primer's API as typed dataclasses.

Field names and meanings are the API's (docs/API.md); times are timezone-
aware datetimes. Resources that can act (a workspace, a pool, a session, a
suite, a run, a process) are handles: they keep the client that fetched
them, so ``ws.exec(...)`` and ``pool.lease()`` need no id; those live in
``primer.resources``. The plain records are here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, List, Optional


@dataclass
class Provider:
    """How to reach a backend (a root path, a container engine, a cluster)."""

    id: str = ""
    provider: str = ""
    config: Optional[Dict[str, Any]] = None
    shared: bool = False
    tenant_id: str = ""
    created_at: Optional[datetime] = None
    updated_at: Optional[datetime] = None


@dataclass
class Template:
    """The recipe a workspace is made from; ``backend`` is its document."""

    id: str = ""
    provider_id: str = ""
    description: str = ""
    backend: Dict[str, Any] = field(default_factory=dict)
    generation: int = 0
    tenant_id: str = ""
    created_at: Optional[datetime] = None
    updated_at: Optional[datetime] = None


@dataclass
class PoolStatus:
    """A pool's members by state, counted when it was read."""

    idle: int = 0
    starting: int = 0
    leased: int = 0
    returning: int = 0


@dataclass
class ExecResult:
    """A finished command. A non-zero exit code is not an error."""

    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""
    duration_ms: int = 0
    timed_out: bool = False
    canceled: bool = False
    signal: str = ""
    truncated: bool = False

    @property
    def ok(self) -> bool:
        """True when the command exited 0 within its time."""
        return self.exit_code == 0 and not self.timed_out and not self.canceled


@dataclass
class ExecChunk:
    """One piece of a streamed command's output: ``stream`` is stdout or stderr."""

    stream: str
    data: str


@dataclass
class FileInfo:
    """A file or directory of a workspace; ``mode`` is the permission bits."""

    name: str = ""
    path: str = ""
    size: int = 0
    mode: int = 0
    mod_time: Optional[datetime] = None
    is_dir: bool = False
    is_symlink: bool = False
    owner: str = ""
    group: str = ""
    link_target: str = ""


@dataclass
class ListeningPort:
    """A TCP port a program listens on inside a workspace (``address``:
    127.0.0.1, ::1, 0.0.0.0 or ::)."""

    port: int = 0
    address: str = ""


@dataclass
class Preview:
    """A preview link to a port inside a workspace. ``url`` opens it in a
    browser with no key; it is set only in the answer that made the link."""

    id: str = ""
    tenant_id: str = ""
    workspace_id: str = ""
    port: int = 0
    created_by: str = ""
    created_at: Optional[datetime] = None
    expires_at: Optional[datetime] = None
    revoked_at: Optional[datetime] = None
    url: str = ""


@dataclass
class TerminalSize:
    """A terminal's size in characters."""

    cols: int = 0
    rows: int = 0


@dataclass
class ProcessExit:
    """How a process or streamed command ended."""

    exit_code: int = 0
    duration_ms: int = 0
    timed_out: bool = False
    canceled: bool = False
    signal: str = ""


@dataclass
class Event:
    """One stored workspace event (``workspace.provisioned``, ...)."""

    id: int = 0
    workspace_id: str = ""
    type: str = ""
    data: Dict[str, Any] = field(default_factory=dict)
    tenant_id: str = ""
    created_at: Optional[datetime] = None


@dataclass
class EventPage:
    """A page of a tenant's events; ``latest_id`` is the newest event's id."""

    items: List[Event] = field(default_factory=list)
    latest_id: int = 0


@dataclass
class StateChange:
    """A path a commit added, modified or deleted."""

    path: str = ""
    change: str = ""


@dataclass
class ToolExecResult:
    """The answer of a session's ``workspace__exec``: the run and its commit."""

    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    duration_ms: int = 0
    signal: str = ""
    truncated: bool = False
    commit: str = ""


@dataclass
class ToolWriteResult:
    """The answer of a session's ``workspace__write``."""

    path: str = ""
    size: int = 0
    commit: str = ""


@dataclass
class ToolFile:
    """A file a session read (``workspace__read``), its content as bytes."""

    path: str
    content: bytes
    size: int
    commit: str


@dataclass
class HistoryEntry:
    """One recorded call of a session: one commit of the workspace history."""

    commit: str = ""
    session: str = ""
    tool: str = ""
    time: Optional[datetime] = None
    author: str = ""
    summary: str = ""
    arguments: Any = None
    result: Any = None


@dataclass
class History:
    """A session's calls, newest first."""

    items: List[HistoryEntry] = field(default_factory=list)
    resumed_from: str = ""


@dataclass
class Diff:
    """What changed between two commits of a session's history."""

    from_: str = ""
    to: str = ""
    files: List[StateChange] = field(default_factory=list)
    patch: str = ""
    truncated: bool = False


@dataclass
class Restore:
    """A restore's new commit and what it changed."""

    commit: str = ""
    restored_from: str = ""
    changed: List[StateChange] = field(default_factory=list)


@dataclass
class LLMProvider:
    """A model endpoint agents call. ``api_key`` is ``(redacted)`` when set."""

    id: str = ""
    kind: str = ""
    base_url: str = ""
    api_key: str = ""
    api_key_env: str = ""
    tenant_id: str = ""
    created_at: Optional[datetime] = None
    updated_at: Optional[datetime] = None


@dataclass
class AgentModel:
    """The model an agent calls and how."""

    provider_id: str = ""
    model_name: str = ""
    temperature: Optional[float] = None
    top_p: Optional[float] = None
    max_tokens: int = 0


@dataclass
class Agent:
    """A model, its instructions and its tools, run by a session."""

    id: str = ""
    description: str = ""
    model: AgentModel = field(default_factory=AgentModel)
    system_prompt: List[str] = field(default_factory=list)
    tools: List[str] = field(default_factory=list)
    max_turns: int = 0
    timeout: str = ""
    tenant_id: str = ""
    created_at: Optional[datetime] = None
    updated_at: Optional[datetime] = None


@dataclass
class SessionRun:
    """A session's agent run: its state and how it ended."""

    session_id: str = ""
    agent: str = ""
    status: str = ""
    end_reason: str = ""
    error: str = ""
    turns: int = 0
    tenant_id: str = ""
    created_at: Optional[datetime] = None
    ended_at: Optional[datetime] = None


@dataclass
class TranscriptEntry:
    """One message of an agent run: the instructions (role ``user``), a
    model turn (``assistant``, with its tool calls) or a tool call (``tool``)."""

    session_id: str = ""
    seq: int = 0
    turn: int = 0
    role: str = ""
    content: str = ""
    tool_calls: Any = None
    tool_call_id: str = ""
    tool_name: str = ""
    tool_args: Any = None
    tool_result: Any = None
    state: str = ""
    is_error: bool = False
    commit: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    created_at: Optional[datetime] = None
    updated_at: Optional[datetime] = None


@dataclass
class Usage:
    """Tokens a transcript used."""

    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class Transcript:
    """A session's agent run and its transcript so far."""

    session_id: str = ""
    run: Optional[SessionRun] = None
    items: List[TranscriptEntry] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


@dataclass
class Progress:
    """A run's live summary."""

    total: int = 0
    pending: int = 0
    running: int = 0
    # pass is a keyword in Python; the API's "pass" is read into passed.
    passed: int = field(default=0, metadata={"json": "pass"})
    fail: int = 0
    error: int = 0
    canceled: int = 0
    pass_rate: float = 0.0
    mean_score: Optional[float] = None
    duration_p50_ms: int = 0
    duration_p95_ms: int = 0


@dataclass
class Attempt:
    """One attempt at a case, on one workspace."""

    attempt: int = 0
    workspace_id: str = ""
    verdict: str = ""
    reason: str = ""
    started_at: Optional[datetime] = None
    ended_at: Optional[datetime] = None


@dataclass
class Artifact:
    """A file a case collected; ``data`` is its bytes (base64 on the wire)."""

    path: str = ""
    size: int = 0
    data: str = ""
    truncated: bool = False
    error: str = ""


@dataclass
class CaseResult:
    """One case of a run: final once ``status`` is ``done`` (``verdict`` set)."""

    run_id: str = ""
    ordinal: int = 0
    case_id: str = ""
    labels: Dict[str, str] = field(default_factory=dict)
    status: str = ""
    verdict: str = ""
    reason: str = ""
    exit_code: Optional[int] = None
    duration_ms: int = 0
    command_ms: int = 0
    stdout: str = ""
    stderr: str = ""
    score: Optional[float] = None
    metrics: Dict[str, float] = field(default_factory=dict)
    artifacts: List[Artifact] = field(default_factory=list)
    attempts: List[Attempt] = field(default_factory=list)
    started_at: Optional[datetime] = None
    ended_at: Optional[datetime] = None

    @property
    def passed(self) -> bool:
        """True when the case's verdict is pass."""
        return self.verdict == "pass"


@dataclass
class CaseChange:
    """A case whose verdict changed between two runs."""

    case: str = ""
    from_: str = ""
    to: str = ""
    reason: str = ""


@dataclass
class ScoreChange:
    """A case whose score changed between two runs."""

    case: str = ""
    from_: Optional[float] = None
    to: Optional[float] = None
    delta: float = 0.0


@dataclass
class Comparison:
    """How a run (head) differs from another (base), by case id."""

    base: str = ""
    head: str = ""
    regressions: List[CaseChange] = field(default_factory=list)
    fixes: List[CaseChange] = field(default_factory=list)
    new: List[str] = field(default_factory=list)
    missing: List[str] = field(default_factory=list)
    score_changes: List[ScoreChange] = field(default_factory=list)
    unchanged: int = 0


@dataclass
class ScheduledRun:
    """A run a schedule started."""

    scheduled_at: Optional[datetime] = None
    started_at: Optional[datetime] = None
    workflow_id: str = ""


@dataclass
class ScheduleStatus:
    """A suite's schedule as Temporal reports it."""

    id: str = ""
    paused: bool = False
    note: str = ""
    num_actions: int = 0
    next_run_times: List[datetime] = field(default_factory=list)
    recent_runs: List[ScheduledRun] = field(default_factory=list)
    running_workflows: List[str] = field(default_factory=list)


@dataclass
class Quota:
    """What a tenant may hold at once; 0 is no limit."""

    max_workspaces: int = 0
    max_cpu_cores: float = 0.0
    max_memory_bytes: int = 0
    max_pools: int = 0
    max_snapshot_bytes: int = 0
    max_paused: int = 0
    #: The model gateway's calls per UTC day, through any template.
    max_model_tokens_per_day: int = 0
    max_model_requests_per_day: int = 0


@dataclass
class TenantUsage:
    """What a tenant holds now."""

    workspaces: int = 0
    cpu_cores: float = 0.0
    memory_bytes: int = 0
    pools: int = 0


@dataclass
class Tenant:
    """A team sharing one Primer; ``usage`` is set by get."""

    id: str = ""
    description: str = ""
    quota: Quota = field(default_factory=Quota)
    usage: Optional[TenantUsage] = None
    created_at: Optional[datetime] = None
    updated_at: Optional[datetime] = None


@dataclass
class APIKey:
    """One bearer key's record (never the key itself)."""

    id: str = ""
    tenant_id: str = ""
    role: str = ""
    name: str = ""
    created_by: str = ""
    parent_id: str = ""
    created_at: Optional[datetime] = None
    expires_at: Optional[datetime] = None
    revoked_at: Optional[datetime] = None
    last_used_at: Optional[datetime] = None
    depth: int = 0
    revoked_below: int = 0


@dataclass
class CreatedAPIKey(APIKey):
    """A new key's record and, this once, the key (and its E2B form)."""

    key: str = ""
    e2b_key: str = ""


@dataclass
class AuditEntry:
    """One mutating API request: who, what, how it ended, from where."""

    id: int = 0
    key_id: str = ""
    tenant_id: str = ""
    action: str = ""
    resource: str = ""
    status: int = 0
    result: str = ""
    address: str = ""
    created_at: Optional[datetime] = None
