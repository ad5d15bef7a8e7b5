"""Shared machinery of the fake forge servers (github.py, gitlab.py, gitea.py).

A fake listens on 127.0.0.1 on a free port (written to --port-file), checks
every request against the forge's documented API (method, path, headers,
JSON fields and their types; unknown fields are violations), keeps the
forge's state in memory, and appends one JSON line per request to --log:

    {"t": 12.345, "method": "POST", "path": "/repos/o/r/pulls", "query": {...},
     "body": {...}, "status": 201, "violations": [...], "scripted": false,
     "auth": "token"|"jwt"|"installation"|"none"|"bad"}

--script FILE holds scripted replies for error paths, tried before the
normal routes, in order:
    [{"method": "POST", "path": "regex", "status": 502, "times": 2,
      "headers": {"Retry-After": "1"}, "body": {"message": "..."}}]
A request that matches no route is a violation and gets 404.
"""
import argparse
import json
import re
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

START = time.time()


class Violation(Exception):
    pass


def check_fields(body, spec, where="body"):
    """spec: {name: (type or tuple of types, required, allowed values or None)}."""
    v = []
    if not isinstance(body, dict):
        return ["%s is not a JSON object" % where]
    for k in body:
        if k not in spec:
            v.append("%s: unknown field %r" % (where, k))
    for k, (typ, required, allowed) in spec.items():
        if k not in body:
            if required:
                v.append("%s: missing required field %r" % (where, k))
            continue
        val = body[k]
        if typ is list and isinstance(val, list):
            pass
        elif typ is int and isinstance(val, bool):
            v.append("%s.%s: expected int, got bool" % (where, k))
            continue
        elif not isinstance(val, typ):
            v.append("%s.%s: expected %s, got %s" % (where, k, typ, type(val).__name__))
            continue
        if allowed is not None:
            if isinstance(val, list):
                bad = [x for x in val if not isinstance(x, allowed)]
                if bad:
                    v.append("%s.%s: items must be %s" % (where, k, allowed))
            elif val not in allowed:
                v.append("%s.%s: %r not one of %s" % (where, k, val, sorted(allowed)))
    return v


class Fake:
    """Subclasses set self.routes = [(method, regex, handler)] and check_auth()."""

    page_size = 100

    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.script = []
        if args.script:
            with open(args.script) as f:
                self.script = json.load(f)
        self.log = open(args.log, "a")
        self.next_id = 1000
        self.routes = []

    def new_id(self):
        self.next_id += 1
        return self.next_id

    def record(self, rec):
        rec["t"] = round(time.time() - START, 3)
        self.log.write(json.dumps(rec, sort_keys=True) + "\n")
        self.log.flush()

    def scripted(self, method, path):
        for s in self.script:
            if s.get("method", method) == method and re.search(s["path"], path) \
                    and s.get("times", 1) > 0:
                s["times"] = s.get("times", 1) - 1
                return s
        return None

    def paginate(self, h, items, query, page_param="page", size_param="per_page"):
        """One page of items, with a Link header to the next like the forges send."""
        size = min(int(query.get(size_param, [self.page_size])[0]), self.page_size)
        page = int(query.get(page_param, ["1"])[0])
        chunk = items[(page - 1) * size:page * size]
        if page * size < len(items):
            q = {k: v[0] for k, v in query.items()}
            q[page_param] = str(page + 1)
            url = "http://127.0.0.1:%d%s?%s" % (h.server.server_port,
                                                h.path.split("?")[0], urllib.parse.urlencode(q))
            h.extra_headers["Link"] = '<%s>; rel="next"' % url
        return chunk

    def head_sha(self, ref):
        """The tip of branch ref in --git-dir, as the forge reports a PR head; None without one."""
        if not self.args.git_dir:
            return None
        r = subprocess.run(["git", "--git-dir", self.args.git_dir, "rev-parse", "--verify", "-q",
                            "refs/heads/" + ref + "^{commit}"], capture_output=True, text=True)
        return r.stdout.strip() or None


