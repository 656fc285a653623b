"""Primer's Python SDK: sandboxed workspaces for AI agents and eval suites.

    import primer

    with primer.Client() as client:                      # PRIMER_URL, PRIMER_TOKEN
        with client.workspaces.create("default") as ws:  # deleted on exit
            print(ws.exec("echo hello").stdout)

See the README for the whole surface.
"""

from ._version import __version__
from .client import AsyncClient, Client
from .config import DEFAULT_URL
from .errors import (Canceled, Conflict, FailedPrecondition, Forbidden, Internal, Invalid, MethodNotAllowed, NotFound,
                     PrimerError, QuotaExceeded, Timeout, TooLarge, Unauthorized, Unavailable, WorkspaceFailed)
from .eval import Case, Defaults, Expect, Run, Schedule, Suite, suite_document
from .pools import Pool
from .sessions import Session
from .snapshots import Forked, Snapshot
from .streams import EventStream, ExecStream, TranscriptStream
from .types import (Agent, AgentModel, APIKey, AuditEntry, CaseResult, Comparison, CreatedAPIKey, Diff, Event,
                    EventPage, ExecChunk, ExecResult, FileInfo, History, HistoryEntry, ListeningPort, LLMProvider, Preview, Progress, Provider,
                    Quota, Restore, SessionRun, Template, Tenant, ToolExecResult, ToolFile, ToolWriteResult, Transcript,
                    TranscriptEntry)
from .workspace import Attachment, AttachEvent, CommandFailed, Files, Process, Processes, Workspace

__all__ = [
    "__version__", "Client", "AsyncClient", "DEFAULT_URL",
    "PrimerError", "Invalid", "Unauthorized", "Forbidden", "NotFound", "MethodNotAllowed", "Conflict",
    "FailedPrecondition", "TooLarge", "QuotaExceeded", "Internal", "Unavailable", "Timeout", "Canceled",
    "WorkspaceFailed", "CommandFailed",
    "Workspace", "Files", "Process", "Processes", "Attachment", "AttachEvent", "Pool", "Session", "Snapshot", "Forked", "Suite", "Run",
    "Case", "Expect", "Defaults", "Schedule", "suite_document",
    "ExecStream", "EventStream", "TranscriptStream",
    "Agent", "AgentModel", "APIKey", "AuditEntry", "CaseResult", "Comparison", "CreatedAPIKey", "Diff", "Event",
    "EventPage", "ExecChunk", "ExecResult", "FileInfo", "History", "HistoryEntry", "ListeningPort", "LLMProvider", "Preview", "Progress",
    "Provider", "Quota", "Restore", "SessionRun", "Template", "Tenant", "ToolExecResult", "ToolFile",
    "ToolWriteResult", "Transcript", "TranscriptEntry",
]
