"""A team's forge on this machine, for the upstream tests: its repositories served over
git's smart HTTP by git's own http-backend (basic authentication with one token, as a
forge takes a token), and the subset of GitHub's and GitLab's REST APIs the hub uses
(open a pull or merge request, read it back). Every request is recorded, headers
included, so a test can see what the hub sent."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class Forge:
    root: Path  # bare repositories below, by their URL path
    token: str
    port: int = 0
    requests: list[dict] = field(default_factory=list)
    proposals: dict[int, dict] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class _Handler(BaseHTTPRequestHandler):
    forge: Forge
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _answer(self, status: int, payload: object = None, headers: dict | None = None,
                raw: bytes | None = None) -> None:
        data = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(status)
        for name, value in (headers or {"Content-Type": "application/json"}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _serve(self, method: str) -> None:
        body = self._body()
        self.forge.requests.append({"method": method, "path": self.path, "headers": dict(self.headers),
                               "body": body})
        if self.path.startswith(("/api/", "/repos/", "/projects/")) or "/api/v" in self.path:
            return self._api(method, body)
        return self._git(method, body)

    def _authorised_git(self) -> bool:
        scheme, _, encoded = self.headers.get("Authorization", "").partition(" ")
        if scheme != "Basic":
            return False
        _user, _, password = base64.b64decode(encoded).decode().partition(":")
        return password == self.forge.token

    def _git(self, method: str, body: bytes) -> None:
        if not self._authorised_git():
            return self._answer(401, raw=b"", headers={"WWW-Authenticate": 'Basic realm="forge"'})
        path, _, query = self.path.partition("?")
        env = {"PATH": os.environ["PATH"], "GIT_PROJECT_ROOT": str(self.forge.root), "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": path, "QUERY_STRING": query, "REQUEST_METHOD": method, "REMOTE_USER": "team",
               "CONTENT_TYPE": self.headers.get("Content-Type", ""), "GIT_CONFIG_NOSYSTEM": "1",
               "HOME": str(self.forge.root), "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.receivepack",
               "GIT_CONFIG_VALUE_0": "true"}
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False)
        head, _, rest = done.stdout.partition(b"\r\n\r\n")
        status, headers = 200, {}
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers[name] = value.strip()
        self._answer(status, headers=headers, raw=rest)

    def _api(self, method: str, body: bytes) -> None:
        github = self.headers.get("Authorization") == f"Bearer {self.forge.token}"
        gitlab = self.headers.get("PRIVATE-TOKEN") == self.forge.token
        if not (github or gitlab):
            return self._answer(401, {"message": "Bad credentials"})
        if method == "GET" and (match := re.fullmatch(r"(?:/api/v3)?/repos/[^/]+/[^/]+/pulls\?state=open&head=[^:]+:(.+)",
                                                        self.path)):
            head = urllib.parse.unquote(match[1])
            return self._answer(200, [p for p in self.forge.proposals.values()
                                      if p.get("head") == head and p["state"] == "open"])
        if method == "GET" and (match := re.fullmatch(r"/api/v4/projects/[^/]+/merge_requests\?state=opened&"
                                                        r"source_branch=(.+)", self.path)):
            head = urllib.parse.unquote(match[1])
            return self._answer(200, [p for p in self.forge.proposals.values()
                                      if p.get("source_branch") == head and p["state"] == "opened"])
        if method == "POST" and (match := re.fullmatch(r"(?:/api/v3)?/repos/([^/]+/[^/]+)/pulls", self.path)):
            asked = json.loads(body)
            if any(p.get("head") == asked["head"] and p["state"] == "open" for p in self.forge.proposals.values()):
                return self._answer(422, {"message": "Validation Failed: a pull request already exists"})
            number = len(self.forge.proposals) + 1
            self.forge.proposals[number] = {"number": number, "state": "open", "merged_at": None,
                                       "html_url": f"{self.forge.url}/{match[1]}/pull/{number}", **asked}
            return self._answer(201, self.forge.proposals[number])
        if method == "GET" and (match := re.fullmatch(r"(?:/api/v3)?/repos/[^/]+/[^/]+/pulls/(\d+)", self.path)):
            found = self.forge.proposals.get(int(match[1]))
            return self._answer(200 if found else 404, found or {"message": "Not Found"})
        if method == "POST" and (match := re.fullmatch(r"/api/v4/projects/([^/]+)/merge_requests", self.path)):
            asked = json.loads(body)
            if any(p.get("source_branch") == asked["source_branch"] and p["state"] == "opened"
                   for p in self.forge.proposals.values()):
                return self._answer(409, {"message": ["Another open merge request already exists"]})
            number = len(self.forge.proposals) + 1
            self.forge.proposals[number] = {"iid": number, "state": "opened",
                                       "web_url": f"{self.forge.url}/{match[1]}/-/merge_requests/{number}", **asked}
            return self._answer(201, self.forge.proposals[number])
        if method == "GET" and (match := re.fullmatch(r"/api/v4/projects/[^/]+/merge_requests/(\d+)", self.path)):
            found = self.forge.proposals.get(int(match[1]))
            return self._answer(200 if found else 404, found or {"message": "404 Not found"})
        return self._answer(404, {"message": "Not Found"})

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")


def start(root: Path, token: str) -> tuple[Forge, ThreadingHTTPServer]:
    forge = Forge(root=root, token=token)
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Handler,), {"forge": forge}))
    forge.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return forge, server
