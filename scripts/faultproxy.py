#!/usr/bin/env python3
"""faultproxy.py — a small HTTP/1.1 proxy that injects faults between the gateway and S3.

    faultproxy.py --upstream 127.0.0.1:18333 [--listen 127.0.0.1:0] [--match partNumber=]
                  [--method PUT] [--error 503:SlowDown] [--error-rate 0.2]
                  [--reset-rate 0.1] [--reset-after 1000] [--delay-ms 0]
                  [--stall-rate 0] [--stall-seconds 5] [--seed 1]

It prints `listening PORT` once it accepts connections. Every request is read whole, then, if
its target contains --match (and its method is --method, when given), one fault may be drawn:
  error   answer --error's status and S3 error code instead of forwarding (--error-rate)
  reset   forward, relay --reset-after bytes of the answer, then reset the connection (--reset-rate)
  stall   forward, then hold the answer --stall-seconds before relaying it (--stall-rate)
  delay   wait --delay-ms before forwarding (every matching request)
Requests go upstream on a fresh connection each (`Connection: close`), so faults are per request.
`GET /__faults` answers the counts so far as JSON. tc netem and toxiproxy are not available here.
"""
import argparse
import asyncio
import json
import random
import socket
import struct
import sys

STATS = {"requests": 0, "matched": 0, "errors": 0, "resets": 0, "stalls": 0, "delays": 0}


async def read_request(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = []
    length = 0
    for line in lines[1:]:
        if not line:
            continue
        name, _, value = line.partition(":")
        headers.append((name.strip(), value.strip()))
        if name.strip().lower() == "content-length":
            length = int(value.strip())
        if name.strip().lower() == "transfer-encoding":
            raise ValueError("chunked request bodies are not supported")
    body = await reader.readexactly(length) if length else b""
    return method, target, headers, body


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
        method, target, headers, body = await read_request(reader)
    except (asyncio.IncompleteReadError, ValueError, ConnectionError):
        writer.close()
        return
    if target.startswith("/__faults"):
        payload = json.dumps(STATS).encode()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n" % len(payload) + payload)
        await writer.drain()
        writer.close()
        return
    STATS["requests"] += 1
    fault = None
    if args.match in target and (args.method is None or args.method == method):
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
    up_writer.write(head.encode("latin-1") + body)
    await up_writer.drain()
    relayed = 0
    if fault == "stall":
        STATS["stalls"] += 1
        await asyncio.sleep(args.stall_seconds)
    try:
        while True:
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
