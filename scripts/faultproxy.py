#!/usr/bin/env python3
"""faultproxy.py — a small HTTP/1.1 proxy that injects faults between the gateway and S3.

    faultproxy.py --upstream 127.0.0.1:18333 [--listen 127.0.0.1:0] [--match partNumber=]
                  [--method PUT] [--error 503:SlowDown] [--error-rate 0.2]
                  [--reset-rate 0.1] [--reset-after 1000] [--delay-ms 0]
                  [--stall-rate 0] [--stall-seconds 5] [--flip-first 0] [--seed 1]

It prints `listening PORT` once it accepts connections. Every request is read whole, then, if
its target contains --match (and its method is --method, when given), one fault may be drawn:
  error   answer --error's status and S3 error code instead of forwarding (--error-rate)
  reset   forward, relay --reset-after bytes of the answer, then reset the connection (--reset-rate)
  stall   forward, then hold the answer --stall-seconds before relaying it (--stall-rate)
  delay   wait --delay-ms before forwarding (every matching request)
  flip    the first --flip-first matching requests with a body go upstream with one bit of the
          middle byte of their body flipped (signed headers unchanged): data corrupted in flight
Requests go upstream on a fresh connection each (`Connection: close`), so faults are per request.
tc netem and toxiproxy are not available here.

Control endpoints (paths starting `/__`, never forwarded):
  GET  /__faults            the counts so far, one flat JSON object of integers
  POST /__outage?seconds=N  an S3 outage: for N seconds every request, matching --match or not, is
                            answered with --error (503 SlowDown) and counted as `outage`;
                            seconds=0 ends it. Answers {"outageSeconds", "parts"}, where `parts`
                            is the list below as it stood when the outage began.
  GET  /__parts             every part S3 stored: [{"uploadId", "partNumber", "stored"}], `stored`
                            being how many times that part's PUT (UploadPart or UploadPartCopy: a
                            PUT with partNumber= and uploadId= in its query) got a 2xx from upstream.
`/__faults` also counts `parts_stored` (parts stored at least once) and `parts_stored_twice` (parts
stored more than once: sent again after S3 had them), and `outage_active` (1 during an outage).

Request bodies may come with Content-Length or chunked; they are read whole and sent upstream
with Content-Length. `Expect: 100-continue` is answered here (100 Continue) and not passed on.
"""
import argparse
import asyncio
import json
import random
import socket
import struct
import sys
import time
from urllib.parse import parse_qs, urlsplit

STATS = {"requests": 0, "matched": 0, "errors": 0, "resets": 0, "stalls": 0, "delays": 0, "outage": 0, "flips": 0}
# (uploadId, partNumber) -> how many times upstream answered that part's PUT with a 2xx.
PARTS = {}
# time.monotonic() at which the current outage ends (0: none).
OUTAGE = {"until": 0.0}


