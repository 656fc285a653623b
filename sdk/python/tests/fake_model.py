"""A model stand-in for tests: it speaks OpenAI's chat-completions wire
format (what llmtest in the Go tests speaks) and plays the code-runner
conversation: write snippet.py, run it into out.txt, report. It is
stateless (the turn is the number of assistant messages in the request),
so concurrent agent runs do not disturb each other."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional

SCRIPT: List[Dict[str, Any]] = [
    {"tool": "workspace__write", "args": {"path": "snippet.py", "content": "print(6 * 7)\n"}},
    {"tool": "workspace__exec", "args": {"command": "python3 snippet.py > out.txt"}},
    {"text": "The snippet printed 42."},
]


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *a: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        if not self.path.endswith("/chat/completions") or not self.headers.get("Authorization"):
            self.send_error(400, "fake model: want POST .../chat/completions with a key")
            return
        self.server.requests.append(body)  # type: ignore[attr-defined]
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        step = SCRIPT[min(turn, len(SCRIPT) - 1)]
        msg: Dict[str, Any] = {"role": "assistant", "content": step.get("text")}
        finish = "stop"
        if "tool" in step:
            finish = "tool_calls"
            msg["tool_calls"] = [{"id": f"call_{turn}", "type": "function",
                                  "function": {"name": step["tool"], "arguments": json.dumps(step["args"])}}]
        out = json.dumps({"id": f"chatcmpl-fake-{turn}", "object": "chat.completion", "model": body.get("model", ""),
                          "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                          "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


class FakeModel:
    """The stand-in on a free loopback port; ``url`` is a provider's base_url."""

    def __init__(self) -> None:
        self._srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._srv.requests = []  # type: ignore[attr-defined]
        self._thread: Optional[threading.Thread] = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._srv.server_address[1]}/v1"

    @property
    def requests(self) -> List[Dict[str, Any]]:
        return self._srv.requests  # type: ignore[attr-defined]

    def start(self) -> None:
        self._thread = threading.Thread(target=self._srv.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._srv.shutdown()
        self._srv.server_close()


if __name__ == "__main__":  # serve until killed, printing the base_url
    import sys

    m = FakeModel()
    print(m.url, flush=True)
    try:
        m._srv.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)
