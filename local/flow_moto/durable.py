"""
Durable, with DATA_DIR (the local stack's --data-dir): a write moto acknowledged survives a
SIGKILL of anything. Every DynamoDB request that is not a read and that succeeded is appended,
as it arrived, to a write-ahead log (DATA_DIR/wal-<generation>.jsonl) while the lock is held,
and no answer leaves this process (a read's included: it may show such a write) before the log
is on disk up to the last write that request could see. The fsync is a group commit outside the
lock: one fdatasync covers every request that waits meanwhile, so the lock is held for a
write(2) only. Failed requests (a condition that did not hold, a cancelled transaction) are not
logged, so a replay never has to fail them again.
A snapshot (DATA_DIR/snapshot-<generation>.json: every table's creating requests and its items)
is taken under the lock, so it is one moment across tables, every COMPACT_EVERY logged
requests (never two at once, its I/O outside the lock) and at SIGTERM, after the stack stopped
every writer. At start the newest snapshot is loaded and every log from its generation on is
replayed in order through the same app, then compacted into a new snapshot. Each step
leaves a restorable directory: a snapshot is written beside its predecessor and renamed into
place, and the logs it covers are deleted only after that. A torn last line (a crash mid-write)
was never acknowledged and is dropped. DATA_DIR/LOCK (flock) keeps a second launcher out while
one runs; a launcher whose parent dies (stdin closes) exits at once.
Streams are not persisted: a restored table's stream starts empty, with a new stream ARN.
"""
import base64
import fcntl
import json
import os
import sys
import threading
import time

from moto.dynamodb.models import dynamodb_backends
from werkzeug.test import EnvironBuilder

from .app import ITEM_WRITES, all_backends, call_app, lock
from .items import note_item_write

# Request headers a replay needs: moto picks the service, account and region from them.
SKIPPED_HEADERS = frozenset(("CONTENT_LENGTH", "HTTP_CONNECTION", "HTTP_ACCEPT_ENCODING"))


def replay(entry):
    environ = EnvironBuilder(
        path=entry["path"], method="POST", headers=entry["headers"], data=entry["body"].encode("utf-8")
    ).get_environ()
    line, _, _ = call_app(environ)
    return line.startswith("200")


