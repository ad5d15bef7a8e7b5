#!/usr/bin/python3
"""A fake GitHub REST API (version 2022-11-28) for kernelbot's tests.

Serves the endpoints kernelbot's github driver uses, with the documented
request shapes (https://docs.github.com/en/rest): pulls, issue labels,
requested reviewers, issue comments, commit statuses, check runs,
collaborator permission, reactions, and GitHub App installation tokens
(the JWT is verified with --public-key through openssl(1)). See
fakeforge.py for the log, the script and the checks common to all fakes.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fakeforge import GitHubShaped, Violation, check_fields, main  # noqa: E402

R = r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)"
STATES = {"error", "failure", "pending", "success"}
CONCLUSIONS = {"action_required", "cancelled", "failure", "neutral", "success",
               "skipped", "stale", "timed_out"}
BODY_MAX = 65536
APP_ID = "4242"
INSTALLATION = 77
INSTALL_TOKEN = "ghs_installation_token_for_tests"


def b64d(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


class GitHub(GitHubShaped):
    body_max = BODY_MAX

    def __init__(self, args):
        super().__init__(args)
        self.pulls = {}        # number -> pr
        self.statuses = []
        self.checks = {}
        self.number = 0
        self.routes = [
            ("GET", R + "/pulls", self.list_pulls),
            ("POST", R + "/pulls", self.create_pull),
            ("GET", R + r"/pulls/(?P<n>\d+)", self.get_pull),
            ("PATCH", R + r"/pulls/(?P<n>\d+)", self.edit_pull),
            ("POST", R + r"/issues/(?P<n>\d+)/labels", self.add_labels),
            ("POST", R + r"/pulls/(?P<n>\d+)/requested_reviewers", self.reviewers),
            ("GET", R + r"/issues/(?P<n>\d+)/comments", self.list_comments),
            ("POST", R + r"/issues/(?P<n>\d+)/comments", self.create_comment),
            ("PATCH", R + r"/issues/comments/(?P<id>\d+)", self.edit_comment),
            ("POST", R + r"/statuses/(?P<sha>[0-9a-f]{40})", self.status),
            ("GET", R + r"/commits/(?P<sha>[0-9a-f]{40})/check-runs", self.list_checks),
            ("POST", R + r"/check-runs", self.create_check),
            ("PATCH", R + r"/check-runs/(?P<id>\d+)", self.edit_check),
            ("GET", R + r"/collaborators/(?P<u>[^/]+)/permission", self.permission),
            ("POST", R + r"/issues/comments/(?P<id>\d+)/reactions", self.react),
            ("GET", R + r"/installation", self.installation),
            ("POST", r"/app/installations/(?P<id>\d+)/access_tokens", self.access_token),
        ]

    # -- authentication -------------------------------------------------
    def verify_jwt(self, tok, rec):
        try:
            h64, p64, s64 = tok.split(".")
            header, claims = json.loads(b64d(h64)), json.loads(b64d(p64))
        except ValueError:
            rec["violations"].append("JWT is not three base64url JSON parts")
            return False
        if header != {"alg": "RS256", "typ": "JWT"}:
            rec["violations"].append("JWT header %r" % header)
        now = time.time()
        if str(claims.get("iss")) != APP_ID:
            rec["violations"].append("JWT iss %r" % claims.get("iss"))
        if not (claims.get("iat", now + 1) <= now and claims.get("exp", 0) > now
                and claims["exp"] - claims["iat"] <= 600):
            rec["violations"].append("JWT iat/exp %r" % claims)
        with tempfile.TemporaryDirectory() as d:
            with open(d + "/in", "w") as f:
                f.write(h64 + "." + p64)
            with open(d + "/sig", "wb") as f:
                f.write(b64d(s64))
            r = subprocess.run(["openssl", "dgst", "-sha256", "-verify",
                                self.args.public_key, "-signature", d + "/sig",
                                d + "/in"], capture_output=True)
        if r.returncode != 0:
            rec["violations"].append("JWT signature does not verify")
            return False
        return True

    def check_auth(self, h, path, rec):
        if h.headers.get("Accept") != "application/vnd.github+json":
            rec["violations"].append("Accept is %r" % h.headers.get("Accept"))
        if h.headers.get("X-GitHub-Api-Version") != "2022-11-28":
            rec["violations"].append("no X-GitHub-Api-Version: 2022-11-28")
        auth = h.headers.get("Authorization") or ""
        if not auth.startswith("Bearer "):
            return "none" if not auth else "bad"
        tok = auth[7:]
        app_path = path.startswith("/app/") or path.endswith("/installation")
        if app_path:
            return "jwt" if self.args.public_key and self.verify_jwt(tok, rec) else "bad"
        if tok == self.args.token:
            return "token"
        if tok == INSTALL_TOKEN and self.args.public_key:
            return "installation"
        return "bad"

    # -- pulls ----------------------------------------------------------
    def pr_view(self, pr):
        return {"number": pr["number"], "title": pr["title"], "body": pr["body"],
                "state": pr["state"], "html_url": "https://github.test/%s/pull/%d" % (
                    pr["repo"], pr["number"]),
                "head": {"ref": pr["head"], "label": "x:" + pr["head"],
                         "sha": self.head_sha(pr["head"]),
                         "repo": {"full_name": pr["repo"]}},
                "base": {"ref": pr["base"], "repo": {"full_name": pr["repo"]}},
                "labels": [{"name": n} for n in pr["labels"]],
                "requested_reviewers": [{"login": u} for u in pr["reviewers"]]}

    def list_pulls(self, h, m, q, body, rec):
        head = q.get("head", [None])[0]
        if head is not None and ":" not in head:
            raise Violation("head must be user:ref, got %r" % head)
        out = [self.pr_view(p) for p in self.pulls.values()
               if p["state"] == q.get("state", ["open"])[0]
               and (head is None or head.split(":", 1)[1] == p["head"])]
        return 200, self.paginate(h, out, q)

    def create_pull(self, h, m, q, body, rec):
        rec["violations"] += check_fields(body, {
            "title": (str, True, None), "head": (str, True, None),
            "base": (str, True, None), "body": (str, False, None),
            "maintainer_can_modify": (bool, False, None), "draft": (bool, False, None)})
        if len(body.get("body", "")) > BODY_MAX:
            return 422, {"message": "Validation Failed",
                         "errors": [{"field": "body", "code": "custom",
                                     "message": "body is too long (maximum is 65536 characters)"}]}
        if any(p["head"] == body["head"] and p["state"] == "open" for p in self.pulls.values()):
            return 422, {"message": "Validation Failed", "errors": [
                {"resource": "PullRequest", "code": "custom",
                 "message": "A pull request already exists for x:%s." % body["head"]}]}
        self.number += 1
        pr = {"number": self.number, "title": body["title"], "body": body.get("body", ""),
              "head": body["head"], "base": body["base"], "state": "open",
              "labels": [], "reviewers": [], "repo": m["o"] + "/" + m["r"]}
        self.pulls[self.number] = pr
        return 201, self.pr_view(pr)

    def pull(self, n):
        if int(n) not in self.pulls:
            raise Violation("no pull request %s" % n)
        return self.pulls[int(n)]

    def get_pull(self, h, m, q, body, rec):
        if int(m["n"]) not in self.pulls:
            return 404, {"message": "Not Found"}
        return 200, self.pr_view(self.pulls[int(m["n"])])

    def edit_pull(self, h, m, q, body, rec):
        rec["violations"] += check_fields(body, {
            "title": (str, False, None), "body": (str, False, None),
            "state": (str, False, {"open", "closed"}), "base": (str, False, None),
            "maintainer_can_modify": (bool, False, None)})
        if not body:
            rec["violations"].append("PATCH with nothing to change")
        if len(body.get("body", "")) > BODY_MAX:
            return 422, {"message": "Validation Failed", "errors": [
                {"field": "body", "code": "custom", "message": "body is too long"}]}
        pr = self.pull(m["n"])
        pr.update({k: v for k, v in body.items() if k in ("title", "body", "state", "base")})
        return 200, self.pr_view(pr)

    def add_labels(self, h, m, q, body, rec):
        rec["violations"] += check_fields(body, {"labels": (list, True, str)})
        pr = self.pull(m["n"])
        for n in body.get("labels", []):
            if n not in pr["labels"]:
                pr["labels"].append(n)
        return 200, [{"name": n} for n in pr["labels"]]

    def reviewers(self, h, m, q, body, rec):
        rec["violations"] += check_fields(body, {"reviewers": (list, False, str),
                                                 "team_reviewers": (list, False, str)})
        pr = self.pull(m["n"])
        for u in body.get("reviewers", []):
            if u not in self.users:
                return 422, {"message": "Reviews may only be requested from collaborators. "
                             "One or more of the users or teams you specified is not a "
                             "collaborator of the %s repository." % pr["repo"]}
            pr["reviewers"].append(u)
        return 201, self.pr_view(pr)

    # -- comments -------------------------------------------------------
    def comment_view(self, c):
        return {"id": c["id"], "body": c["body"], "user": {"login": "kernelbot"},
                "html_url": "https://github.test/c/%d" % c["id"]}

    # -- statuses and checks --------------------------------------------
    def status(self, h, m, q, body, rec):
        rec["violations"] += check_fields(body, {
            "state": (str, True, STATES), "target_url": (str, False, None),
            "description": (str, False, None), "context": (str, False, None)})
        if len(body.get("description", "")) > 140:
            rec["violations"].append("description over 140 characters")
        self.statuses.append(dict(body, sha=m["sha"]))
        return 201, dict(body, id=self.new_id())

    def check_fields_run(self, body, rec, create):
        spec = {"status": (str, False, {"queued", "in_progress", "completed"}),
                "conclusion": (str, False, CONCLUSIONS), "details_url": (str, False, None),
                "output": (dict, False, None), "name": (str, create, None),
                "head_sha": (str, create, None)}
        rec["violations"] += check_fields(body, spec)
        if "output" in body:
            rec["violations"] += check_fields(body["output"], {
                "title": (str, True, None), "summary": (str, True, None),
                "text": (str, False, None)}, "output")
        if body.get("status") == "completed" and "conclusion" not in body:
            rec["violations"].append("completed without conclusion")
        if rec["auth"] != "installation":
            rec["violations"].append("check runs need a GitHub App installation token")

    def list_checks(self, h, m, q, body, rec):
        name = q.get("check_name", [None])[0]
        runs = [c for c in self.checks.values() if c["head_sha"] == m["sha"]
                and (name is None or c["name"] == name)]
        return 200, {"total_count": len(runs), "check_runs": runs}

    def create_check(self, h, m, q, body, rec):
        self.check_fields_run(body, rec, True)
        c = dict(body, id=self.new_id())
        self.checks[c["id"]] = c
        return 201, c

    def edit_check(self, h, m, q, body, rec):
        self.check_fields_run(body, rec, False)
        c = self.checks.get(int(m["id"]))
        if not c:
            return 404, {"message": "Not Found"}
        c.update(body)
        return 200, c

    # -- permission, reactions, App -------------------------------------
    def installation(self, h, m, q, body, rec):
        if rec["auth"] != "jwt":
            rec["violations"].append("installation lookup needs the App JWT")
        return 200, {"id": INSTALLATION, "app_id": int(APP_ID)}

    def access_token(self, h, m, q, body, rec):
        if rec["auth"] != "jwt":
            rec["violations"].append("access_tokens needs the App JWT")
        if int(m["id"]) != INSTALLATION:
            return 404, {"message": "Not Found"}
        exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
        return 201, {"token": INSTALL_TOKEN, "expires_at": exp}


if __name__ == "__main__":
    main(GitHub)
