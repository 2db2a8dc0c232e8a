"""The websockets on the wire, under a real Daphne: frames a Python test client cannot
even build (invalid UTF-8) end that connection the way the protocol says (failed with
1007, before any consumer runs); oversized and malformed frames get error frames; the hub keeps
serving every other connection."""

from __future__ import annotations

import base64
import json
import os
import socket
import struct

import pytest

from tests.rooms.factories import make_room, make_user
from tests.rooms.test_consumers import cookie_for

pytestmark = pytest.mark.django_db(transaction=True)


class RawSocket:
    """A minimal websocket client: enough to send frames no library would."""

    def __init__(self, host: str, port: int, path: str, *, cookie: bytes, origin: str) -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                           f"Origin: {origin}\r\nCookie: {cookie.decode()}\r\n\r\n").encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            if not chunk:
                break
            response += chunk
        self.status = response.split(b" ", 2)[1] if b" " in response else b""
        self.buffer = response.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in response else b""

    def send(self, payload: bytes, opcode: int = 1) -> None:
        mask = os.urandom(4)
        size = len(payload)
        head = bytes([0x80 | opcode])
        if size < 126:
            head += bytes([0x80 | size])
        elif size < 2**16:
            head += bytes([0x80 | 126]) + struct.pack("!H", size)
        else:
            head += bytes([0x80 | 127]) + struct.pack("!Q", size)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def receive(self) -> tuple[int, bytes]:
        first, second = self._read(2)
        size = second & 0x7F
        if size == 126:
            size = struct.unpack("!H", self._read(2))[0]
        elif size == 127:
            size = struct.unpack("!Q", self._read(8))[0]
        return first & 0x0F, self._read(size)

    def receive_json(self) -> dict:
        opcode, payload = self.receive()
        assert opcode == 1, (opcode, payload)
        return json.loads(payload)

    def close(self) -> None:
        self.sock.close()


def test_invalid_utf8_closes_only_that_connection_with_1007_and_the_hub_keeps_serving(daphne_server):
    owner = make_user("wire")
    room = make_room(owner)
    cookie = cookie_for(owner)
    host, port = daphne_server.host, daphne_server.port
    origin = f"http://{host}:{port}"
    path = f"/ws/rooms/{room.slug}/"

    bystander = RawSocket(host, port, path, cookie=cookie, origin=origin)
    assert bystander.status == b"101"
    bystander.send(json.dumps({"type": "hello", "last_seq": 0}).encode())
    while bystander.receive_json()["type"] != "synced":
        pass

    for bad in (b'{"type": "chat", "text": "\xff\xfe"}', b"\xc3\x28", b'{"type": "hello", "last_seq": 0}\xed\xa0\x80'):
        attacker = RawSocket(host, port, path, cookie=cookie, origin=origin)
        assert attacker.status == b"101"
        attacker.send(bad)
        try:  # the protocol's answer: close 1007 (invalid payload data), or the connection dropped
            opcode, payload = attacker.receive()
            assert opcode == 8 and struct.unpack("!H", payload[:2])[0] == 1007
        except ConnectionError:
            pass
        attacker.close()

    sneaky = RawSocket(host, port, path, cookie=cookie, origin=f"http://{host}:{port + 1}")
    assert sneaky.status == b"403"  # same host, another port: another origin
    sneaky.close()

    # Oversized, deep and malformed frames on a live connection: an error frame each.
    for frame, code in ((b"x" * 300_000, "too_large"), (b"[" * 100_000, "too_deep"), (b"{", "bad_json"),
                        (json.dumps({"type": "steer", "agent": 2**64, "text": "x"}).encode(), "bad_request")):
        bystander.send(frame)
        reply = bystander.receive_json()
        assert (reply["type"], reply["code"]) == ("error", code)
    bystander.send(json.dumps({"type": "chat", "text": "still serving"}).encode())
    reply = bystander.receive_json()
    assert (reply["type"], reply["text"]) == ("message", "still serving")
    bystander.close()
    assert "Traceback" not in daphne_server.hub_process.log_tail(400)
