"""
Where moto's CPU goes, for whoever tunes it (off unless FLOW_MOTO_PROFILE or FLOW_MOTO_OPS names
a file; the launcher then serves through `profiled(handler, path, calls)` and nothing else
changes):

- FLOW_MOTO_PROFILE=PATH (pstats): every connection thread runs under its own cProfile, merged at
  exit: `python3 -m pstats PATH`. Its clock is the wall clock (a thread's CPU clock is a system
  call, which at every Python call made moto many times slower than what it measured); a
  thread waits for the lock in `serialized` and for its next request in the socket's reads,
  so leave those out. Profiling Python calls costs about a microsecond each: code with many
  small calls looks heavier than it is. Compare with the figures below.
- PATH.ops.json (also FLOW_MOTO_OPS=PATH alone, without cProfile: PATH is then the JSON file): per
  operation (the signing scope's service and the X-Amz-Target's operation,
  or the HTTP method: `dynamodb GetItem`, `s3 PUT`), the requests and the CPU-s of their threads
  from the request line's parse to the answer's last byte, and the CPU-s inside the lock.

Both are written when the launcher exits by SIGTERM or SIGINT (not when its parent ends: that
exit is immediate).
"""
import atexit
import cProfile
import json
import pstats
import re
import threading
import time

_SCOPE = re.compile(r"Credential=[^/]*/[^/]*/[^/]*/([^/]*)/")


def operation(headers):
    """`service operation` of a request from its headers (a mapping with .get)."""
    scope = _SCOPE.search(headers.get("Authorization") or "")
    service = scope.group(1) if scope else "-"
    target = headers.get("X-Amz-Target") or ""
    return f"{service} {target.rpartition('.')[2]}" if target else service


def profiled(handler, path, calls=True):
    """`handler` (a werkzeug request handler class) whose requests are counted into `path`, and
    with `calls` profiled there too."""
    guard = threading.Lock()
    profiles = []
    ops = {}  # operation -> [requests, thread CPU-s, CPU-s inside the app call]

    def count(name, cpu, app_cpu):
        with guard:
            row = ops.setdefault(name, [0, 0.0, 0.0])
            row[0] += 1
            row[1] += cpu
            row[2] += app_cpu

    class Profiled(handler):
        def handle(self):
            if not calls:
                return super().handle()
            profile = cProfile.Profile()
            with guard:
                profiles.append(profile)
            profile.enable()
            try:
                super().handle()
            finally:
                profile.disable()

        def handle_one_request(self):
            began = time.thread_time()
            self._flow_app_cpu = 0.0
            super().handle_one_request()
            headers = getattr(self, "headers", None)
            if headers is not None and getattr(self, "raw_requestline", b""):
                count(operation(headers), time.thread_time() - began, self._flow_app_cpu)
                self.headers = None

        def run_wsgi(self):
            began = time.thread_time()
            try:
                return super().run_wsgi()
            finally:
                self._flow_app_cpu += time.thread_time() - began

    def dump():
        with guard:
            taken = list(profiles)
            rows = {name: list(row) for name, row in ops.items()}
        stats = None
        for profile in taken:
            try:
                profile.create_stats()
            except Exception:
                continue
            if not profile.stats:
                continue
            if stats is None:
                stats = pstats.Stats(profile)
            else:
                stats.add(profile)
        if stats is not None:
            stats.dump_stats(path)
        ordered = sorted(rows.items(), key=lambda kv: -kv[1][1])
        with open(path + ".ops.json" if calls else path, "w", encoding="utf-8") as f:
            json.dump(
                {name: {"requests": n, "cpu_s": round(cpu, 4), "run_wsgi_cpu_s": round(app, 4)}
                 for name, (n, cpu, app) in ordered},
                f,
                indent=1,
            )

    atexit.register(dump)
    return Profiled
