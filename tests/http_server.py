#!/usr/bin/env python3
# http_server.py: loopback HTTP server for tests/test_fetch.c (python3 stdlib only).
# Serves the files under DOCROOT at /files/<path> with Range support and a sha256 ETag, and
# imitates the Hugging Face Hub: /<owner>/<repo>/resolve/<rev>/<path> answers 302 to
# /files/<owner>/<repo>/<path>?cdn=1 (whose ETag is not a sha256, like a CDN's) with X-Linked-Etag
# (sha256) and X-Linked-Size for *.safetensors,
# and serves other files directly with a 40-hex (git-blob style) ETag, as the Hub does.
# GET /api/models/<owner>/<repo>/revision/<rev> answers the Hub API's JSON: "sha" (the content
# of <owner>/<repo>/.commit, else a sha1 over the repository's file names and bytes) and
# "siblings" (every file but dot files). A repository holding a file .gated answers 401 to
# every request whose Authorization is not "Bearer <the content of .gated>", as gated repos do.
# Faults are switched on by GET /_ctl?cut=N&fail=K&corrupt=1&ignore_range=1&status=404&reset=1
# (each applies to the next file requests only; slow_ms=M sleeps M ms per 64 KiB until reset), and GET /_stats returns counters as
# "requests=R bytes=B ranged=G auth=<last Authorization header>". Control requests are not
# counted. Binds 127.0.0.1 on a free port and prints "PORT <n>" on stdout. Exits when its
# stdin reaches EOF (the test closes it or dies) or after 300 s, whichever comes first.
import hashlib
import http.server
import json
import os
import sys
import threading
import time
import urllib.parse

DOCROOT = os.path.abspath(sys.argv[1])
LOCK = threading.Lock()
STATE = {}


def reset():
    STATE.update(requests=0, bytes=0, ranged=0, auth="-", cut=-1, fail=0, corrupt=0,
                 ignore_range=0, status=0, slow_ms=0)


reset()


def sha256_file(p):
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # keep test output quiet
        pass

    def send_text(self, code, text, extra=None):
        body = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        self.close_connection = True
        u = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(u.path)
        if path == "/_ctl":
            q = urllib.parse.parse_qs(u.query)
            with LOCK:
                if "reset" in q:
                    reset()
                for k in ("cut", "fail", "corrupt", "ignore_range", "status", "slow_ms"):
                    if k in q:
                        STATE[k] = int(q[k][0])
            return self.send_text(200, "ok\n")
        if path == "/_stats":
            with LOCK:
                s = "requests=%d bytes=%d ranged=%d auth=%s\n" % (
                    STATE["requests"], STATE["bytes"], STATE["ranged"], STATE["auth"])
            return self.send_text(200, s)
        with LOCK:
            STATE["requests"] += 1
            STATE["auth"] = (self.headers.get("Authorization") or "-").replace(" ", "_")
            if STATE["status"]:
                code, STATE["status"] = STATE["status"], 0
                return self.send_text(code, "forced status\n")
            if STATE["fail"] > 0:
                STATE["fail"] -= 1
                return self.send_text(500, "injected failure\n")
        parts = path.strip("/").split("/")
        if len(parts) >= 5 and (parts[2] == "resolve" or parts[0] == "api"):
            repo = parts[2:4] if parts[0] == "api" else parts[:2]
            gate = os.path.join(DOCROOT, *repo, ".gated")
            if os.path.isfile(gate):
                want = "Bearer " + open(gate).read().strip()
                if self.headers.get("Authorization") != want:
                    return self.send_text(401, "Access to model %s is restricted.\n" % "/".join(repo))
        if len(parts) == 6 and parts[0] == "api" and parts[1] == "models" and parts[4] == "revision":
            return self.api_revision(os.path.join(DOCROOT, parts[2], parts[3]))
        if len(parts) >= 5 and parts[2] == "resolve":  # Hub-style URL
            rel = "/".join(parts[:2] + parts[4:])
            fp = os.path.join(DOCROOT, rel)
            if not os.path.isfile(fp):
                return self.send_text(404, "Entry not found\n")
            if rel.endswith(".safetensors"):
                loc = "/files/" + urllib.parse.quote(rel) + "?cdn=1"  # CDN: ETag is no sha256
                return self.send_text(302, "redirect\n", {
                    "Location": loc, "X-Linked-Etag": '"%s"' % sha256_file(fp),
                    "X-Linked-Size": str(os.path.getsize(fp))})
            return self.serve(fp, '"%s"' % hashlib.sha1(open(fp, "rb").read()).hexdigest())
        if parts[0] != "files" or ".." in parts:
            return self.send_text(404, "not found\n")
        fp = os.path.join(DOCROOT, *parts[1:])
        if not os.path.isfile(fp):
            return self.send_text(404, "not found\n")
        if "cdn=1" in u.query:
            return self.serve(fp, '"cdn-%d"' % os.path.getsize(fp))
        return self.serve(fp, '"%s"' % sha256_file(fp))

    def api_revision(self, rd):
        if not os.path.isdir(rd):
            return self.send_text(404, '{"error":"Repository not found"}\n')
        files = []
        for dp, dn, fn in os.walk(rd):
            dn[:] = sorted(d for d in dn if not d.startswith("."))
            for f in sorted(fn):
                if not f.startswith("."):
                    files.append(os.path.relpath(os.path.join(dp, f), rd))
        cf = os.path.join(rd, ".commit")
        if os.path.isfile(cf):
            sha = open(cf).read().strip()
        else:
            h = hashlib.sha1()
            for f in files:
                h.update(f.encode() + b"\0" + open(os.path.join(rd, f), "rb").read())
            sha = h.hexdigest()
        body = json.dumps({"id": os.path.relpath(rd, DOCROOT), "sha": sha,
                           "siblings": [{"rfilename": f} for f in files]})
        return self.send_text(200, body)

    def serve(self, fp, etag):
        data = open(fp, "rb").read()
        size = len(data)
        start = 0
        rng = self.headers.get("Range")
        with LOCK:
            ignore = STATE["ignore_range"]
            STATE["ignore_range"] = 0
        if rng and not ignore:
            if not rng.startswith("bytes=") or not rng[6:].split("-")[0].isdigit():
                return self.send_text(400, "bad range\n")
            start = int(rng[6:].split("-")[0])
            if start >= size:
                return self.send_text(416, "range not satisfiable\n",
                                      {"Content-Range": "bytes */%d" % size})
        body = data[start:]
        with LOCK:
            if rng and not ignore:
                STATE["ranged"] += 1
            if STATE["corrupt"]:
                STATE["corrupt"] = 0
                if body:
                    mid = len(body) // 2
                    body = body[:mid] + bytes([body[mid] ^ 0xFF]) + body[mid + 1:]
            cut, STATE["cut"] = STATE["cut"], -1
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", etag)
        self.send_header("Connection", "close")
        if start:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, size - 1, size))
        self.end_headers()
        if self.command == "HEAD":
            return
        if 0 <= cut < len(body):
            body = body[:cut]
        with LOCK:
            slow = STATE["slow_ms"]
        try:
            for i in range(0, len(body), 65536):
                if slow:  # throttle (demonstrates progress output); stays on until reset
                    time.sleep(slow / 1000.0)
                self.wfile.write(body[i:i + 65536])
                with LOCK:
                    STATE["bytes"] += len(body[i:i + 65536])
            self.wfile.flush()
        except OSError:
            pass


def main():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print("PORT %d" % srv.server_address[1], flush=True)

    def watch_stdin():
        try:
            sys.stdin.read()
        finally:
            os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    threading.Timer(300, lambda: os._exit(0)).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
