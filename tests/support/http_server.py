#!/usr/bin/env python3
"""Loopback HTTP server for tests: honest files plus hostile answers on demand.

Usage: http_server.py --root DIR [--port 0] [--port-file FILE] [--log FILE]
                      [--bind ADDR] [--tls-cert PEM --tls-key PEM]

Binds --bind (127.0.0.1 by default; port 0 = ephemeral), serving https with
--tls-cert/--tls-key, plain http otherwise; writes the chosen port to --port-file
atomically (temporary file, then rename) and prints it as the first stdout line.
Serves the files under DIR (GET and HEAD, with Content-Length), honouring a
single "Range: bytes=FIRST-[LAST]" with 206 + Content-Range (416 past the end).
--log appends one JSON object per request, written before the answer is sent:
{"method", "path", "range" (the header or null), "status", "bytes" (body bytes
the answer sends), "time" (seconds since the epoch)}. Special path prefixes inject faults, so one server serves
honest and hostile responses:

  /__endless__/<anything>            200, no Content-Length, 64 KiB chunks forever
                                     (until the client disconnects)
  /__status__/<code>/<anything>      answers status <code> with a short body
  /__status_file__/<code>/<path>     answers status <code> with the file's bytes
                                     as its body (an error page saying too much)
  /__slow__/<anything>               200, no Content-Length, 1 byte per second
                                     (stops after 600 s)
  /__redirect__/<url-encoded target> 302 to the decoded target
  /__drop__/<N>/<path>               the file (Range honoured), but the connection
                                     closes after N body bytes of every answer
  /__norange__/<path>                the file, always whole (200): Range ignored
  /__fail_first__/<K>/<code>/<path>  the first K requests for this URL get
                                     status <code>, later ones the file
  /__shiftrange__/<path>             answers "Range: bytes=N-" (N > 0) with a 206
                                     for N-1 onwards: a range not asked for
  /__trickle__/<path>                the file (Range honoured), its body sent in
                                     4 KiB pieces 50 ms apart (80 KiB/s)
  /__paced__/<MS>/<path>             the file (Range honoured), its body sent in
                                     16 pieces MS/16 ms apart: MS ms at least,
                                     whatever the file's size
  /__retry_after__/<K>/<S>/<path>    the first K requests for this URL get 503
                                     with "Retry-After: S", later ones the file

Exits on SIGTERM. Standard library only.
"""

import argparse
import http.server
import json
import os
import re
import signal
import ssl
import sys
import threading
import time
import urllib.parse

CHUNK = b"\xa5" * (64 * 1024)
SLOW_SECONDS = 600
TRICKLE_BYTES = 4096
TRICKLE_PAUSE_S = 0.05
PACED_PIECES = 16


