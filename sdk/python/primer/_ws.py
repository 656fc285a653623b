"""A small WebSocket client (RFC 6455) for a process's attach stream:
text frames of JSON, client frames masked, pings answered, fragments
joined. httpx speaks no WebSocket, and the SDK takes no dependency but
httpx; the attach stream needs nothing more than this."""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import ssl
import struct
from typing import Any, Dict, Optional, Tuple
from urllib.parse import urlsplit

from . import errors

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


def frame(opcode: int, payload: bytes) -> bytes:
    """A final, masked client frame."""
    head = bytearray([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head.append(0x80 | n)
    elif n < 1 << 16:
        head.append(0x80 | 126)
        head += struct.pack("!H", n)
    else:
        head.append(0x80 | 127)
        head += struct.pack("!Q", n)
    mask = os.urandom(4)
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload)) if n < 4096 else _mask_fast(payload, mask)
    return bytes(head) + mask + body


def _mask_fast(payload: bytes, mask: bytes) -> bytes:
    m = int.from_bytes(mask * 2, "big")
    out = bytearray(payload)
    full = len(out) // 8 * 8
    for i in range(0, full, 8):
        out[i:i + 8] = (int.from_bytes(out[i:i + 8], "big") ^ m).to_bytes(8, "big")
    for i in range(full, len(out)):
        out[i] ^= mask[i % 4]
    return bytes(out)


def handshake(url: str, headers: Dict[str, str]) -> Tuple[str, int, bool, bytes, str]:
    """The host, port, TLS flag, request bytes and key of an upgrade to url."""
    u = urlsplit(url)
    tls = u.scheme in ("https", "wss")
    port = u.port or (443 if tls else 80)
    path = (u.path or "/") + (f"?{u.query}" if u.query else "")
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [f"GET {path} HTTP/1.1", f"Host: {u.netloc}", "Upgrade: websocket", "Connection: Upgrade",
             f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
    lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() not in ("accept", "content-type")]
    return u.hostname or "", port, tls, ("\r\n".join(lines) + "\r\n\r\n").encode(), key


def refused(status: int, head: bytes, body: bytes, path: str) -> errors.PrimerError:
    return errors.from_response(status, body, "GET", path)


def parse_head(head: bytes) -> Tuple[int, Dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        raise errors.Unavailable(f"attach: bad answer {lines[0][:80]!r}")
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        if k:
            hdrs[k.strip().lower()] = v.strip()
    return status, hdrs


class SyncConn:
    """A blocking WebSocket connection."""

    def __init__(self, url: str, headers: Dict[str, str], timeout: Optional[float], path: str) -> None:
        host, port, tls, req, _ = handshake(url, headers)
        try:
            s = socket.create_connection((host, port), timeout=timeout)
            if tls:
                s = ssl.create_default_context().wrap_socket(s, server_hostname=host)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.settimeout(None)
            s.sendall(req)
        except OSError as e:
            raise errors.Unavailable(f"GET {path}: {e}") from e
        self.sock = s
        self.buf = b""
        head = self._until(b"\r\n\r\n")
        status, hdrs = parse_head(head)
        if status != 101:
            body = self._exactly(int(hdrs.get("content-length", "0") or 0))
            s.close()
            raise refused(status, head, body, path)

    def _fill(self) -> None:
        b = self.sock.recv(65536)
        if not b:
            raise errors.Unavailable("attach: connection closed")
        self.buf += b

    def _until(self, sep: bytes) -> bytes:
        while sep not in self.buf:
            self._fill()
        head, _, self.buf = self.buf.partition(sep)
        return head

    def _exactly(self, n: int) -> bytes:
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send_text(self, text: str) -> None:
        self.sock.sendall(frame(OP_TEXT, text.encode()))

    def recv_text(self) -> Optional[str]:
        """The next text message; None when the server closed."""
        parts = []
        while True:
            b0, b1 = self._exactly(2)
            op, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._exactly(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._exactly(8))[0]
            mask = self._exactly(4) if b1 & 0x80 else None
            data = self._exactly(n)
            if mask:
                data = _mask_fast(data, mask)
            if op == OP_PING:
                self.sock.sendall(frame(OP_PONG, data))
                continue
            if op == OP_PONG:
                continue
            if op == OP_CLOSE:
                try:
                    self.sock.sendall(frame(OP_CLOSE, data[:2]))
                except OSError:
                    pass
                return None
            parts.append(data)
            if b0 & 0x80:
                return b"".join(parts).decode("utf-8", "replace")

    def close(self) -> None:
        try:
            self.sock.sendall(frame(OP_CLOSE, struct.pack("!H", 1000) + b"detach"))
        except OSError:
            pass
        self.sock.close()


class AsyncConn:
    """An asyncio WebSocket connection."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    @classmethod
    async def open(cls, url: str, headers: Dict[str, str], timeout: Optional[float], path: str) -> "AsyncConn":
        c = cls()
        host, port, tls, req, _ = handshake(url, headers)
        try:
            c.reader, c.writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, ssl=ssl.create_default_context() if tls else None), timeout)
            sock = c.writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            c.writer.write(req)
            await c.writer.drain()
            head = (await c.reader.readuntil(b"\r\n\r\n"))[:-4]
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
            raise errors.Unavailable(f"GET {path}: {e}") from e
        status, hdrs = parse_head(head)
        if status != 101:
            body = await c.reader.readexactly(int(hdrs.get("content-length", "0") or 0))
            c.writer.close()
            raise refused(status, head, body, path)
        return c

    async def send_text(self, text: str) -> None:
        self.writer.write(frame(OP_TEXT, text.encode()))
        await self.writer.drain()

    async def recv_text(self) -> Optional[str]:
        parts = []
        try:
            while True:
                b0, b1 = await self.reader.readexactly(2)
                op, n = b0 & 0x0F, b1 & 0x7F
                if n == 126:
                    n = struct.unpack("!H", await self.reader.readexactly(2))[0]
                elif n == 127:
                    n = struct.unpack("!Q", await self.reader.readexactly(8))[0]
                mask = await self.reader.readexactly(4) if b1 & 0x80 else None
                data = await self.reader.readexactly(n)
                if mask:
                    data = _mask_fast(data, mask)
                if op == OP_PING:
                    self.writer.write(frame(OP_PONG, data))
                    continue
                if op == OP_PONG:
                    continue
                if op == OP_CLOSE:
                    self.writer.write(frame(OP_CLOSE, data[:2]))
                    return None
                parts.append(data)
                if b0 & 0x80:
                    return b"".join(parts).decode("utf-8", "replace")
        except asyncio.IncompleteReadError as e:
            raise errors.Unavailable("attach: connection closed") from e

    async def close(self) -> None:
        try:
            self.writer.write(frame(OP_CLOSE, struct.pack("!H", 1000) + b"detach"))
            await self.writer.drain()
        except OSError:
            pass
        self.writer.close()


def ws_url(base: str, path: str) -> str:
    return base + path


__all__ = ["SyncConn", "AsyncConn", "ws_url", "Any"]
