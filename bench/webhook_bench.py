"""bench/webhook_bench.py — N copy jobs completing, their webhooks caught on loopback.

Run by bench/webhooks.sh. A receiver (ThreadingHTTPServer) checks every delivery's signature as
docs/events.md shows, dedupes by event id, and notes when each arrived; the driver creates N copy
jobs of a small object through the gateway (16 at a time) and waits for every job's
`job.completed`. Latency is from the change (the event's `createdAt`, stamped by PostgreSQL in
the transaction of the change) to the receipt. Prints one JSON line of results.
"""

import argparse
import hashlib
import hmac
import json
import statistics
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def verified(secret: bytes, header: str, body: bytes, tolerance: int = 300) -> bool:
    """Gateway-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">."""
    fields = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    t, v1 = fields.get("t", ""), fields.get("v1", "")
    if not t.isdigit() or abs(time.time() - int(t)) > tolerance:
        return False
    expected = hmac.new(secret, t.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, v1)


class Receiver:
    def __init__(self, secret: bytes):
        self.secret = secret
        self.lock = threading.Lock()
        self.first_seen = {}  # event id → (job id, latency seconds)
        self.deliveries = 0
        self.bad_signatures = 0

    def handler(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                arrived = time.time()
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if not verified(receiver.secret, self.headers.get("Gateway-Signature", ""), body):
                    with receiver.lock:
                        receiver.bad_signatures += 1
                    self.send_response(400)
                    self.end_headers()
                    return
                event = json.loads(body)
                created = datetime.fromisoformat(event["createdAt"].replace("Z", "+00:00")).timestamp()
                with receiver.lock:
                    receiver.deliveries += 1
                    receiver.first_seen.setdefault(event["id"], (event["data"]["id"], arrived - created))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        return Handler


def call(method, url, token, body=None):
    request = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body else None,
                                     headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gateway", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--jobs", type=int, default=1000)
    args = parser.parse_args()

    receiver = Receiver(args.secret.encode())
    server = ThreadingHTTPServer(("127.0.0.1", args.port), receiver.handler())
    threading.Thread(target=server.serve_forever, daemon=True).start()

    source = {"accessLevel": "private", "key": "webhook-bench/source.bin"}
    started = time.time()

    def create(index):
        job = call("POST", args.gateway + "/v1/jobs", args.token,
                   {"type": "copy", "source": source, "destination": {"accessLevel": "private", "key": f"webhook-bench/copy-{index}.bin"}})
        return job["id"]

    with ThreadPoolExecutor(16) as pool:
        ids = set(pool.map(create, range(args.jobs)))
    created = time.time()
    deadline = time.time() + 300
    while time.time() < deadline:
        with receiver.lock:
            got = {job for job, _ in receiver.first_seen.values()} & ids
        if len(got) == len(ids):
            break
        time.sleep(0.05)
    finished = time.time()
    server.shutdown()
    with receiver.lock:
        ours = [latency for job, latency in receiver.first_seen.values() if job in ids]
        result = {
            "jobs": args.jobs,
            "events": len(ours),
            "deliveries": receiver.deliveries,
            "bad_signatures": receiver.bad_signatures,
            "create_seconds": round(created - started, 2),
            "all_delivered_seconds": round(finished - started, 2),
        }
    if ours:
        ours.sort()
        result["p50_ms"] = round(statistics.median(ours) * 1000, 1)
        result["p99_ms"] = round(ours[min(len(ours) - 1, int(len(ours) * 0.99))] * 1000, 1)
        result["max_ms"] = round(ours[-1] * 1000, 1)
    print(json.dumps(result))
    sys.exit(0 if len(ours) == args.jobs and receiver.bad_signatures == 0 else 1)


if __name__ == "__main__":
    main()
