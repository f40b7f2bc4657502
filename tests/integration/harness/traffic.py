"""Traffic between the switch's endpoints: what reaches what, by ping and by TCP.

TEST FIXTURE ONLY. An isolation claim is proved on the wire, not read from an API: ping (ICMP, Debian's
``iputils-ping``) and a TCP connection that carries data both ways, from one :class:`~harness.switch.Endpoint`'s
namespace to another's address.

- :func:`serve_tcp` starts, in an endpoint's namespace, a listener that answers every connection with the
  endpoint's name followed by :data:`PAYLOAD_BYTES` bytes, so the client proves whom it reached and that full
  segments pass (a TX checksum problem lets the handshake through and stalls the data);
- :func:`ping` and :func:`tcp` try once and say what happened; :func:`wait_reaches` polls them until both
  succeed (NGS has just moved a port: a few seconds, then MAC learning), with a deadline, and
  :func:`assert_isolated` expects both to fail (ping 100 % loss over several probes, TCP refused or timed out)
  right after a positive control of the same moment has passed.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import sys
import time

from . import procs
from .switch import Endpoint

TCP_PORT = 7000
PAYLOAD_BYTES = 64 * 1024

_SERVER = """\
import socket, sys
name, port, size = sys.argv[1].encode(), int(sys.argv[2]), int(sys.argv[3])
server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("0.0.0.0", port))
server.listen(16)
while True:
    conn, peer = server.accept()
    with conn:
        conn.settimeout(5)
        try:
            hello = conn.recv(64)
            conn.sendall(name + b"\\n" + b"x" * size)
        except OSError as exc:
            print("from", peer, exc, flush=True)
"""

_CLIENT = """\
import socket, sys
host, port, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with socket.create_connection((host, port), timeout=float(sys.argv[4])) as conn:
    conn.sendall(b"hello\\n")
    data = b""
    while len(data) < size:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
name, _, rest = data.partition(b"\\n")
print(name.decode(), len(rest))
"""


@dataclasses.dataclass
class Probe:
    ok: bool
    detail: str


def serve_tcp(endpoint: Endpoint, workdir, port: int = TCP_PORT) -> procs.Proc:
    """Start the TCP listener in ``endpoint``'s namespace (stopped by the caller, or with the namespace)."""
    argv = ["ip", "netns", "exec", endpoint.netns, sys.executable, "-c", _SERVER, endpoint.name, str(port)]
    proc = procs.start_process(f"tcp-{endpoint.name}", [*argv, str(PAYLOAD_BYTES)], workdir)
    deadline = time.monotonic() + 20
    while endpoint.exec("bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{port}").returncode != 0:
        if not proc.alive() or time.monotonic() > deadline:
            raise procs.ServiceStartError(f"TCP listener in {endpoint.netns} not up\n{proc.log_tail()}")
        time.sleep(0.1)
    return proc


def ping(source: Endpoint, target: Endpoint, count: int = 1, deadline: int = 2) -> Probe:
    """``count`` pings (0.2 s apart, for ``deadline`` whole seconds at most) from ``source`` to ``target``; ok if
    any is answered."""
    result = source.exec("ping", "-n", "-q", "-c", str(count), "-i", "0.2", "-w", str(deadline), target.ip)
    lines = [line for line in result.stdout.splitlines() if "packet loss" in line] or [result.stderr.strip()]
    return Probe(result.returncode == 0, f"ping {source.name} -> {target.name} ({target.ip}): {lines[0]}")


def tcp(source: Endpoint, target: Endpoint, timeout: float = 3, port: int = TCP_PORT) -> Probe:
    """A TCP connection from ``source`` to ``target``'s listener: ok if ``target`` answered with all its data."""
    argv = [sys.executable, "-c", _CLIENT, target.ip, str(port), str(PAYLOAD_BYTES + 64), str(timeout)]
    result = source.exec(*argv, timeout=timeout * 4 + 10)
    answer = result.stdout.split()
    ok = result.returncode == 0 and answer == [target.name, str(PAYLOAD_BYTES)]
    detail = result.stdout.strip() or (result.stderr.strip().splitlines() or ["no output"])[-1]
    return Probe(ok, f"tcp {source.name} -> {target.name} ({target.ip}:{port}): {detail}")


def wait_reaches(source: Endpoint, target: Endpoint, timeout: float = 30) -> None:
    """Poll until ``source`` reaches ``target`` by ping and by TCP; raise with the last probes if not in time."""
    deadline = time.monotonic() + timeout
    while True:
        probes = [ping(source, target)]
        if probes[0].ok:
            probes.append(tcp(source, target))
            if probes[1].ok:
                return
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{source.name} does not reach {target.name} after {timeout:.0f}s: "
                + "; ".join(p.detail for p in probes)
            )
        time.sleep(0.3)


def assert_isolated(source: Endpoint, target: Endpoint, pings: int = 5) -> None:
    """``source`` does not reach ``target``: ``pings`` pings all lost, and no TCP connection (both tried at once,
    for two seconds)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        tried = [pool.submit(ping, source, target, pings, 2), pool.submit(tcp, source, target, 2)]
        probes = [future.result() for future in tried]
    reached = [p.detail for p in probes if p.ok]
    assert not reached, f"{source.name} reaches {target.name}: {reached}"
    assert "100% packet loss" in probes[0].detail, probes[0].detail