async def read_request(reader, writer):
    """Reads one request whole. Its headers come back as sent (signed ones must not change)
    but for Transfer-Encoding and Expect, which are dealt with here: a chunked body is decoded
    and gets a Content-Length instead, and 100-continue is answered."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = []
    length = 0
    chunked = False
    expect_continue = False
    for line in lines[1:]:
        if not line:
            continue
        name, _, value = line.partition(":")
        name, value = name.strip(), value.strip()
        lowered = name.lower()
        if lowered == "transfer-encoding":
            if value.lower() != "chunked":
                raise ValueError("only chunked transfer coding is supported")
            chunked = True
        elif lowered == "expect":
            expect_continue = value.lower() == "100-continue"
        else:
            headers.append((name, value))
            if lowered == "content-length":
                length = int(value)
    if expect_continue:
        # The client waits (a while) for this before it sends the body; we read the body
        # whole before deciding anything, so we always ask for it.
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    if chunked:
        body = await read_chunked(reader)
        headers.append(("Content-Length", str(len(body))))
    else:
        body = await reader.readexactly(length) if length else b""
    return method, target, headers, body


async def read_chunked(reader):
    """A chunked body (RFC 9112 section 7.1), decoded; trailers are read and dropped."""
    pieces = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            break
        pieces.append(await reader.readexactly(size))
        await reader.readexactly(2)  # the CRLF after the chunk
    while (await reader.readuntil(b"\r\n")) != b"\r\n":
        pass
    return b"".join(pieces)


def part_of(method, target):
    """(uploadId, partNumber) when the request stores a part (UploadPart, UploadPartCopy)."""
    if method != "PUT":
        return None
    query = parse_qs(urlsplit(target).query)
    if "partNumber" in query and "uploadId" in query:
        return query["uploadId"][0], int(query["partNumber"][0])
    return None


def parts_list():
    return [{"uploadId": u, "partNumber": n, "stored": c} for (u, n), c in sorted(PARTS.items())]


def outage_active():
    return time.monotonic() < OUTAGE["until"]


def json_answer(value):
    payload = json.dumps(value).encode()
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n" % len(payload) + payload)


def control(method, target):
    """The answer to a control request (path starting /__), or None when there is no such one."""
    url = urlsplit(target)
    if url.path == "/__faults":
        stats = dict(STATS)
        stats["parts_stored"] = len(PARTS)
        stats["parts_stored_twice"] = sum(1 for count in PARTS.values() if count > 1)
        stats["outage_active"] = int(outage_active())
        return json_answer(stats)
    if url.path == "/__parts":
        return json_answer(parts_list())
    if url.path == "/__outage" and method == "POST":
        seconds = float(parse_qs(url.query).get("seconds", ["0"])[0])
        OUTAGE["until"] = time.monotonic() + seconds if seconds > 0 else 0.0
        return json_answer({"outageSeconds": seconds, "parts": parts_list()})
    return None


def error_answer(status, code):
    body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"
            "<Message>injected by faultproxy</Message></Error>" % code).encode()
    return (("HTTP/1.1 %d Injected\r\nContent-Type: application/xml\r\nContent-Length: %d\r\n"
             "Connection: close\r\n\r\n") % (status, len(body))).encode() + body


def reset(writer):
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def handle(reader, writer, args, rng):
    try:
        method, target, headers, body = await read_request(reader, writer)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, ConnectionError):
        writer.close()
        return
    if target.startswith("/__"):
        answer = control(method, target)
        writer.write(answer or b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()
        return
    STATS["requests"] += 1
    fault = None
    if outage_active():
        # The body was read whole first, so the client sees the answer, not a reset.
        STATS["outage"] += 1
        fault = "outage"
    elif args.match in target and (args.method is None or args.method == method):
        STATS["matched"] += 1
        draw = rng.random()
        if draw < args.error_rate:
            fault = "error"
        elif draw < args.error_rate + args.reset_rate:
            fault = "reset"
        elif draw < args.error_rate + args.reset_rate + args.stall_rate:
            fault = "stall"
        if args.delay_ms:
            STATS["delays"] += 1
            await asyncio.sleep(args.delay_ms / 1000)
        if fault is None and body and STATS["flips"] < args.flip_first:
            STATS["flips"] += 1
            middle = len(body) // 2
            body = body[:middle] + bytes([body[middle] ^ 0x01]) + body[middle + 1:]
    if fault in ("error", "outage"):
        if fault == "error":
            STATS["errors"] += 1
        status, _, code = args.error.partition(":")
        writer.write(error_answer(int(status), code))
        await writer.drain()
        writer.close()
        return
    host, port = args.upstream.rsplit(":", 1)
    try:
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
    except OSError:
        writer.write(error_answer(502, "BadGateway"))
        writer.close()
        return
    head = "%s %s HTTP/1.1\r\n" % (method, target)
    head += "".join("%s: %s\r\n" % (n, v) for n, v in headers if n.lower() != "connection")
    head += "Connection: close\r\n\r\n"
    relayed = 0
    try:
        up_writer.write(head.encode("latin-1") + body)
        await up_writer.drain()
        # The status line first: a part whose PUT upstream answers 2xx is stored there, whatever
        # happens to the answer on its way back.
        chunk = await up_reader.readline()
        status = chunk.split(b" ", 2)[1] if chunk.count(b" ") >= 1 else b""
        part = part_of(method, target)
        if part is not None and status.startswith(b"2"):
            PARTS[part] = PARTS.get(part, 0) + 1
        if fault == "stall":
            STATS["stalls"] += 1
            await asyncio.sleep(args.stall_seconds)
        while True:
            if not chunk:
                chunk = await up_reader.read(65536)
            if not chunk:
                break
            if fault == "reset" and relayed + len(chunk) >= args.reset_after:
                writer.write(chunk[: max(0, args.reset_after - relayed)])
                await writer.drain()
                STATS["resets"] += 1
                reset(writer)
                up_writer.close()
                return
            relayed += len(chunk)
            writer.write(chunk)
            await writer.drain()
            chunk = b""
    except ConnectionError:
        pass
    up_writer.close()
    writer.close()


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--listen", default="127.0.0.1:0")
    parser.add_argument("--match", default="")
    parser.add_argument("--method")
    parser.add_argument("--error", default="503:SlowDown")
    parser.add_argument("--error-rate", type=float, default=0.0)
    parser.add_argument("--reset-rate", type=float, default=0.0)
    parser.add_argument("--reset-after", type=int, default=0)
    parser.add_argument("--stall-rate", type=float, default=0.0)
    parser.add_argument("--stall-seconds", type=float, default=5.0)
    parser.add_argument("--delay-ms", type=int, default=0)
    parser.add_argument("--flip-first", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    host, port = args.listen.rsplit(":", 1)
    server = await asyncio.start_server(lambda r, w: handle(r, w, args, rng), host, int(port))
    print("listening %d" % server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
