"""
moto for the local stack and the test suites (local/moto.ts spawns it, or has it forked: point 7):

    python3 moto-launcher.py HOST PORT [DATA_DIR [COMPACT_EVERY]]

1. Serialized. Plain `moto_server` serves requests on many threads, and moto 5's TransactWriteItems
   is not isolated: each transaction deep-copies the tables it touches at its start and, when
   cancelled, restores those copies, silently erasing a concurrent transaction that committed in
   between (under 16 concurrent claimers that let 4 claims through a limit of 3). Real DynamoDB
   transactions are serializable, so this runs moto's own WSGI app with ONE lock around each
   request (connections stay threaded).

2. A copy-free TransactWriteItems (flow_moto/transactions.py): the conditions are checked against
   the state before the transaction, as DynamoDB does, and no table is copied.

3. moto's hot spots, cut with the same answers (bench:rollout waits on this process: every request
   waits for the one before, so its time per request is the stack's wall time): items answered
   without the generic serializer (flow_moto/serializer.py); update and condition expressions
   parsed and validated once (flow_moto/expressions.py); a table's items sorted once between
   writes, sizes summed in place, values copied directly (flow_moto/items.py); moto's request
   routing looked up once (flow_moto/app.py); each answer's members found by keys computed once
   (flow_moto/serializer.py); a request's id drawn directly, no log line formatted for nobody,
   the garbage collector kept off what lives for good (flow_moto/per_request.py). Each module's
   docstring has the figures.
   In a replay of bench:rollout's 586 DynamoDB requests through the app (no HTTP), moto's time went
   from 5.1–8.4 s to 3.1–4.6 s (UpdateItem 4.0–6.6 s to 2.2–3.2 s), every answer the same.
   Then: attribute values in a request read without the parser's shape walk
   (flow_moto/parser.py); a projection converts only the attributes its paths name
   (flow_moto/items.py); no Flask class built for every request (flow_moto/per_request.py);
   request headers read without the email package's parser (flow_moto/headers.py). Measured
   with a recording of the test suites' requests replayed (point 6) and docs/benchmarks.md.

4. Durable, with DATA_DIR (the local stack's --data-dir; flow_moto/durable.py): a write moto
   acknowledged survives a SIGKILL of anything. Every succeeded write is in a write-ahead log on
   disk before any answer that could show it leaves (a group commit outside the lock); snapshots
   are one moment across tables; a start restores the newest snapshot and replays the logs after it.
   DATA_DIR/LOCK keeps a second launcher out while one runs; a launcher whose parent dies (stdin
   closes) exits at once. Streams are not persisted.

5. Connections kept open (flow_moto/keepalive.py): a request whose body is delimited by its
   Content-Length is answered with its length on a connection that stays open.

6. Profiled, for tuning only, when FLOW_MOTO_PROFILE or FLOW_MOTO_OPS names a file
   (flow_moto/profiling.py): the time per function, the CPU per operation, written at exit.
   FLOW_MOTO_RECORD=FILE writes every request and its answer, in the order they ran
   (flow_moto/recording.py), and `cd local && python3 -m flow_moto.replay FILE` serves them again
   through the app without HTTP: the CPU per operation, a profile, and the answers, masked where
   the clock or chance speaks, to compare two versions of these modules byte for byte.
   Unset, nothing of it runs.

7. Forked, for the test suites (local/moto-forkserver.py): one process imports this file and all it
   imports once, then forks a child per moto that runs main() below with the asker's arguments,
   environment and directory (local/moto.ts asks it when FLOW_MOTO_FORKSERVER names its socket;
   test/support/global-setup.ts starts one per run). A forked start costs ~0.2 CPU-s instead of
   ~1.1 (docs/benchmarks.md). The child's lifeline is its connection to the server instead of
   stdin; everything else (SIGTERM's snapshot, DATA_DIR/LOCK, its output, its exit) is the same.

The modules under flow_moto/ install their changes to moto when imported; this file imports them
all, then serves.
"""
import io
import logging
import os
import signal
import sys
import threading
import time

from werkzeug.serving import run_simple

from flow_moto import expressions, headers, items, parser, per_request, serializer, transactions  # noqa: F401 (they patch moto)
from flow_moto.app import READS, call_app, lock
from flow_moto.durable import Durable
from flow_moto.keepalive import KeepAliveHandler

durable = None


def serialized(environ, start_response):
    body = b""
    if durable is not None:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length > 0 else b""
        environ["wsgi.input"] = io.BytesIO(body)
    with lock:
        line, headers, chunks = call_app(environ)
        if durable is not None:
            target = environ.get("HTTP_X_AMZ_TARGET", "")
            if line.startswith("200") and target.startswith("DynamoDB_20120810.") and target not in READS:
                lsn = durable.record(environ, body)
            else:
                lsn = durable.lsn()
            if durable.due():
                durable.compact()
    if durable is not None:
        durable.wait(lsn)
    start_response(line, headers)
    return chunks


def watch_parent(read):
    """The parent (the stack) keeps our stdin open (or, forked, its connection to the fork server,
    which `read` reads); EOF means it died: go too, at once."""
    try:
        while read(4096):
            pass
    except Exception:
        pass
    os._exit(0)


def stop(*_):
    # SIGTERM comes from the stack after it stopped every writer: the final snapshot. The lock
    # waits for a request still running.
    if durable is not None:
        with lock:
            while durable.compacting:  # a compaction doing its I/O outside the lock: let it end
                lock.release()
                time.sleep(0.05)
                lock.acquire()
            durable.compact_final()
    sys.exit(0)


def main(args, lifeline=None):
    """Serves: `args` are HOST PORT [DATA_DIR [COMPACT_EVERY]]; `lifeline` reads what the parent
    holds open (default: stdin). Returns only by an exception (SystemExit at SIGTERM)."""
    global durable
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    if len(args) > 2:
        durable = Durable(args[2], int(args[3]) if len(args) > 3 else 5000)
        durable.restore()
    # A detached launcher (deploy:local, FLOW_MOTO_DETACHED=1) outlives its parent on purpose, and
    # its stdin is /dev/null, whose EOF would end it at once.
    if os.environ.get("FLOW_MOTO_DETACHED") != "1":
        read = lifeline if lifeline is not None else sys.stdin.buffer.read
        threading.Thread(target=watch_parent, args=(read,), daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    handler = KeepAliveHandler
    if os.environ.get("FLOW_MOTO_PROFILE") or os.environ.get("FLOW_MOTO_OPS"):
        from flow_moto.profiling import profiled

        profile = os.environ.get("FLOW_MOTO_PROFILE")
        handler = profiled(handler, profile or os.environ["FLOW_MOTO_OPS"], calls=bool(profile))
    if os.environ.get("FLOW_MOTO_RECORD"):
        from flow_moto.recording import recorded

        global call_app
        call_app = recorded(call_app, os.environ["FLOW_MOTO_RECORD"])
    per_request.settle()
    run_simple(args[0], int(args[1]), serialized, threaded=True, request_handler=handler)


if __name__ == "__main__":
    main(sys.argv[1:])
