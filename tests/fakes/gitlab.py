#!/usr/bin/python3
"""A fake GitLab REST API v4 for kernelbot's tests.

Serves what kernelbot's gitlab driver uses, with the documented request
shapes (https://docs.gitlab.com/ee/api/): merge requests, their notes,
commit statuses, users, project members and award emoji. The project is
addressed by its URL-encoded path (acme%2Fmodels), and the raw path is
checked for that encoding. Authentication: PRIVATE-TOKEN. See fakeforge.py
for the log, the script and the checks common to all fakes.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fakeforge import Fake, Violation, check_fields, main  # noqa: E402

API = "/api/v4"
P = API + r"/projects/(?P<p>[^/]+)"
STATES = {"pending", "running", "success", "failed", "canceled"}
LEVELS = {"admin": 50, "maintainer": 40, "write": 30, "read": 20, "guest": 10}
EMOJI = {"thumbsup", "thumbsdown", "eyes", "tada", "rocket"}


class GitLab(Fake):
    def __init__(self, args):
        super().__init__(args)
        self.mrs = {}
        self.notes = {}
        self.statuses = {}
        self.emoji = set()
        self.users = json.loads(args.users)
        self.uids = {u: i + 1 for i, u in enumerate(sorted(self.users))}
        self.iid = 0
        self.routes = [
            ("GET", P + "/merge_requests", self.list_mrs),
            ("POST", P + "/merge_requests", self.create_mr),
            ("GET", P + r"/merge_requests/(?P<iid>\d+)", self.get_mr),
            ("PUT", P + r"/merge_requests/(?P<iid>\d+)", self.edit_mr),
            ("GET", P + r"/merge_requests/(?P<iid>\d+)/notes", self.list_notes),
            ("POST", P + r"/merge_requests/(?P<iid>\d+)/notes", self.create_note),
            ("PUT", P + r"/merge_requests/(?P<iid>\d+)/notes/(?P<id>\d+)", self.edit_note),
            ("POST", P + r"/merge_requests/(?P<iid>\d+)/notes/(?P<id>\d+)/award_emoji",
             self.award),
            ("POST", P + r"/statuses/(?P<sha>[0-9a-f]{40})", self.status),
            ("GET", API + "/users", self.find_user),
            ("GET", P + r"/members/all/(?P<uid>\d+)", self.member),
        ]

    def check_auth(self, h, path, rec):
        if "/projects/" in path and "/projects/acme%2Fmodels" not in path:
            rec["violations"].append("project path not URL-encoded: %s" % path)
        tok = h.headers.get("PRIVATE-TOKEN")
        if tok is None:
            return "none"
        return "token" if tok == self.args.token else "bad"

    def project(self, m):
        if m["p"] != "acme%2Fmodels":
            raise Violation("unknown project %s" % m["p"])

    def mr_view(self, mr):
        return {"iid": mr["iid"], "id": mr["iid"] + 500, "title": mr["title"],
                "source_project_id": 7, "target_project_id": 7, "sha": self.head_sha(mr["source"]),
                "description": mr["description"], "state": mr["state"],
                "source_branch": mr["source"], "target_branch": mr["target"],
                "labels": mr["labels"], "reviewers": [{"id": i} for i in mr["reviewers"]],
                "web_url": "https://gitlab.test/acme/models/-/merge_requests/%d" % mr["iid"]}

    def list_mrs(self, h, m, q, body, rec):
        self.project(m)
        state = q.get("state", ["all"])[0]
        if state not in ("opened", "closed", "merged", "locked", "all"):
            raise Violation("state=%s" % state)
        src = q.get("source_branch", [None])[0]
        out = [self.mr_view(x) for x in self.mrs.values()
               if (state == "all" or x["state"] == state) and (src is None or x["source"] == src)]
        return 200, self.paginate(h, out, q)

    def create_mr(self, h, m, q, body, rec):
        self.project(m)
        rec["violations"] += check_fields(body, {
            "source_branch": (str, True, None), "target_branch": (str, True, None),
            "title": (str, True, None), "description": (str, False, None),
            "labels": (str, False, None), "reviewer_ids": (list, False, int),
            "assignee_ids": (list, False, int), "remove_source_branch": (bool, False, None)})
        if len(body.get("description", "")) > 1048576:
            return 400, {"message": {"description": ["is too long (maximum is 1048576 characters)"]}}
        if any(x["source"] == body.get("source_branch") and x["state"] == "opened"
               for x in self.mrs.values()):
            return 409, {"message": ["Another open merge request already exists for this source branch"]}
        self.iid += 1
        mr = {"iid": self.iid, "title": body["title"], "description": body.get("description", ""),
              "source": body["source_branch"], "target": body["target_branch"],
              "state": "opened", "reviewers": body.get("reviewer_ids", []),
              "labels": [x for x in body.get("labels", "").split(",") if x]}
        self.mrs[self.iid] = mr
        return 201, self.mr_view(mr)

    def mr(self, iid):
        if int(iid) not in self.mrs:
            raise Violation("no merge request %s" % iid)
        return self.mrs[int(iid)]

    def get_mr(self, h, m, q, body, rec):
        self.project(m)
        if int(m["iid"]) not in self.mrs:
            return 404, {"message": "404 Not found"}
        return 200, self.mr_view(self.mrs[int(m["iid"])])

    def edit_mr(self, h, m, q, body, rec):
        self.project(m)
        rec["violations"] += check_fields(body, {
            "title": (str, False, None), "description": (str, False, None),
            "add_labels": (str, False, None), "labels": (str, False, None),
            "state_event": (str, False, {"close", "reopen"})})
        if not body:
            rec["violations"].append("PUT with nothing to change")
        mr = self.mr(m["iid"])
        for k in ("title", "description"):
            if k in body:
                mr[k] = body[k]
        for lab in body.get("add_labels", "").split(","):
            if lab and lab not in mr["labels"]:
                mr["labels"].append(lab)
        return 200, self.mr_view(mr)

    def note_view(self, n):
        return {"id": n["id"], "body": n["body"], "system": False,
                "author": {"username": "kernelbot"}, "noteable_iid": n["iid"]}

    def list_notes(self, h, m, q, body, rec):
        self.project(m)
        self.mr(m["iid"])
        for k, allowed in (("sort", ("asc", "desc")), ("order_by", ("created_at", "updated_at"))):
            if k in q and q[k][0] not in allowed:
                raise Violation("%s=%s" % (k, q[k][0]))
        out = [self.note_view(n) for n in self.notes.values() if n["iid"] == int(m["iid"])]
        return 200, self.paginate(h, out, q)

    def create_note(self, h, m, q, body, rec):
        self.project(m)
        rec["violations"] += check_fields(body, {"body": (str, True, None),
                                                 "internal": (bool, False, None)})
        if len(body.get("body", "")) > 1000000:
            return 400, {"message": {"note": ["is too long (maximum is 1000000 characters)"]}}
        self.mr(m["iid"])
        n = {"id": self.new_id(), "iid": int(m["iid"]), "body": body["body"]}
        self.notes[n["id"]] = n
        return 201, self.note_view(n)

    def edit_note(self, h, m, q, body, rec):
        self.project(m)
        rec["violations"] += check_fields(body, {"body": (str, True, None)})
        n = self.notes.get(int(m["id"]))
        if not n or n["iid"] != int(m["iid"]):
            return 404, {"message": "404 Not found"}
        n["body"] = body["body"]
        return 200, self.note_view(n)

    def award(self, h, m, q, body, rec):
        self.project(m)
        rec["violations"] += check_fields(body, {"name": (str, True, EMOJI)})
        if int(m["id"]) not in self.notes:
            return 404, {"message": "404 Not found"}
        key = (int(m["id"]), body.get("name"))
        if key in self.emoji:
            return 404, {"message": "404 Award Emoji Name has already been taken Not Found"}
        self.emoji.add(key)
        return 201, {"id": self.new_id(), "name": body.get("name")}

    def status(self, h, m, q, body, rec):
        self.project(m)
        rec["violations"] += check_fields(body, {
            "state": (str, True, STATES), "name": (str, False, None),
            "context": (str, False, None), "target_url": (str, False, None),
            "description": (str, False, None), "ref": (str, False, None),
            "coverage": (float, False, None), "pipeline_id": (int, False, None)})
        key = (m["sha"], body.get("name", "default"))
        if self.statuses.get(key) == body.get("state"):
            return 400, {"message": "Cannot transition status via :run from :running"}
        self.statuses[key] = body.get("state")
        return 201, dict(body, id=self.new_id(), sha=m["sha"])

    def find_user(self, h, m, q, body, rec):
        u = q.get("username", [None])[0]
        if u is None:
            raise Violation("users lookup without username")
        if u not in self.users:
            return 200, []
        return 200, [{"id": self.uids[u], "username": u}]

    def member(self, h, m, q, body, rec):
        self.project(m)
        for u, i in self.uids.items():
            if i == int(m["uid"]) and self.users[u] != "none":
                return 200, {"id": i, "username": u, "access_level": LEVELS[self.users[u]]}
        return 404, {"message": "404 Not found"}


if __name__ == "__main__":
    main(GitLab)
