#!/usr/bin/env python3
"""slowsource.py — a small HTTP source for import jobs: known bytes, served slowly.

    slowsource.py --size N [--rate 65536] [--ranges on|off] [--stop-after K] [--seed 7]
                  [--listen 127.0.0.1:0]
    slowsource.py --size N [--seed 7] --sha256     (prints the body's SHA-256 in hex and exits)

It prints `listening PORT` once it accepts connections, and serves the same body at any path:
N bytes where byte i is (i * 31 + seed) mod 251. The pattern repeats every 251 bytes, so a test
can build the expected bytes itself (or read `sha256` from /__stats, or run --sha256).

  --rate R        bytes per second for all answers together (0: as fast as the socket takes them)
  --ranges on     GET with `Range: bytes=a-b` (or a-, -n) answers 206 and Content-Range, and
                  answers say `Accept-Ranges: bytes`; `If-Match` other than the ETag is 412
  --ranges off    Range is ignored: every GET answers 200 with the whole body
  --stop-after K  once K body bytes have been sent (all answers together), every answer stops
                  sending and holds its connection open, silent, until the client hangs up:
                  a source that stalls

`GET /__stats` answers {"bytesSent", "requests", "rangeRequests", "size", "stopped", "sha256"};
control paths start with `/__` and do not count. One request per connection (`Connection: close`).
"""
import argparse
import asyncio
import hashlib
import json
import sys
import time

STATS = {"bytesSent": 0, "requests": 0, "rangeRequests": 0}
SLICE = 16384  # bytes written at a time; small enough that pacing is smooth at 64 KiB/s


class Body:
    """The N known bytes, produced on demand from the 251-byte pattern."""

    def __init__(self, size, seed):
        self.size = size
        self.pattern = bytes((i * 31 + seed) % 251 for i in range(251))
        self.etag = '"slowsource-%d-%d"' % (size, seed)
        self._sha256 = None

    def read(self, offset, length):
        start = offset % 251
        repeats = (start + length) // 251 + 1
        return (self.pattern * repeats)[start:start + length]

    def sha256(self):
        if self._sha256 is None:
            digest = hashlib.sha256()
            for offset in range(0, self.size, 1 << 20):
                digest.update(self.read(offset, min(1 << 20, self.size - offset)))
            self._sha256 = digest.hexdigest()
        return self._sha256


class Pacer:
    """One shared schedule for every answer: a slice of s bytes may go out s/rate seconds
    after the previous one (asyncio runs one coroutine at a time, so no lock)."""

    def __init__(self, rate):
        self.rate = rate
        self.next_time = 0.0

    async def wait(self, count):
        if self.rate <= 0:
            return
        now = time.monotonic()
        start = max(now, self.next_time)
        self.next_time = start + count / self.rate
        if start > now:
            await asyncio.sleep(start - now)


def parse_range(value, size):
    """(first, last) of a single `bytes=` range, "unsatisfiable", or None to send it whole."""
    if not value.startswith("bytes=") or "," in value:
        return None
    first, _, last = value[len("bytes="):].strip().partition("-")
    try:
        if first == "":  # the last n bytes
            count = int(last)
            if count <= 0 or size == 0:
                return "unsatisfiable"
            return max(0, size - count), size - 1
        first = int(first)
        last = int(last) if last else size - 1
    except ValueError:
        return None
    if first >= size or last < first:
        return "unsatisfiable"
    return first, min(last, size - 1)


def head_bytes(status, reason, headers):
    lines = ["HTTP/1.1 %d %s" % (status, reason)] + ["%s: %s" % pair for pair in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def handle(reader, writer, args, body, pacer):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        writer.close()
        return
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = (lines[0].split(" ", 2) + ["", ""])[:3]
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    try:
        if target.startswith("/__stats"):
            stats = dict(STATS, size=body.size, sha256=body.sha256(),
                         stopped=args.stop_after is not None and STATS["bytesSent"] >= args.stop_after)
            payload = json.dumps(stats).encode()
            writer.write(head_bytes(200, "OK", [("Content-Type", "application/json"),
                                                ("Content-Length", len(payload)), ("Connection", "close")]) + payload)
            await writer.drain()
            return
        STATS["requests"] += 1
        common = [("ETag", body.etag), ("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT"),
                  ("Content-Type", "application/octet-stream"), ("Connection", "close")]
        if method not in ("GET", "HEAD"):
            writer.write(head_bytes(405, "Method Not Allowed", [("Allow", "GET, HEAD"), ("Content-Length", 0)]))
            await writer.drain()
            return
        first, last = 0, body.size - 1
        status, reason = 200, "OK"
        if args.ranges == "on":
            common.append(("Accept-Ranges", "bytes"))
            if_match = headers.get("if-match")
            if if_match is not None and if_match != "*" and body.etag not in [t.strip() for t in if_match.split(",")]:
                writer.write(head_bytes(412, "Precondition Failed", common + [("Content-Length", 0)]))
                await writer.drain()
                return
            wanted = parse_range(headers["range"], body.size) if "range" in headers else None
            if wanted == "unsatisfiable":
                writer.write(head_bytes(416, "Range Not Satisfiable",
                                        common + [("Content-Range", "bytes */%d" % body.size), ("Content-Length", 0)]))
                await writer.drain()
                return
            if wanted is not None:
                STATS["rangeRequests"] += 1
                first, last = wanted
                status, reason = 206, "Partial Content"
                common.append(("Content-Range", "bytes %d-%d/%d" % (first, last, body.size)))
        length = last - first + 1 if body.size else 0
        writer.write(head_bytes(status, reason, common + [("Content-Length", length)]))
        await writer.drain()
        if method == "HEAD":
            return
        offset, end = first, first + length
        while offset < end:
            count = min(SLICE, end - offset)
            await pacer.wait(count)
            if args.stop_after is not None:
                # Checked after the wait: other answers may have sent meanwhile.
                count = min(count, max(0, args.stop_after - STATS["bytesSent"]))
                if count == 0:
                    # Stalled: send nothing more, keep the connection until the client goes.
                    await reader.read()
                    return
            writer.write(body.read(offset, count))
            STATS["bytesSent"] += count
            offset += count
            await writer.drain()
    except ConnectionError:
        pass  # the client hung up (an import's probe reads one byte and goes)
    finally:
        writer.close()


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--rate", type=int, default=0)
    parser.add_argument("--ranges", choices=["on", "off"], default="on")
    parser.add_argument("--stop-after", type=int)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--listen", default="127.0.0.1:0")
    parser.add_argument("--sha256", action="store_true", help="print the body's SHA-256 and exit")
    args = parser.parse_args()
    body = Body(args.size, args.seed)
    if args.sha256:
        print(body.sha256())
        return
    pacer = Pacer(args.rate)
    host, port = args.listen.rsplit(":", 1)
    server = await asyncio.start_server(lambda r, w: handle(r, w, args, body, pacer), host, int(port))
    print("listening %d" % server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
