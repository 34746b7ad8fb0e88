"""
Every request a launcher serves, written down for a replay (off unless FLOW_MOTO_RECORD names a
file; the launcher then runs each request through `recorded(call_app, path)` under its lock, and
nothing else changes). One JSON object a line, in the order the requests ran: the method, the path, the query
string, the request's headers and its body in base64, and the answer's status line and body in
base64 (a replay learns from them what the clock or chance named: stream ARNs and shard
iterators). local/flow_moto/replay.py runs such a file
through the app again, without HTTP: the same answers from the same moto, the time each took and
where it went (for tuning moto; it is no part of the stack).
"""
import base64
import io
import json

# The WSGI environ's keys that are not headers but a replay needs as they were.
_PLAIN = {"CONTENT_TYPE": "Content-Type", "CONTENT_LENGTH": "Content-Length"}


def headers_of(environ):
    """The request's headers, as they came (names in the usual Title-Case)."""
    out = {}
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            out["-".join(part.capitalize() for part in key[5:].split("_"))] = value
        elif key in _PLAIN and value:
            out[_PLAIN[key]] = value
    return out


def recorded(call, path):
    """`call` (flow_moto.app.call_app, which runs under the lock) with each request and its answer
    appended to `path`."""
    out = open(path, "a", encoding="utf-8")

    def recording(environ):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length > 0 else b""
        environ["wsgi.input"] = io.BytesIO(body)
        entry = {
            "method": environ.get("REQUEST_METHOD", "GET"),
            "path": environ.get("PATH_INFO") or "/",
            "query": environ.get("QUERY_STRING", ""),
            "headers": headers_of(environ),
            "body": base64.b64encode(body).decode("ascii"),
        }
        line, headers, chunks = answer = call(environ)
        entry["line"] = line
        entry["answer"] = base64.b64encode(b"".join(chunks)).decode("ascii")
        out.write(json.dumps(entry, separators=(",", ":")) + "\n")
        out.flush()
        return answer

    return recording
