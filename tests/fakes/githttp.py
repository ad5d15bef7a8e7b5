#!/usr/bin/python3
"""A git smart-HTTP server for kernelbot's tests: git-http-backend(1) behind
HTTP Basic authentication, on 127.0.0.1 with a free port.

Serves the bare repositories under --root. Every request must carry
"Authorization: Basic" with --user and --password, or it gets 401 with a
WWW-Authenticate challenge (what makes libgit2 call its credential
callback). One JSON line per request goes to --log:
    {"method", "path", "service", "auth": "ok"|"none"|"bad", "status"}
"""
import argparse
import base64
import json
import os
import subprocess
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def body(self):
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def send(self, status, headers, data):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        a = self.server.args
        u = urllib.parse.urlsplit(self.path)
        data = self.body()
        rec = {"method": self.command, "path": u.path,
               "service": urllib.parse.parse_qs(u.query).get("service", [""])[0]}
        auth = self.headers.get("Authorization") or ""
        want = "Basic " + base64.b64encode(("%s:%s" % (a.user, a.password)).encode()).decode()
        rec["auth"] = "ok" if auth == want else ("none" if not auth else "bad")
        if rec["auth"] != "ok":
            rec["status"] = 401
            self.server.record(rec)
            return self.send(401, [("WWW-Authenticate", 'Basic realm="git"')], b"")
        env = {"GIT_PROJECT_ROOT": a.root, "GIT_HTTP_EXPORT_ALL": "1",
               "REQUEST_METHOD": self.command, "PATH_INFO": u.path,
               "QUERY_STRING": u.query, "REMOTE_USER": a.user, "REMOTE_ADDR": "127.0.0.1",
               "CONTENT_TYPE": self.headers.get("Content-Type") or "",
               "CONTENT_LENGTH": str(len(data)), "PATH": "/usr/bin:/bin",
               "HOME": a.root, "GIT_CONFIG_NOSYSTEM": "1",
               "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding") or ""}
        if a.race and u.path.endswith("/git-receive-pack") and not self.server.raced:
            self.server.raced = True
            rec["raced"] = self.race(env, u.path[:-len("/git-receive-pack")])
        p = subprocess.run(["git", "http-backend"], input=data, env=env, capture_output=True)
        head, _, body = p.stdout.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode().split("\r\n"):
            if not line:
                continue
            k, _, v = line.partition(":")
            if k.lower() == "status":
                status = int(v.strip().split()[0])
            else:
                headers.append((k, v.strip()))
        rec["status"] = status
        self.server.record(rec)
        self.send(status, headers, body)

    def race(self, env, repo_path):
        """Commit on top of --race's ref as a human, the way a push would."""
        gd = os.path.join(self.server.args.root, repo_path.lstrip("/"))
        e = dict(env, GIT_DIR=gd, GIT_AUTHOR_NAME="Hu Man", GIT_AUTHOR_EMAIL="hu@example.com",
                 GIT_COMMITTER_NAME="Hu Man", GIT_COMMITTER_EMAIL="hu@example.com")
        ref = self.server.args.race

        def git(*argv):
            return subprocess.run(["git"] + list(argv), env=e, capture_output=True,
                                  text=True, check=True).stdout.strip()
        tip = git("rev-parse", ref)
        new = git("commit-tree", tip + "^{tree}", "-p", tip, "-m", "human fix")
        git("update-ref", ref, new, tip)
        return new

    do_GET = do_POST = handle_any


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--user", default="x-access-token")
    ap.add_argument("--password", required=True)
    ap.add_argument("--race")
    args = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.args = args
    srv.raced = False
    log = open(args.log, "a")

    def record(rec):
        log.write(json.dumps(rec) + "\n")
        log.flush()
    srv.record = record
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_port))
    os.rename(args.port_file + ".tmp", args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
