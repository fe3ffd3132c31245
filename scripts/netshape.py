#!/usr/bin/env python3
"""netshape.py — a network-shaping TCP proxy on loopback: bandwidth, latency and connection
resets on a schedule, for testing clients on a bad network (tc netem is not available here).

    netshape.py --route 127.0.0.1:0=127.0.0.1:8080 [--route LISTEN=UPSTREAM ...]
                [--profile 3g] [--up-rate B/S] [--down-rate B/S] [--latency-ms MS]
                [--reset-every BYTES] [--control 127.0.0.1:0]

Each --route listens on LISTEN and relays every connection's bytes to UPSTREAM and back, as
they are (it does not read HTTP, so signed requests pass untouched). All routes share one link:
  --up-rate      bytes per second from clients to upstreams, all connections together (0: no limit)
  --down-rate    bytes per second back to clients, all connections together (0: no limit)
  --latency-ms   added to every chunk in each direction (a round trip gains twice as much)
  --reset-every  after every this many bytes sent up (all connections together), the connection
                 carrying the byte that crosses the mark is reset (RST) on both sides
  --profile 3g   1 Mbit/s up (125000 B/s), 2 Mbit/s down, 150 ms each way (300 ms round trips),
                 a reset every 20 MiB; explicit options override it
It prints `listening PORT [PORT ...] control PORT` once every socket accepts. The control port
answers `GET /stats` with JSON: bytes up and down, connections, resets, and `idleSeconds`
(seconds since the last byte crossed in either direction) — what a test needs to see that a
paused transfer moves nothing. `POST /reset-counters` zeroes the byte counts.
"""
import argparse
import asyncio
import json
import socket
import struct
import sys
import time

PROFILES = {"3g": {"up_rate": 125_000, "down_rate": 250_000, "latency_ms": 150, "reset_every": 20 << 20}}
CHUNK = 16 * 1024
# Bytes read ahead of the link per direction of a connection: half a second of the direction's
# rate (at least 64 KiB; 1 MiB when it has no rate). Like a real link's bytes in flight, this pushes
# back on the sender, so a rate limit is felt by the sender, a sender that stops (paused, killed)
# leaves little still to cross, and a sender's progress is the link's, not a buffer filling.
READ_AHEAD_SECONDS = 0.5
# The clients' side of every connection is given a small window and segment size, as on a real slow
# link: over loopback (MSS 64 KiB, windows of megabytes) a sender's kernel would accept some 4 MiB
# per connection at once, which the link then needs long to carry while the sender sees no progress
# (with five parts in flight at 125 kB/s, over a minute: every request timeout would pass).
CLIENT_MSS = 1400
CLIENT_RECEIVE_BUFFER = 64 * 1024


class Link:
    """The shared link: one token bucket per direction, counters, and the reset schedule."""

    def __init__(self, up_rate, down_rate, latency_ms, reset_every):
        self.rates = {"up": up_rate, "down": down_rate}
        self.latency = latency_ms / 1000
        self.reset_every = reset_every
        self.next_reset = reset_every
        self.sent = {"up": 0, "down": 0}
        self.clock = {"up": time.monotonic(), "down": time.monotonic()}
        self.connections = 0
        self.resets = 0
        self.last_byte = time.monotonic()

    async def pace(self, direction, count):
        """Waits until `count` more bytes may cross in `direction` at its rate."""
        rate = self.rates[direction]
        if rate:
            start = max(self.clock[direction], time.monotonic())
            self.clock[direction] = start + count / rate
            delay = self.clock[direction] - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        self.sent[direction] += count
        self.last_byte = time.monotonic()

    def crosses_reset(self, count):
        """Whether `count` more bytes up cross the next reset mark (and moves the mark if so)."""
        if not self.reset_every or self.sent["up"] + count < self.next_reset:
            return False
        self.next_reset += self.reset_every
        return True

    def stats(self):
        return {"up": self.sent["up"], "down": self.sent["down"], "connections": self.connections,
                "resets": self.resets, "idleSeconds": round(time.monotonic() - self.last_byte, 3)}


def abort(writer):
    """Closes the connection with a reset (RST), not a FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()


async def pump(link, direction, reader, writer, peer):
    """Relays bytes from reader to writer: each chunk waits out the latency (in order), then the
    link's rate. A reset due on the way up aborts both sides."""
    rate = link.rates[direction]
    queue = asyncio.Queue(maxsize=max(4, int(rate * READ_AHEAD_SECONDS) // CHUNK) if rate else 64)

    async def read():
        try:
            while True:
                chunk = await reader.read(CHUNK)
                await queue.put((time.monotonic() + link.latency, chunk))
                if not chunk:
                    return
        except (ConnectionError, OSError):
            await queue.put((time.monotonic(), b""))

    reading = asyncio.ensure_future(read())
    try:
        while True:
            due, chunk = await queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if not chunk:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            if direction == "up" and link.crosses_reset(len(chunk)):
                link.resets += 1
                abort(writer)
                abort(peer)
                return
            await link.pace(direction, len(chunk))
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        abort(peer)
    finally:
        reading.cancel()


async def relay(link, upstream, reader, writer):
    host, port = upstream.rsplit(":", 1)
    try:
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
    except OSError:
        abort(writer)
        return
    link.connections += 1
    await asyncio.gather(
        pump(link, "up", reader, up_writer, writer), pump(link, "down", up_reader, writer, up_writer), return_exceptions=True)
    for w in (writer, up_writer):
        try:
            w.close()
        except Exception:
            pass


async def control(link, reader, writer):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        writer.close()
        return
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    if line.startswith("POST /reset-counters"):
        link.sent = {"up": 0, "down": 0}
        link.next_reset = link.reset_every
    body = json.dumps(link.stats()).encode()
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                 b"Connection: close\r\n\r\n" % len(body) + body)
    await writer.drain()
    writer.close()


def client_side_socket(host, port):
    """A listening socket whose connections get CLIENT_MSS and CLIENT_RECEIVE_BUFFER (set before
    `listen`, so the SYN-ACK carries them)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, CLIENT_RECEIVE_BUFFER)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, CLIENT_MSS)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def address(text):
    host, port = text.rsplit(":", 1)
    return host, int(port)


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--route", action="append", required=True, help="LISTEN=UPSTREAM, e.g. 127.0.0.1:0=127.0.0.1:8080")
    parser.add_argument("--profile", choices=sorted(PROFILES))
    parser.add_argument("--up-rate", type=int)
    parser.add_argument("--down-rate", type=int)
    parser.add_argument("--latency-ms", type=int)
    parser.add_argument("--reset-every", type=int)
    parser.add_argument("--control", default="127.0.0.1:0")
    args = parser.parse_args()
    settings = {"up_rate": 0, "down_rate": 0, "latency_ms": 0, "reset_every": 0}
    if args.profile:
        settings.update(PROFILES[args.profile])
    for name in settings:
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    link = Link(**settings)
    ports = []
    servers = []
    for route in args.route:
        listen, _, upstream = route.partition("=")
        server = await asyncio.start_server(lambda r, w, u=upstream: relay(link, u, r, w), sock=client_side_socket(*address(listen)))
        servers.append(server)
        ports.append(server.sockets[0].getsockname()[1])
    host, port = address(args.control)
    control_server = await asyncio.start_server(lambda r, w: control(link, r, w), host, port)
    servers.append(control_server)
    print("listening %s control %d" % (" ".join(map(str, ports)), control_server.sockets[0].getsockname()[1]), flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
