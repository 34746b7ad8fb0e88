"""
Connections kept open. werkzeug's development server answers every request with
`Connection: close`, so each of the stack's requests opened a TCP connection and the server a
thread for it (200 GetItems in a row left 203 sockets in TIME_WAIT), and it then waits up to
10 ms for a body nobody sends. A request whose body is delimited by its Content-Length (every
request the SDKs send moto here) is read whole first, answered with its length, and the
connection stays open for the next; anything else (a chunked body, `Expect: 100-continue`, a
HEAD) goes to werkzeug's own handler as before, which closes the connection after it.
"""
import io
import socket
import traceback

from werkzeug.exceptions import InternalServerError
from werkzeug.serving import WSGIRequestHandler

from .app import run_app


class KeepAliveHandler(WSGIRequestHandler):
    """Point 5: a request with a Content-Length-delimited body is served on a connection kept open."""

    def setup(self):
        super().setup()
        # The head and the body go out in two writes: without this the body waits for the
        # client's delayed ACK of the head (~40 ms), which a closed connection never met.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def run_wsgi(self):
        length = self.headers.get("Content-Length", "0").strip()
        delimited = length.isdigit() and "Transfer-Encoding" not in self.headers
        if self.command == "HEAD" or "Expect" in self.headers or not delimited:
            self.close_connection = True
            return super().run_wsgi()
        body = self.rfile.read(int(length))
        environ = self.make_environ()
        environ["wsgi.input"] = io.BytesIO(body)
        try:
            line, headers, chunks = run_app(self.server.app, environ)
        except Exception:
            # As werkzeug's handler answers a request its app raised on: its 500 page, logged.
            self.server.log("error", "Error on request:\n%s", traceback.format_exc())
            line, headers, chunks = run_app(InternalServerError(), environ)
        data = b"".join(chunks)
        code, _, reason = line.partition(" ")
        self.send_response(int(code), reason)
        for key, value in headers:
            if key.lower() not in ("connection", "content-length", "transfer-encoding"):
                self.send_header(key, value)
        # The length of what is sent, which delimits it on the open connection.
        if int(code) not in (204, 304):
            self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
