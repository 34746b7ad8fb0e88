"""
A recorded run of requests (FLOW_MOTO_RECORD, flow_moto/recording.py) served again by this
process's moto, through the launcher's app without HTTP, for tuning moto (no part of the stack):

    cd local && python3 -m flow_moto.replay RECORD [--answers OUT] [--profile OUT] [--repeat N]

Seeds moto's random numbers and runs the requests in their order on a fresh moto, `--repeat`
times (a fresh moto each: the first warms the caches). Prints, per operation, the requests and
the CPU-ms each took (the last repeat); `--answers` writes each answer of the last repeat (status,
headers, body) one JSON line each, with what varies from run to run by the clock masked, so two
versions of the launcher can be compared byte for byte; `--profile` writes the last repeat's
cProfile (pstats).
"""
import argparse
import base64
import cProfile
import json
import re
import sys
import time

from moto.backends import get_backend
from moto.core.base_backend import BackendDict
from moto.moto_api._internal import mock_random
from werkzeug.test import EnvironBuilder

from . import expressions, items, parser, per_request, serializer, transactions  # noqa: F401 (they patch moto)
from .app import call_app
from .profiling import operation

# What the clock puts in an answer: epoch seconds (with a fraction), ISO and HTTP dates, and the
# stream labels and sequence numbers made from them; and what chance does: a shard iterator's id
# (os.urandom). The body's length and CRC32 headers, and a stream record's size, which count
# them, are left out too.
_CLOCK = re.compile(
    rb"1[6-9]\d{8}(\.\d+)?|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?"
    rb"|[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT|\d{20,}|\|1\|[A-Za-z0-9+/=]{100,}"
    rb'|(?<="SizeBytes": )\d+'
)
_UNCOMPARED = frozenset(("x-amzn-requestid", "x-amz-crc32", "content-length"))


def masked(data):
    return _CLOCK.sub(b"<t>", data)


def reset():
    """Every backend moto made so far emptied: the next requests see a fresh moto."""
    import moto.backends as backends

    for name in backends.list_of_moto_modules():
        try:
            backend = get_backend(name)
        except Exception:
            continue
        if isinstance(backend, BackendDict):
            backend.reset()


def environ_of(entry):
    body = base64.b64decode(entry["body"])
    headers = {k: v for k, v in entry["headers"].items() if k != "Content-Length"}
    return EnvironBuilder(
        path=entry["path"],
        method=entry["method"],
        query_string=entry["query"],
        headers=headers,
        data=body,
    ).get_environ()


# Members of an answer that the clock or chance named: what the recorded answer held is replaced,
# in every later request, by what the replayed one holds.
_NAMED = frozenset(("ShardIterator", "NextShardIterator", "LatestStreamArn", "StreamArn", "LatestStreamLabel", "ShardId"))


def _named(recorded, replayed, found):
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        for key, value in recorded.items():
            other = replayed.get(key)
            if key in _NAMED and isinstance(value, str) and isinstance(other, str) and value != other:
                found[value] = other
            else:
                _named(value, other, found)
    elif isinstance(recorded, list) and isinstance(replayed, list):
        for value, other in zip(recorded, replayed):
            _named(value, other, found)


def _learn(entry, body, names):
    """Adds to `names` what the recorded answer named that this replay's answer names otherwise."""
    try:
        recorded = json.loads(base64.b64decode(entry.get("answer", "")) or b"null")
        replayed = json.loads(body or b"null")
    except ValueError:
        return
    _named(recorded, replayed, names)


def _renamed(entry, names):
    if not names:
        return entry
    body = base64.b64decode(entry["body"])
    for old, new in sorted(names.items(), key=lambda kv: -len(kv[0])):  # an ARN before its label
        if old.encode() in body:
            body = body.replace(old.encode(), new.encode())
    return {**entry, "body": base64.b64encode(body).decode("ascii")}


def run(entries, answers=None):
    """Runs every entry; returns {operation: [requests, cpu seconds]}."""
    ops = {}
    names = {}
    for entry in entries:
        environ = environ_of(_renamed(entry, names) if "Stream" in entry["headers"].get("X-Amz-Target", "") else entry)
        began = time.thread_time()
        line, headers, chunks = call_app(environ)
        cpu = time.thread_time() - began
        target = entry["headers"].get("X-Amz-Target", "")
        if "Stream" in target or "Table" in target:
            _learn(entry, b"".join(chunks), names)
        row = ops.setdefault(operation(entry["headers"]), [0, 0.0])
        row[0] += 1
        row[1] += cpu
        if answers is not None:
            body = b"".join(chunks)
            answers.append(
                {
                    "line": line,
                    "headers": [[k, masked(v.encode()).decode()] for k, v in headers if k.lower() not in _UNCOMPARED],
                    "body": masked(body).decode("utf-8", "replace"),
                }
            )
    return ops


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("record")
    parser.add_argument("--answers")
    parser.add_argument("--profile")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with open(args.record, encoding="utf-8") as f:
        entries = [json.loads(line) for line in f if line.strip()]
    per_request.settle()
    for i in range(args.repeat):
        reset()
        mock_random.seed(1)
        last = i == args.repeat - 1
        answers = [] if last and args.answers else None
        profile = cProfile.Profile() if last and args.profile else None
        if profile is not None:
            profile.enable()
        began = time.process_time()
        ops = run(entries, answers)
        total = time.process_time() - began
        if profile is not None:
            profile.disable()
            profile.dump_stats(args.profile)
        print(f"repeat {i + 1}: {len(entries)} requests, {total:.2f} CPU-s", file=sys.stderr)
    for name, (n, cpu) in sorted(ops.items(), key=lambda kv: -kv[1][1]):
        print(f"{name:40s} {n:6d} {cpu * 1000 / n:8.3f} ms {cpu:8.2f} s")
    if answers is not None:
        with open(args.answers, "w", encoding="utf-8") as f:
            for answer in answers:
                f.write(json.dumps(answer, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
