"""A fake LLM server: OpenAI-compatible chat completions and the Anthropic
messages API on 127.0.0.1, answering from a script and recording every
request.

    fakellm.py --port-file F --log LOG.jsonl --script SCRIPT.json

Routes: POST .../chat/completions (openai), POST .../v1/messages
(anthropic) and POST .../embeddings (provider "embeddings", OpenAI's
format: {"model", "input"}); an embeddings request no rule answers gets
a deterministic vector of --embed-dim values (words of the input hashed
into buckets, normalized), so texts sharing words are near. Each request is checked against the API's shape (model,
messages, max_tokens, temperature; Anthropic's anthropic-version header
and top-level system) and appended to --log as one JSON line:

    {"t": 1.23, "path": "/v1/chat/completions", "provider": "openai",
     "auth": "Bearer ..."|null, "x_api_key": ...|null, "body": {...},
     "prompt": "system + user text", "status": 200, "rule": 0,
     "violations": []}

The script is a list of rules tried in order; the first whose "match"
(a regex searched in the prompt, default any) and "provider" (default
any) fit and whose "times" (default unlimited) is not used up answers:

    {"match": "regex", "provider": "openai", "times": 1,
     "status": 200, "headers": {"Retry-After": "1"}, "delay_s": 0,
     "reply": "text" | "reply_file": "name (next to the script)",
     "usage": [tokens_in, tokens_out], "raw": "a body sent as is"}

A request no rule answers gets 500 and a violation.
"""
import argparse
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

START = time.time()
LOCK = threading.Lock()


def check(provider, body, headers):
    v = []
    if not isinstance(body, dict):
        return ["body is not a JSON object"]
    if provider == "embeddings":
        if set(body) != {"model", "input"}:
            v.append("embeddings fields are %s, want model and input" % sorted(body))
        if not isinstance(body.get("input"), str) or not body.get("input"):
            v.append("input must be a non-empty string")
        return v
    allowed = {"model", "messages", "max_tokens", "temperature"}
    if provider == "anthropic":
        allowed.add("system")
        if headers.get("anthropic-version") != "2023-06-01":
            v.append("missing or wrong anthropic-version header")
    for k in body:
        if k not in allowed:
            v.append("unknown field %r" % k)
    if not isinstance(body.get("model"), str) or not body.get("model"):
        v.append("model must be a non-empty string")
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        v.append("max_tokens must be a positive integer")
    if not isinstance(body.get("temperature"), (int, float)):
        v.append("temperature must be a number")
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        v.append("messages must be a non-empty list")
        return v
    roles = ("system", "user", "assistant") if provider == "openai" else ("user", "assistant")
    for m in msgs:
        if not isinstance(m, dict) or m.get("role") not in roles or \
                not isinstance(m.get("content"), str):
            v.append("bad message %r" % (m,))
    return v


def prompt_of(provider, body):
    if provider == "embeddings":
        return body.get("input") if isinstance(body.get("input"), str) else ""
    parts = []
    if provider == "anthropic" and isinstance(body.get("system"), str):
        parts.append(body["system"])
    for m in body.get("messages") or []:
        if isinstance(m, dict) and isinstance(m.get("content"), str):
            parts.append(m["content"])
    return "\n".join(parts)


def embed(text, dim):
    """Words hashed into dim buckets (a stable hash), L2-normalized."""
    v = [0.0] * dim
    for w in re.findall(r"[A-Za-z_]+", text):
        h = 0
        for ch in w.lower().encode():
            h = (h * 131 + ch) % 1000003
        v[h % dim] += 1.0
    n = sum(x * x for x in v) ** 0.5 or 1.0
    return [x / n for x in v]


def make_handler(args, rules, used):
    script_dir = os.path.dirname(os.path.abspath(args.script)) if args.script else "."

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n)
            if self.path.endswith("/chat/completions"):
                provider = "openai"
            elif self.path.endswith("/v1/messages"):
                provider = "anthropic"
            elif self.path.endswith("/embeddings"):
                provider = "embeddings"
            else:
                provider = None
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            hdrs = {k.lower(): v for k, v in self.headers.items()}
            violations = [] if provider else ["unknown path %s" % self.path]
            if provider:
                violations += check(provider, body, hdrs)
            prompt = prompt_of(provider, body) if isinstance(body, dict) else ""
            rule_i, rule = None, None
            with LOCK:
                for i, r in enumerate(rules):
                    if r.get("provider") and r["provider"] != provider:
                        continue
                    if r.get("match") and not re.search(r["match"], prompt, re.S):
                        continue
                    if "times" in r and used[i] >= r["times"]:
                        continue
                    used[i] += 1
                    rule_i, rule = i, r
                    break
            if rule is None and provider == "embeddings":
                rule = {"embedding": embed(body.get("input", "") if isinstance(body, dict) else "",
                                           args.embed_dim)}
            if rule is None:
                violations.append("no scripted rule answers this request")
                rule = {"status": 500, "raw": '{"error": "unscripted"}'}
            status = rule.get("status", 200)
            entry = {"t": round(time.time() - START, 3), "path": self.path,
                     "provider": provider, "auth": self.headers.get("Authorization"),
                     "x_api_key": self.headers.get("x-api-key"), "body": body,
                     "raw_body": raw.decode("utf-8", "replace"),
                     "prompt": prompt, "status": status, "rule": rule_i,
                     "violations": violations}
            with LOCK:
                with open(args.log, "a") as f:
                    f.write(json.dumps(entry) + "\n")
            if rule.get("delay_s"):
                time.sleep(rule["delay_s"])
            if "raw" in rule:
                out = rule["raw"].encode()
            elif provider == "embeddings" and status == 200:
                vec = rule.get("embedding") or embed(prompt, args.embed_dim)
                out = json.dumps({"object": "list", "model": (body or {}).get("model", ""),
                                  "data": [{"object": "embedding", "index": 0, "embedding": vec}],
                                  "usage": {"prompt_tokens": len(prompt) // 4,
                                            "total_tokens": len(prompt) // 4}}).encode()
            elif status == 200:
                text = rule.get("reply", "")
                if "reply_file" in rule:
                    with open(os.path.join(script_dir, rule["reply_file"])) as f:
                        text = f.read()
                tin, tout = rule.get("usage", [len(prompt) // 4, len(text) // 4])
                model = (body or {}).get("model", "")
                if provider == "anthropic":
                    obj = {"id": "msg_fake", "type": "message", "role": "assistant",
                           "model": model, "content": [{"type": "text", "text": text}],
                           "stop_reason": "end_turn",
                           "usage": {"input_tokens": tin, "output_tokens": tout}}
                else:
                    obj = {"id": "chatcmpl-fake", "object": "chat.completion",
                           "model": model, "choices": [{"index": 0, "finish_reason": "stop",
                           "message": {"role": "assistant", "content": text}}],
                           "usage": {"prompt_tokens": tin, "completion_tokens": tout,
                                     "total_tokens": tin + tout}}
                out = json.dumps(obj).encode()
            else:
                out = json.dumps({"error": {"message": "scripted %d" % status}}).encode()
            try:
                self.send_response(status)
                for k, val in rule.get("headers", {}).items():
                    self.send_header(k, str(val))
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a scripted timeout)

    return H


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--script")
    ap.add_argument("--embed-dim", type=int, default=16)
    args = ap.parse_args()
    rules = []
    if args.script:
        with open(args.script) as f:
            rules = json.load(f)
    used = [0] * len(rules)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(args, rules, used))
    srv.daemon_threads = True
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, args.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