class Durable:
    def __init__(self, directory, compact_every):
        self.dir = directory
        self.compact_every = compact_every
        os.makedirs(directory, exist_ok=True)
        self._lock_dir()
        self.cond = threading.Condition()
        self.written = 0  # log entries written (the lsn of the last one)
        self.durable = 0  # entries known to be on disk
        self.syncing = False
        self.since_snapshot = 0
        self.compacting = False
        self.ddl = []
        self.generation = 0
        self.fd = None

    def _lock_dir(self):
        self.lock_file = open(os.path.join(self.dir, "LOCK"), "a+")
        deadline = time.monotonic() + 15
        while True:
            try:
                fcntl.flock(self.lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    self.lock_file.seek(0)
                    owner = self.lock_file.read().strip() or "unknown"
                    sys.exit(f"flow-moto: {self.dir} is in use by another moto (pid {owner})")
                time.sleep(0.1)
        self.lock_file.truncate(0)
        self.lock_file.write(str(os.getpid()))
        self.lock_file.flush()

    def _generations(self, prefix, suffix):
        found = []
        for name in os.listdir(self.dir):
            if name.startswith(prefix) and name.endswith(suffix):
                middle = name[len(prefix) : -len(suffix)]
                if middle.isdigit():
                    found.append(int(middle))
        return sorted(found)

    def _path(self, kind, generation):
        suffix = "json" if kind == "snapshot" else "jsonl"
        return os.path.join(self.dir, f"{kind}-{generation:08d}.{suffix}")

    # -- start ------------------------------------------------------------------------------

    def restore(self):
        began = time.monotonic()
        snapshots = self._generations("snapshot-", ".json")
        base = snapshots[-1] if snapshots else 0
        items = 0
        if snapshots:
            with open(self._path("snapshot", base), encoding="utf-8") as f:
                snapshot = json.load(f)
            self.ddl = snapshot["ddl"]
            for entry in self.ddl:
                replay(entry)
            for table in snapshot["tables"]:
                backend = dynamodb_backends[table["account"]][table["region"]]
                for attrs in table["items"]:
                    backend.put_item(table["name"], attrs, overwrite=True)
                    items += 1
            note_item_write()  # items put without a request: no table's sorted items hold
        writes = 0
        logs = [g for g in self._generations("wal-", ".jsonl") if g >= base]
        for generation in logs:
            with open(self._path("wal", generation), "rb") as f:
                lines = f.read().split(b"\n")
            for number, raw in enumerate(lines):
                if not raw:
                    continue
                try:
                    entry = json.loads(raw)
                except ValueError:
                    # Only a torn last line (never acknowledged) can be cut short.
                    if number != len(lines) - 1 or generation != logs[-1]:
                        sys.exit(f"flow-moto: {self._path('wal', generation)} line {number + 1} is corrupt")
                    break
                if not replay(entry):
                    print(f"flow-moto: replaying {entry['headers'].get('X-Amz-Target')} failed", file=sys.stderr)
                if entry["headers"].get("X-Amz-Target") not in ITEM_WRITES:
                    self.ddl.append(entry)
                writes += 1
        # A restored table's stream starts empty (its ARN is new): old records would only be
        # sequence numbers of another life.
        for _, backend in all_backends():
            for table in backend.tables.values():
                if table.stream_shard is not None:
                    table.stream_shard.items = []
        self.generation = max([base, *logs]) + 1 if (snapshots or logs) else 1
        self.fd = os.open(self._path("wal", self.generation), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        if snapshots or logs:
            # Everything restored is one consistent state and no writer runs yet: compact it now,
            # so the next start replays nothing twice and the logs are gone.
            self._snapshot(self._capture(), self.generation)
            self._remove_before(self.generation)
        print(
            f"flow-moto: restored {items} items and replayed {writes} logged writes from {self.dir} "
            f"in {int((time.monotonic() - began) * 1000)} ms",
            flush=True,
        )

    # -- the log ----------------------------------------------------------------------------

    def record(self, environ, body):
        """Under the request lock: appends one succeeded request; returns its lsn."""
        headers = {}
        for key, value in environ.items():
            if key in SKIPPED_HEADERS:
                continue
            if key.startswith("HTTP_"):
                headers["-".join(part.capitalize() for part in key[5:].split("_"))] = value
            elif key == "CONTENT_TYPE":
                headers["Content-Type"] = value
        headers["X-Amz-Target"] = environ.get("HTTP_X_AMZ_TARGET", "")
        entry = {"path": environ.get("PATH_INFO") or "/", "headers": headers, "body": body.decode("utf-8")}
        os.write(self.fd, (json.dumps(entry, separators=(",", ":")) + "\n").encode("utf-8"))
        if headers["X-Amz-Target"] not in ITEM_WRITES:
            self.ddl.append(entry)
        self.since_snapshot += 1
        with self.cond:
            self.written += 1
            return self.written

    def lsn(self):
        with self.cond:
            return self.written

    def wait(self, lsn):
        """Outside the request lock: returns once entries up to `lsn` are on disk (group commit)."""
        with self.cond:
            while self.durable < lsn:
                if self.syncing:
                    self.cond.wait()
                    continue
                self.syncing = True
                target, fd = self.written, self.fd
                self.cond.release()
                try:
                    os.fdatasync(fd)
                finally:
                    self.cond.acquire()
                    self.syncing = False
                    self.durable = max(self.durable, target)
                    self.cond.notify_all()

    def due(self):
        return self.since_snapshot >= self.compact_every and not self.compacting

    # -- snapshots --------------------------------------------------------------------------

    def _capture(self):
        def wire(value):
            # moto may hold a binary attribute decoded (bytes, e.g. a task's deflated report);
            # JSON and put_item take it as the wire does: base64 text.
            if isinstance(value, bytes):
                return base64.b64encode(value).decode("ascii")
            if isinstance(value, dict):
                return {k: wire(v) for k, v in value.items()}
            if isinstance(value, list):
                return [wire(v) for v in value]
            return value

        tables = []
        for (account, region), backend in all_backends():
            for name, table in backend.tables.items():
                tables.append(
                    {
                        "account": account,
                        "region": region,
                        "name": name,
                        "items": [wire(item.to_json()["Attributes"]) for item in table.all_items()],
                    }
                )
        return {"version": 1, "ddl": list(self.ddl), "tables": tables}

    def _rotate(self):
        """Under the request lock: the next writes go to a new log. Returns its generation."""
        with self.cond:
            while self.syncing:
                self.cond.wait()
            os.fdatasync(self.fd)
            os.close(self.fd)
            self.durable = self.written
            self.generation += 1
            self.fd = os.open(self._path("wal", self.generation), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.since_snapshot = 0
        return self.generation

    def _snapshot(self, state, generation):
        """Writes snapshot-<generation>: the state at the start of wal-<generation>."""
        path = self._path("snapshot", generation)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, path)
        dir_fd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def _remove_before(self, generation):
        for kind, suffix in (("snapshot", ".json"), ("wal", ".jsonl")):
            for g in self._generations(kind + "-", suffix):
                if g < generation:
                    os.remove(self._path(kind, g))

    def compact_final(self):
        """At SIGTERM, under the request lock: everything is in the snapshot, no log is left."""
        state = self._capture()
        generation = self._rotate()
        self._snapshot(state, generation)
        self._remove_before(generation)

    def compact(self):
        """Called with the request lock held; releases it for the file I/O and takes it back."""
        self.compacting = True
        try:
            state = self._capture()
            generation = self._rotate()
            lock.release()
            try:
                self._snapshot(state, generation)
                self._remove_before(generation)
            finally:
                lock.acquire()
        finally:
            self.compacting = False