REACTIONS = {"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}


class GitHubShaped(Fake):
    """Issue comments, collaborator permission and reactions, which GitHub
    and Gitea serve alike. Subclasses provide pull(n) and comment_view(c),
    and may set body_max, size_param and not_found."""

    body_max = None
    size_param = "per_page"
    not_found = "Not Found"

    def __init__(self, args):
        super().__init__(args)
        self.comments = {}     # id -> {"id", "issue", "body"}
        self.reactions = set()
        self.users = json.loads(args.users)

    def too_long(self, body):
        if self.body_max and len(body.get("body", "")) > self.body_max:
            return 422, {"message": "Validation Failed", "errors": [
                {"field": "body", "code": "custom", "message": "body is too long"}]}
        return None

    def list_comments(self, h, m, q, body, rec):
        self.pull(m["n"])
        out = [self.comment_view(c) for c in self.comments.values() if c["issue"] == int(m["n"])]
        return 200, self.paginate(h, out, q, size_param=self.size_param)

    def create_comment(self, h, m, q, body, rec):
        rec["violations"] += check_fields(body, {"body": (str, True, None)})
        bad = self.too_long(body)
        if bad:
            return bad
        self.pull(m["n"])
        c = {"id": self.new_id(), "issue": int(m["n"]), "body": body["body"]}
        self.comments[c["id"]] = c
        return 201, self.comment_view(c)

    def edit_comment(self, h, m, q, body, rec):
        rec["violations"] += check_fields(body, {"body": (str, True, None)})
        c = self.comments.get(int(m["id"]))
        if not c:
            return 404, {"message": self.not_found}
        c["body"] = body["body"]
        return 200, self.comment_view(c)

    def permission(self, h, m, q, body, rec):
        u = m["u"]
        if u not in self.users:
            return 404, {"message": self.not_found}
        return 200, {"permission": self.users[u], "role_name": self.users[u],
                     "user": {"login": u}}

    def react(self, h, m, q, body, rec):
        rec["violations"] += check_fields(body, {"content": (str, True, REACTIONS)})
        if int(m["id"]) not in self.comments:
            return 404, {"message": self.not_found}
        key = (int(m["id"]), body.get("content"))
        existed = key in self.reactions
        self.reactions.add(key)
        return (200 if existed else 201), {"content": body.get("content"),
                                           "user": {"login": "kernelbot"}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, body=None, headers=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        for k, v in self.extra_headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        fake = self.server.fake
        self.extra_headers = {}
        parsed = urllib.parse.urlsplit(self.path)
        raw_path = parsed.path
        query = urllib.parse.parse_qs(parsed.query)
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        rec = {"method": self.command, "path": raw_path,
               "query": {k: v[0] for k, v in query.items()}, "violations": [],
               "scripted": False}
        body = None
        if raw:
            if not (self.headers.get("Content-Type") or "").startswith("application/json"):
                rec["violations"].append("body without Content-Type: application/json")
            try:
                body = json.loads(raw)
            except ValueError:
                rec["violations"].append("body is not JSON")
        rec["body"] = body
        if not self.headers.get("User-Agent"):
            rec["violations"].append("no User-Agent")
        with fake.lock:
            rec["auth"] = fake.check_auth(self, raw_path, rec)
            s = fake.scripted(self.command, raw_path)
            if s:
                rec["scripted"] = True
                rec["status"] = s.get("status", 200)
                fake.record(rec)
                return self.reply(rec["status"], s.get("body"), s.get("headers"))
            if rec["auth"] == "none":
                rec["violations"].append("no credentials")
            if rec["auth"] == "bad":
                rec["status"] = 401
                fake.record(rec)
                return self.reply(401, {"message": "Bad credentials"})
            for method, rx, fn in fake.routes:
                m = re.fullmatch(rx, raw_path)
                if m and method == self.command:
                    try:
                        status, out = fn(self, m, query, body, rec)
                    except Violation as e:
                        rec["violations"].append(str(e))
                        status, out = 422, {"message": "fake: %s" % e}
                    if rec["violations"] and status < 400:
                        status, out = 422, {"message": "fake: " + "; ".join(rec["violations"])}
                    rec["status"] = status
                    fake.record(rec)
                    return self.reply(status, out)
            rec["violations"].append("no such route")
            rec["status"] = 404
            fake.record(rec)
            return self.reply(404, {"message": "Not Found"})

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = handle_any


def main(fake_class):
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--script")
    ap.add_argument("--token", default="secret-token")
    ap.add_argument("--page-size", type=int, default=100)
    ap.add_argument("--public-key")
    ap.add_argument("--users", default="{}", help='JSON {"login": "permission"}')
    ap.add_argument("--git-dir", help="bare repository whose branches PR heads are (head.sha)")
    args = ap.parse_args()
    fake = fake_class(args)
    fake.page_size = args.page_size
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.fake = fake
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_port))
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)