class Handler(http.server.BaseHTTPRequestHandler):
    # HTTP/1.0: every answer closes its connection, so a body without
    # Content-Length simply ends when the connection does.
    protocol_version = "HTTP/1.0"
    server_version = "epbroker-test-http/1"
    root = "."
    log_path = None
    lock = threading.Lock()
    seen = {}  # /__fail_first__/ URL -> requests so far

    def log_message(self, format, *args):  # quiet: tests read their own output
        pass

    def do_GET(self):
        self._dispatch(send_body=True)

    def do_HEAD(self):
        self._dispatch(send_body=False)

    # ---- dispatch --------------------------------------------------------

    def _dispatch(self, send_body):
        raw_path = self.path.split("?", 1)[0].split("#", 1)[0]
        try:
            if raw_path.startswith("/__endless__/"):
                self._endless(send_body)
            elif raw_path.startswith("/__status__/"):
                self._status(raw_path[len("/__status__/"):], send_body)
            elif raw_path.startswith("/__status_file__/"):
                self._status_file(raw_path[len("/__status_file__/"):], send_body)
            elif raw_path.startswith("/__slow__/"):
                self._slow(send_body)
            elif raw_path.startswith("/__redirect__/"):
                self._redirect(raw_path[len("/__redirect__/"):], send_body)
            elif raw_path.startswith("/__drop__/"):
                count, _, rest = raw_path[len("/__drop__/"):].partition("/")
                self._file("/" + rest, send_body, drop_after=int(count))
            elif raw_path.startswith("/__norange__/"):
                self._file(raw_path[len("/__norange__"):], send_body, honour_range=False)
            elif raw_path.startswith("/__shiftrange__/"):
                self._file(raw_path[len("/__shiftrange__"):], send_body, shift=1)
            elif raw_path.startswith("/__fail_first__/"):
                self._fail_first(raw_path, send_body)
            elif raw_path.startswith("/__retry_after__/"):
                self._retry_after(raw_path, send_body)
            elif raw_path.startswith("/__trickle__/"):
                self._file(raw_path[len("/__trickle__"):], send_body, trickle=True)
            elif raw_path.startswith("/__paced__/"):
                ms, _, rest = raw_path[len("/__paced__/"):].partition("/")
                self._file("/" + rest, send_body, paced_ms=int(ms) if ms.isdigit() else 0)
            else:
                self._file(raw_path, send_body)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            pass  # the client went away: expected for the hostile answers

    def _log(self, code, nbytes):
        if not self.log_path:
            return
        entry = {"method": self.command, "path": self.path, "range": self.headers.get("Range"),
                 "status": code, "bytes": nbytes, "time": time.time()}
        with Handler.lock, open(self.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def _simple(self, code, body, send_body, headers=()):
        self._log(code, len(body) if send_body and code >= 200 and code not in (204, 304) else 0)
        self.send_response(code)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body and code >= 200 and code not in (204, 304):
            self.wfile.write(body)

    def _file(self, raw_path, send_body, honour_range=True, drop_after=None, shift=0,
              trickle=False, paced_ms=0):
        rel = urllib.parse.unquote(raw_path).lstrip("/")
        root = os.path.realpath(self.root)
        full = os.path.realpath(os.path.join(root, rel))
        if (full != root and not full.startswith(root + os.sep)) or not os.path.isfile(full):
            self._simple(404, b"not found\n", send_body)
            return
        try:
            with open(full, "rb") as f:
                data = f.read()
        except OSError:
            self._simple(403, b"forbidden\n", send_body)
            return
        code, first, last = 200, 0, len(data) - 1
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range") or "")
        if honour_range and match:
            first = max(int(match.group(1)) - shift, 0)
            if match.group(2):
                last = min(int(match.group(2)), last)
            if first >= len(data) or first > last:
                self._simple(416, b"range not satisfiable\n", send_body,
                             headers=[("Content-Range", "bytes */%d" % len(data))])
                return
            code = 206
        body = data[first:last + 1]
        sent = body if drop_after is None else body[:drop_after]
        self._log(code, len(sent) if send_body else 0)
        self.send_response(code)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))  # the whole, even if dropped
        if code == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (first, last, len(data)))
        self.end_headers()
        if send_body and trickle:
            for i in range(0, len(sent), TRICKLE_BYTES):
                self.wfile.write(sent[i:i + TRICKLE_BYTES])
                self.wfile.flush()
                time.sleep(TRICKLE_PAUSE_S)
        elif send_body and paced_ms > 0:
            piece = max(1, -(-len(sent) // PACED_PIECES))
            for i in range(PACED_PIECES):
                self.wfile.write(sent[i * piece:(i + 1) * piece])
                self.wfile.flush()
                time.sleep(paced_ms / 1000.0 / PACED_PIECES)
        elif send_body:
            self.wfile.write(sent)
            self.wfile.flush()

    def _fail_first(self, raw_path, send_body):
        count, code, rest = (raw_path[len("/__fail_first__/"):].split("/", 2) + ["", ""])[:3]
        with Handler.lock:
            seen = Handler.seen.get(raw_path, 0)
            Handler.seen[raw_path] = seen + 1
        if seen < int(count):
            self._simple(int(code), ("status %s\n" % code).encode(), send_body)
        else:
            self._file("/" + rest, send_body)

    def _retry_after(self, raw_path, send_body):
        count, seconds, rest = (raw_path[len("/__retry_after__/"):].split("/", 2) + ["", ""])[:3]
        with Handler.lock:
            seen = Handler.seen.get(raw_path, 0)
            Handler.seen[raw_path] = seen + 1
        if seen < int(count):
            self._simple(503, b"busy, come back later\n", send_body,
                         headers=[("Retry-After", seconds)])
        else:
            self._file("/" + rest, send_body)

    def _endless(self, send_body):
        self._log(200, None)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if not send_body:
            return
        while True:
            self.wfile.write(CHUNK)

    def _status(self, rest, send_body):
        code_text = rest.split("/", 1)[0]
        try:
            code = int(code_text)
            if not 100 <= code <= 599:
                raise ValueError(code_text)
        except ValueError:
            self._simple(400, b"bad status code\n", send_body)
            return
        self._simple(code, ("status %d\n" % code).encode(), send_body)

    def _status_file(self, rest, send_body):
        code_text, _, path = rest.partition("/")
        try:
            code = int(code_text)
            if not 200 <= code <= 599:
                raise ValueError(code_text)
        except ValueError:
            self._simple(400, b"bad status code\n", send_body)
            return
        root = os.path.realpath(self.root)
        full = os.path.realpath(os.path.join(root, urllib.parse.unquote(path)))
        if not full.startswith(root + os.sep) or not os.path.isfile(full):
            self._simple(404, b"not found\n", send_body)
            return
        with open(full, "rb") as f:
            self._simple(code, f.read(), send_body)

    def _slow(self, send_body):
        self._log(200, None)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if not send_body:
            return
        for _ in range(SLOW_SECONDS):
            self.wfile.write(b"s")
            self.wfile.flush()
            time.sleep(1)

    def _redirect(self, encoded_target, send_body):
        target = urllib.parse.unquote(encoded_target)
        self._simple(302, b"redirect\n", send_body, headers=[("Location", target)])


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True  # hostile streams must not keep the process alive
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        # A client refusing our certificate (the point of some tests) is no error.
        if isinstance(sys.exc_info()[1], (ssl.SSLError, ConnectionError)):
            return
        super().handle_error(request, client_address)


def write_port_file(path, port):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--root", required=True, help="directory to serve")
    parser.add_argument("--port", type=int, default=0, help="port (0: ephemeral)")
    parser.add_argument("--port-file", help="where to write the chosen port")
    parser.add_argument("--log", help="where to append one JSON line per request")
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--tls-cert", help="PEM certificate (chain): serve https")
    parser.add_argument("--tls-key", help="PEM private key of --tls-cert")
    args = parser.parse_args(argv)

    if not os.path.isdir(args.root):
        parser.error("--root %s is not a directory" % args.root)
    Handler.root = os.path.realpath(args.root)
    Handler.log_path = args.log

    def on_sigterm(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_sigterm)

    if bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    server = Server((args.bind, args.port), Handler)
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        # The handshake runs in the handler's thread, at its first read: a
        # client that refuses the certificate then only ends that thread.
        server.socket = context.wrap_socket(server.socket, server_side=True,
                                            do_handshake_on_connect=False)
    port = server.server_address[1]
    if args.port_file:
        write_port_file(args.port_file, port)
    print(port, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except (SystemExit, KeyboardInterrupt):
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
