"""
A fork server for the moto launcher (local/moto-launcher.py), for runs that start many motos (the
test suites: each start of the launcher is about a second of CPU, nearly all of it Python importing
moto, boto3, werkzeug and flask):

    python3 moto-forkserver.py SOCKET

imports the launcher and everything it imports and patches once, listens on the unix socket
SOCKET, prints `ready` and then, for each connection, reads one request (a JSON line:
{"args": [HOST, PORT, DATA_DIR?, COMPACT_EVERY?], "env": {...}, "cwd": "..."}) and forks a child
that runs exactly what the launcher's main does with those arguments, in that environment and
directory. local/moto.ts asks it when FLOW_MOTO_FORKSERVER names its socket
(test/support/global-setup.ts starts one per test run) and spawns the launcher otherwise.

What the asking process reads on the connection, one JSON object a line:
  {"pid": N}                    first, from the child: a real process (signals reach it by its pid);
  {"out": TEXT} / {"err": TEXT} what the child writes to its stdout / stderr, in order;
  {"exit": {"code": C, "signal": S}}
                                last, from this server, once it has reaped the child (then it
                                closes its end);
  {"refused": WHY}              instead of a child, when this server cannot give one that would
                                behave as a spawned launcher (the asking process then spawns).
The connection is the child's lifeline, as a spawned launcher's stdin is: when the asking process
dies (even by SIGKILL) the child reads EOF on it and exits at once. SIGTERM makes the child's final
snapshot and exit 0, as the launcher does.

The environment moto reads while it is imported (moto.settings' constants, the interpreter's
PYTHON* variables) is this server's: a request whose environment differs in any of those is
refused. Everything else (FLOW_MOTO_OPS, MOTO_ACCOUNT_ID, ...) is read by the child from the
request's environment.

This server never starts a thread, so every fork copies a whole, quiet process; each child is in a
session of its own (as a spawned launcher) and is SIGKILLed if this server dies. The server reaps
its children and exits when its stdin closes (the test run that started it ended).
"""
import atexit
import ctypes
import gc
import importlib.util
import io
import json
import os
import selectors
import signal
import socket
import sys
import threading
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.join(HERE, "moto-launcher.py")

# Variables moto reads while it is imported (its settings module's constants): a child must see
# the values its imports saw. Any MOTO_* or PYTHON* variable is compared too, except those moto
# reads per request.
IMPORT_TIME = frozenset(
    (
        "TEST_SERVER_MODE",
        "INITIAL_NO_AUTH_ACTION_COUNT",
        "DEFAULT_CONTAINER_REGISTRY",
        "S3_IGNORE_SUBDOMAIN_BUCKETNAME",
        "TESTS_SKIP_REQUIRES_DOCKER",
    )
)
PER_REQUEST = frozenset(("MOTO_ACCOUNT_ID",))
PR_SET_PDEATHSIG = 1


def load_launcher():
    spec = importlib.util.spec_from_file_location("moto_launcher", LAUNCHER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fixed(name):
    return name not in PER_REQUEST and (
        name in IMPORT_TIME or name.startswith("MOTO_") or name.startswith("PYTHON")
    )


def differences(env, start_env):
    names = {n for n in (*env, *start_env) if fixed(n)}
    return sorted(n for n in names if env.get(n) != start_env.get(n))


class Frames(io.TextIOBase):
    """A text stream whose writes go to the connection as {"out"|"err": text} lines."""

    def __init__(self, conn, kind, guard):
        self.conn, self.kind, self.guard = conn, kind, guard

    def writable(self):
        return True

    def write(self, text):
        if text:
            line = (json.dumps({self.kind: text}) + "\n").encode("utf-8")
            with self.guard:
                self.conn.sendall(line)
        return len(text)


def child(launcher, conn, request, close):
    """In the forked child: becomes the launcher with the request's arguments; never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        # The server's own descriptors: the listener, the other children's connections (held here,
        # their askers would not see them close when their moto ends), the selector, the wake pipe.
        for held in close:
            if isinstance(held, int):
                os.close(held)
            else:
                held.close()
        os.setsid()
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        guard = threading.Lock()
        sys.stdout = Frames(conn, "out", guard)
        sys.stderr = Frames(conn, "err", guard)
        with guard:
            conn.sendall((json.dumps({"pid": os.getpid()}) + "\n").encode("utf-8"))
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = [LAUNCHER, *request["args"]]
        # A spawned launcher draws its own ids; moto's generator was seeded once, in this server.
        from moto.moto_api._internal import mock_random

        mock_random.seed()
        gc.enable()
        launcher.main(request["args"], lifeline=conn.recv)
        code = 0
    except SystemExit as done:
        # As the interpreter ends on one: a number is the status, anything else is printed.
        if done.code is None:
            code = 0
        elif isinstance(done.code, int):
            code = done.code
        else:
            try:
                print(done.code, file=sys.stderr)
            except Exception:
                pass
            code = 1
    except BaseException:
        try:
            traceback.print_exc()
        except Exception:
            pass
        code = 1
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    os._exit(code)


def exit_frame(status):
    if os.WIFSIGNALED(status):
        return {"code": None, "signal": signal.Signals(os.WTERMSIG(status)).name}
    return {"code": os.waitstatus_to_exitcode(status), "signal": None}


def send(conn, frame):
    try:
        # A newline first ends a line the child may have left half-written (a SIGKILL mid-write).
        conn.sendall(("\n" + json.dumps(frame) + "\n").encode("utf-8"))
    except OSError:
        pass


def read_request(conn):
    conn.settimeout(5)
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            raise ValueError("the connection closed before its request")
        data += chunk
    conn.settimeout(None)
    request = json.loads(data)
    if not isinstance(request.get("args"), list) or not 2 <= len(request["args"]) <= 4:
        raise ValueError("args must be HOST PORT [DATA_DIR [COMPACT_EVERY]]")
    return {"args": [str(a) for a in request["args"]], "env": dict(request["env"]), "cwd": str(request["cwd"])}


def serve(path):
    launcher = load_launcher()
    start_env = dict(os.environ)
    # Everything imported so far lives as long as the children do: out of the collector's reach,
    # so no collection writes to (and copies) the pages the children share.
    gc.collect()
    gc.disable()
    gc.freeze()
    if threading.active_count() != 1:
        sys.exit("flow-moto forkserver: a thread runs before the first fork")

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(path):
        os.remove(path)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children = {}  # pid -> the connection that asked for it

    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(wake_r, selectors.EVENT_READ, "wake")
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "stdin")
    print("ready", flush=True)

    while True:
        for key, _ in selector.select():
            if key.data == "stdin":
                if not os.read(sys.stdin.fileno(), 4096):
                    os.remove(path)
                    return  # the children die with this process (their PDEATHSIG)
            elif key.data == "wake":
                try:
                    while os.read(wake_r, 4096):
                        pass
                except BlockingIOError:
                    pass
            else:
                conn, _ = listener.accept()
                try:
                    request = read_request(conn)
                except (OSError, ValueError) as error:
                    send(conn, {"refused": f"bad request: {error}"})
                    conn.close()
                    continue
                differ = differences(request["env"], start_env)
                if differ:
                    send(conn, {"refused": f"moto was imported with another {', '.join(differ)}"})
                    conn.close()
                    continue
                close = [listener, selector, wake_r, wake_w, *children.values()]
                pid = os.fork()
                if pid == 0:
                    child(launcher, conn, request, close)
                children[pid] = conn
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = children.pop(pid, None)
            if conn is not None:
                send(conn, {"exit": exit_frame(status)})
                conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
