"""A TCP proxy on 127.0.0.1 that slows down or black-holes one service.

``FaultProxy(upstream_host, upstream_port)`` listens on a free loopback port
(``.port``, ``.url(scheme)``) and forwards every connection to the upstream,
in one of five modes, changeable at any time (new data follows the new mode):

- ``pass``: forward as is;
- ``delay``: hold every chunk the client sends for ``delay`` seconds before
  forwarding it (each HTTP request then takes that much longer);
- ``slow-answers``: forward what the client sends at once, hold every chunk
  the service sends back for ``delay`` seconds (the service acts at once, its
  answer comes late: a client killed meanwhile never learns what it did);
- ``blackhole``: accept connections and read what the client sends, but
  forward nothing and answer nothing (a hung service or BMC: the client
  waits until its own timeout);
- ``refuse``: reset every new connection at once (a service that is down: the
  client fails at once, as on a closed port); connections already open go on.

The proxy knows nothing about HTTP or TLS, so it stands in front of any service
(kube-apiserver over TLS, Ironic, Keystone, a BMC). ``connections`` counts the
connections accepted, ``requests`` the first line of each plain-HTTP request
(method and path). ``stop()`` closes everything.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time

MODES = ("pass", "delay", "slow-answers", "blackhole", "refuse")


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int, *, mode: str = "pass", delay: float = 0.0):
        self.upstream = (upstream_host, upstream_port)
        self.connections = 0
        #: the first line of each plain-HTTP request seen (``"POST /v1/allocations"``), in order
        self.requests: list[str] = []
        self.set(mode, delay)
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def url(self, scheme: str = "http", path: str = "") -> str:
        return "%s://127.0.0.1:%d%s" % (scheme, self.port, path)

    def set(self, mode: str, delay: float = 0.0) -> None:
        assert mode in MODES, mode
        self.mode, self.delay = mode, delay

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, dummy = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            self._track(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = None
        if self.mode == "refuse":
            # SO_LINGER 0: close sends a reset, as a closed port answers
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()
            return
        try:
            if self.mode != "blackhole":
                upstream = socket.create_connection(self.upstream, timeout=30)
                upstream.settimeout(None)
                self._track(upstream)
                threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()
            self._pump(client, upstream, True)
        except OSError:
            pass
        finally:
            for sock in (client, upstream):
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.close()

    def _pump(self, source: socket.socket, target: socket.socket | None, from_client: bool) -> None:
        """Copy ``source`` to ``target``; data from the client, and the answers in ``slow-answers``, follow the mode."""
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if from_client:
                    self._record(data)
                if (from_client and self.mode == "delay") or (not from_client and self.mode == "slow-answers"):
                    time.sleep(self.delay)
                if from_client and (self.mode == "blackhole" or target is None):
                    continue  # swallowed: the client waits for an answer that never comes
                target.sendall(data)
        except OSError:
            pass
        finally:
            if target is not None:
                with contextlib.suppress(OSError):
                    target.shutdown(socket.SHUT_WR)

    def _record(self, data: bytes) -> None:
        line = data.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) == 3 and parts[0] in ("GET", "POST", "PUT", "PATCH", "DELETE") and parts[2].startswith("HTTP/"):
            self.requests.append("%s %s" % (parts[0], parts[1].split("?", 1)[0]))

    def stop(self) -> None:
        self._stopped.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.close()
            self._sockets.clear()
