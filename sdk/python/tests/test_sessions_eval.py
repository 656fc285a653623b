"""Sessions (tools, history, diff, restore), agents with a streamed
transcript, and eval suites defined in Python."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

import primer
from conftest import uid
from fake_model import FakeModel


def test_session_tools_history_restore(ws: primer.Workspace) -> None:
    with ws.session(agent="pytest", metadata={"k": "v"}) as s:
        assert s.status == "open" and s.workspace_id == ws.id and s.metadata == {"k": "v"}
        w1 = s.write("notes.txt", "one\n")
        assert w1.size == 4 and len(w1.commit) == 40
        e = s.exec("cat notes.txt; echo two >> notes.txt")
        assert e.stdout == "one\n" and e.exit_code == 0 and len(e.commit) == 40
        e2 = s.exec(["sh", "-c", "exit 5"])
        assert e2.exit_code == 5
        r = s.read("notes.txt")
        assert r.content == b"one\ntwo\n"
        b = s.write("bin.dat", bytes([0, 255, 1]))
        assert s.read("bin.dat").content == bytes([0, 255, 1]) and b.size == 3
        h = s.history()
        assert [x.tool for x in h.items][-2:] == ["workspace__exec", "workspace__write"]
        assert h.items[0].tool == "workspace__read" and h.items[-1].commit == w1.commit
        d = s.diff(e.commit)
        assert [(f.path, f.change) for f in d.files] == [("notes.txt", "modified")] and "+two" in d.patch
        d2 = s.diff(from_=w1.commit, to=e.commit)
        assert d2.from_ == w1.commit and d2.to == e.commit
        rs = s.restore(w1.commit)
        assert rs.restored_from == w1.commit and ("bin.dat", "deleted") in [(c.path, c.change) for c in rs.changed]
        assert ws.files.read("notes.txt") == b"one\n"
        with pytest.raises(primer.NotFound):
            s.call("workspace__delete", {"path": "x"})
        with pytest.raises(primer.Invalid):
            s.exec([])
        assert any(x.id == s.id for x in ws._client.sessions.list(workspace_id=ws.id))
    ended = s.refresh()
    assert ended.status == "ended" and ended.end_reason == "ended_by_user"
    with pytest.raises(primer.FailedPrecondition):
        s.write("late.txt", "x")


def test_agent_session_run_streams_transcript(client: primer.Client, ws: primer.Workspace, model: FakeModel) -> None:
    lp, ag = uid("model"), uid("agent")
    prov = client.llm_providers.create(lp, "openai", model.url, api_key="sk-test-secret")
    assert prov.api_key == "(redacted)"
    agent = client.agents.create(ag, primer.AgentModel(provider_id=lp, model_name="fake-1", max_tokens=256),
                                 system_prompt="Run the code.", max_turns=5, timeout="2m")
    assert agent.model.model_name == "fake-1" and agent.max_turns == 5
    try:
        s = ws.session()
        stream = s.run(ag, "Run print(6*7) and tell me what it printed.")
        roles = []
        for entry in stream:
            roles.append((entry.role, entry.tool_name))
        assert stream.run is not None and stream.run.end_reason == "completed" and stream.run.turns == 3
        assert roles[0] == ("user", "")
        assert ("tool", "workspace__write") in roles and ("tool", "workspace__exec") in roles
        assert stream.entries[-1].role == "assistant" and "42" in stream.entries[-1].content
        assert ws.files.read("out.txt") == b"42\n"
        tr = s.transcript()
        assert tr.run.status == "ended" and tr.usage.input_tokens == 30 and len(tr.items) == len(roles)
        # Following again replays the whole transcript and ends.
        assert s.follow().wait().end_reason == "completed"
        hist = s.history()
        assert {x.tool for x in hist.items} >= {"workspace__write", "workspace__exec"}
    finally:
        client.agents.delete(ag)
        client.llm_providers.delete(lp)
    with pytest.raises(primer.NotFound):
        client.agents.get(ag)


def test_eval_suite_defined_in_python(client: primer.Client) -> None:
    sid = uid("suite")
    cases = [
        primer.Case("adds", ["sh", "-c", "echo $((2+3))"], expect=primer.Expect(stdout_contains=["5"]), labels={"level": "easy"}),
        primer.Case("script", "python3 solve.py > out.txt", files={"solve.py": "print('ok')\n"},
                    expect=primer.Expect(files={"out.txt": "ok\n"})),
        primer.Case("scored", "echo '{\"score\": 0.75}' > score.json", score_file="score.json"),
        primer.Case("fails", "exit 3", labels={"level": "hard"}),
    ]
    suite = client.suites.create(sid, cases, template_id="default", concurrency=4, retries=0,
                                 defaults=primer.Defaults(timeout="30s"))
    try:
        assert suite.case_count == 4 and [c["id"] for c in suite.cases()] == ["adds", "script", "scored", "fails"]
        progress = []
        run = suite.run(wait=True, on_progress=progress.append, timeout=300)
        assert run.final and run.status == "succeeded" and not run.passed
        assert run.progress.passed == 3 and run.progress.fail == 1 and progress
        results = {r.case_id: r for r in run.results()}
        assert results["adds"].passed and results["script"].passed and results["scored"].score == 0.75
        assert results["fails"].verdict == "fail" and results["fails"].exit_code == 3
        junit = ET.fromstring(run.junit())
        assert [c.get("name") for c in junit.iter("testcase")] == ["adds", "script", "scored", "fails"]
        assert len(list(junit.iter("failure"))) == 1
        # Fix the failing case and compare.
        cases[3] = primer.Case("fails", "exit 0", labels={"level": "hard"})
        client.suites.update(sid, cases, template_id="default", retries=0)
        head = suite.run(labels={"level": "hard"}, triggered_by="pytest", wait=True, timeout=300)
        assert head.triggered_by == "pytest" and head.total == 1
        cmp = head.compare(run)
        assert [f.case for f in cmp.fixes] == ["fails"] and cmp.regressions == [] and set(cmp.missing) == {"adds", "script", "scored"}
        assert [r.id for r in suite.runs()][:2] == [head.id, run.id]
        with pytest.raises(primer.FailedPrecondition):
            head.cancel()  # it has ended
        with pytest.raises(primer.FailedPrecondition):
            suite.pause()  # no schedule
    finally:
        client.suites.delete(sid)
    with pytest.raises(primer.Invalid) as e:
        client.suites.create(uid("bad"), [primer.Case("x", [])], template_id="default")
    assert e.value.field and e.value.field.startswith("spec.cases")


def test_eval_suite_on_a_schedule(client: primer.Client) -> None:
    sid = uid("sched")
    suite = client.suites.apply(sid, [primer.Case("ok", "true")], template_id="default",
                                schedule=primer.Schedule(interval="1h", paused=True))
    try:
        assert suite.schedule_status is not None and suite.schedule_status.paused
        assert suite.resume().schedule_status.paused is False
        suite.trigger()
        runs = client.runs.wait_for(sid, 1, timeout=300)
        assert runs[0].trigger == "schedule" and runs[0].status == "succeeded"
        assert suite.pause().schedule_status.paused
        again = client.suites.apply(sid, [primer.Case("ok", "true"), primer.Case("two", "true")], template_id="default",
                                    schedule=primer.Schedule(interval="1h", paused=True))
        assert again.case_count == 2
    finally:
        client.suites.delete(sid)


def test_eval_suite_as_jsonl(client: primer.Client) -> None:
    sid = uid("jsonl")
    many = (primer.Case(f"c{i:04d}", ["true"], labels={"n": str(i % 3)}) for i in range(1000))
    suite = client.suites.create_jsonl(sid, many, template_id="default", concurrency=8)
    try:
        assert suite.case_count == 1000
        again = client.suites.create_jsonl(sid, [primer.Case("only", "echo hi", expect=primer.Expect(stdout_contains=["hi"]))],
                                           update=True, template_id="default")
        assert again.case_count == 1 and [c["id"] for c in again.cases()] == ["only"]
        run = again.run(wait=True, timeout=300)
        assert run.passed
    finally:
        client.suites.delete(sid)
