"""The HTTP transport: the standard library's threading server (README: Choices has the
measurements against aiohttp and uvicorn). A request thread only reads published answers;
`drain` stops accepting, waits for requests in flight, then closes."""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from draplan.serve.api import Api, error

log = logging.getLogger(__name__)

IDLE_SECONDS = 30  # a keep-alive connection with no request for this long is closed


class Server(ThreadingHTTPServer):
    # Idle keep-alive connections must not hold up an exit; requests in flight are waited for.
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], api: Api) -> None:
        self.api = api
        self.in_flight = 0
        self.draining = False
        self._idle = threading.Condition()
        super().__init__(address, Handler)

    def handle_error(self, request: object, client_address: object) -> None:
        # A client gone mid-response, mostly: not worth a traceback on stderr.
        log.debug("a connection from %s failed", client_address, exc_info=True)

    def begin(self) -> None:
        with self._idle:
            self.in_flight += 1

    def end(self) -> None:
        with self._idle:
            self.in_flight -= 1
            self._idle.notify_all()

    def drain(self, timeout: float) -> bool:
        """Stop accepting, wait up to `timeout` for requests in flight; True if none is left."""
        self.draining = True
        self.shutdown()
        with self._idle:
            done = self._idle.wait_for(lambda: self.in_flight == 0, timeout)
        self.server_close()
        return done


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: Prometheus reuses its connection
    # Headers and body go out in two writes: with Nagle's algorithm the second waits for the
    # client's delayed ACK (40 ms on Linux) on every keep-alive request.
    disable_nagle_algorithm = True
    timeout = IDLE_SECONDS
    server: Server

    def _respond(self) -> None:
        self.server.begin()
        try:
            url = urlsplit(self.path)
            try:
                response = self.server.api.handle(
                    self.command, url.path, url.query, self.headers.get("Accept", "")
                )
            except Exception:
                log.exception("%s %s failed", self.command, url.path)
                response = error(500, "internal error (logged)")
            self.send_response(response.status)
            self.send_header("Content-Type", response.content_type)
            self.send_header("Content-Length", str(len(response.body)))
            for name, value in response.headers:
                self.send_header(name, value)
            if self.server.draining:
                self.close_connection = True
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)
        finally:
            self.server.end()

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _respond

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s " + format, self.address_string(), *args)
