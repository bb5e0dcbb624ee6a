"""A small local HTTP stand-in for the Hub endpoints that ``train push`` uses.

What it covers: ``POST /api/repos/create``, ``POST /api/validate-yaml`` (accepts any card
without warnings), ``POST /api/models/{repo}/preupload/{revision}``,
``POST /api/models/{repo}/commit/{revision}`` (the NDJSON commit with base64 file
contents and deleted files) and ``GET /api/models/{repo}/tree/{revision}`` (the files after the last commit, one
page), enough for huggingface_hub's ``create_repo``, ``create_commit`` and ``upload_folder`` (with
``delete_patterns``) to run their real request and response handling. What it does not cover: authentication, LFS and Xet
uploads (it answers ``uploadMode: regular`` for every file, where the real Hub sends large
files through LFS/Xet), downloads, branches and pull requests.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class HubStandIn:
    def __init__(self):
        self.validated: list[str] = []  # model cards sent for YAML validation
        # repo_id -> {"commits": [(sha, message, {path: bytes})], "files": {path: bytes} after the last commit}
        self.repos: dict[str, dict] = {}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HubStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _reply(self, status: int, payload: dict | list) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                path = self.path.split("?")[0]
                if path == "/api/repos/create":
                    request = json.loads(body)
                    repo_id = f"{request['organization']}/{request['name']}"
                    if repo_id in hub.repos:
                        return self._reply(
                            409, {"error": "You already created this model repo", "url": f"{hub.url}/{repo_id}"}
                        )
                    hub.repos[repo_id] = {"commits": [], "files": {}}
                    return self._reply(200, {"url": f"{hub.url}/{repo_id}"})
                if path == "/api/validate-yaml":
                    hub.validated.append(json.loads(body)["content"])
                    return self._reply(200, {"warnings": []})
                parts = path.split("/")  # ['', 'api', 'models', org, name, action, revision]
                if len(parts) == 7 and parts[1:3] == ["api", "models"]:
                    repo_id, action = f"{parts[3]}/{parts[4]}", parts[5]
                    if repo_id not in hub.repos:
                        return self._reply(404, {"error": "Repository not found"})
                    if action == "preupload":
                        files = json.loads(body)["files"]
                        return self._reply(
                            200,
                            {
                                "files": [
                                    {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files
                                ]
                            },
                        )
                    if action == "commit":
                        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
                        header = next(line["value"] for line in lines if line["key"] == "header")
                        files = {
                            line["value"]["path"]: base64.b64decode(line["value"]["content"])
                            for line in lines
                            if line["key"] == "file"
                        }
                        tree = hub.repos[repo_id]["files"]
                        for line in lines:
                            if line["key"] == "deletedFile":
                                tree.pop(line["value"]["path"])
                        tree.update(files)
                        digest = hashlib.sha1(
                            json.dumps(sorted((p, hashlib.sha256(c).hexdigest()) for p, c in tree.items())).encode()
                        )
                        sha = digest.hexdigest()
                        hub.repos[repo_id]["commits"].append((sha, header["summary"], files))
                        return self._reply(200, {"commitOid": sha, "commitUrl": f"{hub.url}/{repo_id}/commit/{sha}"})
                return self._reply(404, {"error": f"not served by the stand-in: {path}"})

            def do_GET(self):  # noqa: N802
                parts = self.path.split("?")[0].split("/")  # ['', 'api', 'models', org, name, 'tree', revision]
                if len(parts) == 7 and parts[1:3] == ["api", "models"] and parts[5] == "tree":
                    repo = hub.repos.get(f"{parts[3]}/{parts[4]}")
                    if repo is None:
                        return self._reply(404, {"error": "Repository not found"})
                    listing = [
                        {"type": "file", "path": path, "oid": hashlib.sha1(content).hexdigest(), "size": len(content)}
                        for path, content in sorted(repo["files"].items())
                    ]
                    return self._reply(200, listing)
                return self._reply(404, {"error": f"not served by the stand-in: {self.path}"})

        return Handler
