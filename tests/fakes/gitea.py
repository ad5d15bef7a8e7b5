#!/usr/bin/python3
"""A fake Gitea API v1 for kernelbot's tests.

Serves what kernelbot's gitea driver uses, with the request shapes of
Gitea's swagger (https://gitea.com/api/swagger): pulls (paged with page and
limit, Link headers), labels by id, requested reviewers, issue comments,
commit statuses, collaborator permission and comment reactions.
Authentication: "Authorization: token TOKEN". See fakeforge.py for the log,
the script and the checks common to all fakes.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fakeforge import GitHubShaped, Violation, check_fields, main  # noqa: E402

R = r"/api/v1/repos/(?P<o>[^/]+)/(?P<r>[^/]+)"
STATES = {"pending", "success", "error", "failure", "warning"}
LABELS = [{"id": 11, "name": "performance", "color": "00ff00"},
          {"id": 12, "name": "bot", "color": "0000ff"}]


class Gitea(GitHubShaped):
    size_param = "limit"
    not_found = "not found"

    def __init__(self, args):
        super().__init__(args)
        self.pulls = {}
        self.statuses = []
        self.number = 0
        self.routes = [
            ("GET", R + "/pulls", self.list_pulls),
            ("POST", R + "/pulls", self.create_pull),
            ("GET", R + r"/pulls/(?P<n>\d+)", self.get_pull),
            ("PATCH", R + r"/pulls/(?P<n>\d+)", self.edit_pull),
            ("GET", R + "/labels", self.labels),
            ("POST", R + r"/issues/(?P<n>\d+)/labels", self.add_labels),
            ("POST", R + r"/pulls/(?P<n>\d+)/requested_reviewers", self.reviewers),
            ("GET", R + r"/issues/(?P<n>\d+)/comments", self.list_comments),
            ("POST", R + r"/issues/(?P<n>\d+)/comments", self.create_comment),
            ("PATCH", R + r"/issues/comments/(?P<id>\d+)", self.edit_comment),
            ("POST", R + r"/statuses/(?P<sha>[0-9a-f]{40})", self.status),
            ("GET", R + r"/collaborators/(?P<u>[^/]+)/permission", self.permission),
            ("POST", R + r"/issues/comments/(?P<id>\d+)/reactions", self.react),
        ]

    def check_auth(self, h, path, rec):
        auth = h.headers.get("Authorization") or ""
        if not auth:
            return "none"
        return "token" if auth == "token " + self.args.token else "bad"

    def pr_view(self, pr):
        return {"number": pr["number"], "title": pr["title"], "body": pr["body"],
                "state": pr["state"], "html_url": "https://gitea.test/acme/models/pulls/%d" % pr["number"],
                "head": {"ref": pr["head"], "label": pr["head"],
                         "repo": {"full_name": "acme/models"}},
                "base": {"ref": pr["base"], "repo": {"full_name": "acme/models"}},
                "labels": [dict(l) for l in LABELS if l["id"] in pr["labels"]]}

    def list_pulls(self, h, m, q, body, rec):
        state = q.get("state", ["open"])[0]
        if state not in ("open", "closed", "all"):
            raise Violation("state=%s" % state)
        out = [self.pr_view(p) for p in self.pulls.values() if state in ("all", p["state"])]
        return 200, self.paginate(h, out, q, size_param="limit")

    def create_pull(self, h, m, q, body, rec):
        rec["violations"] += check_fields(body, {
            "head": (str, True, None), "base": (str, True, None),
            "title": (str, True, None), "body": (str, False, None),
            "labels": (list, False, int), "assignees": (list, False, str),
            "milestone": (int, False, None)})
        if any(p["head"] == body.get("head") and p["state"] == "open" for p in self.pulls.values()):
            return 409, {"message": "pull request already exists for these targets"}
        self.number += 1
        pr = {"number": self.number, "title": body["title"], "body": body.get("body", ""),
              "head": body["head"], "base": body["base"], "state": "open", "labels": []}
        self.pulls[self.number] = pr
        return 201, self.pr_view(pr)

    def pull(self, n):
        if int(n) not in self.pulls:
            raise Violation("no pull %s" % n)
        return self.pulls[int(n)]

    def get_pull(self, h, m, q, body, rec):
        if int(m["n"]) not in self.pulls:
            return 404, {"message": "pull request does not exist"}
        return 200, self.pr_view(self.pulls[int(m["n"])])

    def edit_pull(self, h, m, q, body, rec):
        rec["violations"] += check_fields(body, {
            "title": (str, False, None), "body": (str, False, None),
            "state": (str, False, {"open", "closed"}), "base": (str, False, None)})
        if not body:
            rec["violations"].append("PATCH with nothing to change")
        pr = self.pull(m["n"])
        pr.update({k: v for k, v in body.items() if k in ("title", "body", "state")})
        return 201, self.pr_view(pr)

    def labels(self, h, m, q, body, rec):
        return 200, self.paginate(h, LABELS, q, size_param="limit")

    def add_labels(self, h, m, q, body, rec):
        rec["violations"] += check_fields(body, {"labels": (list, True, int)})
        pr = self.pull(m["n"])
        for i in body.get("labels", []):
            if i not in [l["id"] for l in LABELS]:
                raise Violation("unknown label id %r" % i)
            if i not in pr["labels"]:
                pr["labels"].append(i)
        return 200, [l for l in LABELS if l["id"] in pr["labels"]]

    def reviewers(self, h, m, q, body, rec):
        rec["violations"] += check_fields(body, {"reviewers": (list, False, str),
                                                 "team_reviewers": (list, False, str)})
        self.pull(m["n"])
        for u in body.get("reviewers", []):
            if u not in self.users:
                return 422, {"message": "user does not exist [name: %s]" % u}
        return 201, [{"id": 1, "state": "REQUEST_REVIEW"}]

    def comment_view(self, c):
        return {"id": c["id"], "body": c["body"], "user": {"login": "kernelbot"},
                "html_url": "https://gitea.test/acme/models/pulls/%d#issuecomment-%d" % (c["issue"], c["id"])}

    def status(self, h, m, q, body, rec):
        rec["violations"] += check_fields(body, {
            "state": (str, True, STATES), "target_url": (str, False, None),
            "description": (str, False, None), "context": (str, False, None)})
        self.statuses.append(dict(body, sha=m["sha"]))
        return 201, dict(body, id=self.new_id())



if __name__ == "__main__":
    main(Gitea)
