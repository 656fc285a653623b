"""Snapshots, fork, pause and resume against a real server (local template)."""

from __future__ import annotations

import pytest

import primer


def test_snapshot_create_from_and_delete(client: primer.Client, ws: primer.Workspace) -> None:
    ws.files.write("state.txt", b"prepared")
    snap = ws.snapshot(labels={"step": "1"})
    assert snap.id.startswith("snap-") and snap.phase == "ready" and snap.workspace_id == ws.id
    assert snap.mode == "filesystem" and snap.labels == {"step": "1"} and not snap.implicit and snap.bytes > 0
    assert snap.id in [s.id for s in client.snapshots.list(workspace_id=ws.id)]
    assert client.snapshots.get(snap.id).phase == "ready"
    # A write after the capture is not in it.
    ws.files.write("state.txt", b"changed")
    with client.workspaces.create(snapshot_id=snap.id) as child:
        assert child.snapshot_id == snap.id and child.template_id == ws.template_id
        assert child.files.read("state.txt") == b"prepared"
    gone = snap.delete()
    assert gone.id == snap.id and gone.phase == "deleting"
    with pytest.raises(primer.NotFound):
        client.snapshots.get("snap-0000000000000000")


def test_fork_children_are_independent(client: primer.Client, ws: primer.Workspace) -> None:
    ws.files.write("seed.txt", b"seed")
    forked = ws.fork(2, labels={"fork": "yes"})
    try:
        assert forked.snapshot.implicit and forked.snapshot.workspace_id == ws.id
        assert len(forked.workspaces) == 2
        a, b = forked.workspaces
        assert a.phase == "running" and b.phase == "running" and a.id != b.id
        assert a.labels.get("fork") == "yes"
        assert a.files.read("seed.txt") == b"seed" and b.files.read("seed.txt") == b"seed"
        a.files.write("mine.txt", b"a")
        assert not b.files.exists("mine.txt") and not ws.files.exists("mine.txt")
    finally:
        for w in forked.workspaces:
            w.delete(wait=True)
    with pytest.raises(primer.Invalid) as e:
        ws.fork(0)
    assert e.value.details.get("field") == "count" or "count" in e.value.message


def test_pause_and_resume(ws: primer.Workspace) -> None:
    ws.files.write("kept.txt", b"kept")
    paused = ws.pause()
    assert paused.phase == "paused" and paused.paused_mode == "filesystem"
    with pytest.raises(primer.FailedPrecondition):
        ws.exec("true")
    with pytest.raises(primer.FailedPrecondition):
        ws.pause()
    running = ws.resume()
    assert running.phase == "running"
    assert ws.files.read("kept.txt") == b"kept"
    assert ws.exec("echo back").stdout == "back\n"


def test_create_options_shown(client: primer.Client) -> None:
    with client.workspaces.create("default", ttl="1h", expire_action="pause") as w:
        assert w.expire_action == "pause" and w.expires_at is not None
