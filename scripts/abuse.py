#!/usr/bin/env python3
"""scripts/abuse.py — what one ordinary signed-in account can do to a TransferGateway, replayed.

Run it through scripts/abuse.sh, which brings the local stack up, makes the database
`gateway_abuse`, copies the gateway binary aside and calls this file with --tmp, --bin and
--database-url. Each scenario starts its own gateway(s) on 127.0.0.1:18090-18091 with small
budgets (GATEWAY_MEMORY_BUDGET 64 MiB, GATEWAY_SPOOL_BUDGET 1 GiB, lease 2 s, imports from
127.0.0.1 allowed, log level warn) plus the settings the scenario needs, in the bucket
`transfer-gateway-abuse` (so no other gateway on the stack sweeps our staged objects or we
theirs), and replays one attack as an attacker holding a valid token would.

Each scenario prints ONE result line with its figures: the gateway's peak RSS (VmRSS of
/proc/PID/status sampled every 100 ms, over every gateway process of the scenario) and its own
measurements. Then a summary gives each scenario PASS, FAIL or SKIP. A scenario passes when its
peak RSS stays below GATEWAY_MEMORY_BUDGET + 64 MiB, its gateway is alive at the end, and its own
expectation holds. A measurement that cannot be taken is SKIP with the reason, never PASS.
The stack is shared: when PostgreSQL or SeaweedFS is restarted by someone else during a scenario,
the scenario is run again (three attempts at most, then SKIP), and its line says so.
Progress goes to stderr; the result lines and the summary to stdout. Exit status 1 if any FAIL.
Each attempt's gateways keep their logs in the temp dir (ABUSE_KEEP=1 in abuse.sh keeps it).
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import hashlib
import http.client
import json
import os
import random
import signal
import socket
import string
import struct
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import boto3
import jwt
from botocore.config import Config as BotoConfig

MiB = 1 << 20
GiB = 1 << 30
MEMORY_BUDGET = 64 * MiB
SPOOL_BUDGET = 1024 * MiB
RSS_LIMIT = MEMORY_BUDGET + 64 * MiB
PORT = 18090          # the scenario's gateway
PORT2 = 18091         # a second one, when a scenario needs two
FINAL = {"completed", "failed", "canceled"}
ACTIVE = ("pending", "queued", "running", "paused")


class Config:
    """Filled by main() from the command line and the environment abuse.sh exported."""
    root = Path(__file__).resolve().parent.parent
    tmp: Path
    bin: str
    db_url: str
    stats_url: str      # the same server, database `postgres`: stats queries add no transaction to ours
    db_name: str
    bucket = "transfer-gateway-abuse"
    quick = False
    run = ""
    secret = ""
    s3_endpoint = ""


CFG = Config()


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)


class Skip(Exception):
    """The scenario cannot be measured here (the reason is printed)."""


class Problem(Exception):
    """The attack could not be carried out as planned (a FAIL with this reason)."""


def pick(full, quick):
    return quick if CFG.quick else full


# ---------------------------------------------------------------------------------------------
# Data: deterministic, distinguishable bytes without holding them. Byte p of stream `seed` is byte
# p % 1 MiB of block p // 1 MiB, which is a random 1 MiB block (the same for the run) whose first
# 16 bytes carry (seed, block number): misplaced or mixed parts change the SHA-256.

BLOCK = os.urandom(MiB)


def chunks(seed: int, size: int, start: int = 0, step: int = MiB):
    pos = start
    while pos < size:
        index, inner = divmod(pos, MiB)
        block = struct.pack(">QQ", seed, index) + BLOCK[16:]
        end = min(MiB, size - index * MiB, inner + step)
        piece = block[inner:end]
        pos += len(piece)
        yield piece


_digests: dict = {}


def digest(seed: int, size: int, algo: str = "sha256", start: int = 0) -> bytes:
    key = (seed, size, algo, start)
    if key not in _digests:
        h = hashlib.new(algo)
        for c in chunks(seed, size, start):
            h.update(c)
        _digests[key] = h.digest()
    return _digests[key]


class GenReader:
    """A file-like reader over chunks(), for boto3's upload_fileobj."""

    def __init__(self, seed: int, size: int):
        self.it = chunks(seed, size)
        self.buf = b""

    def read(self, n: int = -1) -> bytes:
        while n < 0 or len(self.buf) < n:
            try:
                self.buf += next(self.it)
            except StopIteration:
                break
        if n < 0:
            out, self.buf = self.buf, b""
        else:
            out, self.buf = self.buf[:n], self.buf[n:]
        return out


# ---------------------------------------------------------------------------------------------
# S3, PostgreSQL, tokens

_s3 = None


def s3():
    global _s3
    if _s3 is None:
        _s3 = boto3.client("s3", endpoint_url=CFG.s3_endpoint, region_name=os.environ.get("GATEWAY_S3_REGION", "us-east-1"),
                           aws_access_key_id=os.environ["GATEWAY_S3_ACCESS_KEY_ID"],
                           aws_secret_access_key=os.environ["GATEWAY_S3_SECRET_ACCESS_KEY"],
                           config=BotoConfig(s3={"addressing_style": "path"}, retries={"max_attempts": 3},
                                             connect_timeout=10, read_timeout=120, max_pool_connections=32))
    return _s3


def s3_put(key: str, seed: int, size: int) -> None:
    from boto3.s3.transfer import TransferConfig
    if size <= 64 * MiB:
        s3().put_object(Bucket=CFG.bucket, Key=key, Body=b"".join(chunks(seed, size)))
    else:
        s3().upload_fileobj(GenReader(seed, size), CFG.bucket, key,
                            Config=TransferConfig(multipart_chunksize=32 * MiB, max_concurrency=2))


def s3_sha256(key: str) -> tuple[bytes, int]:
    body = s3().get_object(Bucket=CFG.bucket, Key=key)["Body"]
    h, n = hashlib.sha256(), 0
    for c in body.iter_chunks(MiB):
        h.update(c)
        n += len(c)
    return h.digest(), n


def s3_uploads(prefix: str) -> list:
    out, kwargs = [], {"Bucket": CFG.bucket, "Prefix": prefix}
    while True:
        page = s3().list_multipart_uploads(**kwargs)
        out += page.get("Uploads", [])
        if not page.get("IsTruncated"):
            return out
        kwargs.update(KeyMarker=page.get("NextKeyMarker", ""), UploadIdMarker=page.get("NextUploadIdMarker", ""))


def psql(sql: str, stats: bool = False, timeout: float = 15) -> str:
    try:
        out = subprocess.run(["psql", CFG.stats_url if stats else CFG.db_url, "-qAtX", "-v", "ON_ERROR_STOP=1", "-c", sql],
                             capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise Skip("psql is not installed: the database figures cannot be taken") from None
    if out.returncode != 0:
        raise Problem(f"psql failed: {out.stderr.strip()[:200]}")
    return out.stdout.strip()


def xact_commits() -> int:
    return int(psql(f"SELECT xact_commit FROM pg_stat_database WHERE datname = '{CFG.db_name}'", stats=True) or 0)


def backends() -> int:
    return int(psql(f"SELECT count(*) FROM pg_stat_activity WHERE datname = '{CFG.db_name}'", stats=True) or 0)


def token(sub: str, ttl: int = 7200) -> str:
    return jwt.encode({"sub": sub, "exp": int(time.time()) + ttl}, CFG.secret, algorithm="HS256")


# ---------------------------------------------------------------------------------------------
# HTTP to the gateway (stdlib http.client; a fresh connection per call, timeouts everywhere)

class Resp:
    def __init__(self, status: int, headers, body: bytes):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body

    def json(self):
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            return None

    @property
    def code(self):
        j = self.json()
        return j.get("code") if isinstance(j, dict) else None

    def __repr__(self):
        return f"{self.status} {self.code or ''}".strip()


def call(method: str, path: str, tok: str | None = None, body=None, json_body=None, headers=None,
         port: int = PORT, timeout: float = 30) -> Resp:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        h = {}
        if tok:
            h["Authorization"] = "Bearer " + tok
        if json_body is not None:
            body = json.dumps(json_body).encode()
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        return Resp(r.status, r.getheaders(), r.read())
    finally:
        conn.close()


def send_stream(method: str, path: str, tok: str, parts, length: int, headers=None, port: int = PORT,
                timeout: float = 180):
    """Sends a body from an iterator of bytes with Content-Length. Returns (Resp or None, bytes
    sent, error): a server that answers and closes early is still heard when it can be."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    sent, err = 0, None
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        conn.putheader("Authorization", "Bearer " + tok)
        conn.putheader("Content-Length", str(length))
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        conn.endheaders()
        for piece in parts:
            conn.send(piece)
            sent += len(piece)
    except OSError as e:
        err = e
    try:
        r = conn.getresponse()
        return Resp(r.status, r.getheaders(), r.read()), sent, err
    except (OSError, http.client.HTTPException) as e:
        return None, sent, err or e
    finally:
        conn.close()


def metrics_text(port: int = PORT, timeout: float = 10) -> str:
    return call("GET", "/metrics", port=port, timeout=timeout).body.decode()


def metric(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            try:
                return float(line.rsplit(" ", 1)[1])
            except ValueError:
                return None
    return None


def requests_by_status(text: str, route: str, method: str | None = None) -> collections.Counter:
    out = collections.Counter()
    for line in text.splitlines():
        if line.startswith("gateway_http_requests_total{") and f'route="{route}"' in line:
            if method and f'method="{method}"' not in line:
                continue
            status = line.split('status="', 1)[1].split('"', 1)[0]
            out[status] += int(float(line.rsplit(" ", 1)[1]))
    return out


# jobs --------------------------------------------------------------------------------------------

def create_job(tok: str, spec: dict, port: int = PORT) -> dict:
    r = call("POST", "/v1/jobs", tok, json_body=spec, port=port)
    if r.status != 201:
        raise Problem(f"POST /v1/jobs {spec.get('type')} answered {r.status} {r.body[:200]!r}")
    return r.json()


# Answers other than 200 to the job reads the scenarios poll with (reset per scenario): a 5xx
# there, with PostgreSQL and S3 up, is a finding of its own.
ODD_READS: collections.Counter = collections.Counter()


def get_job(tok: str, jid: str, port: int = PORT, timeout: float = 10) -> dict | None:
    try:
        r = call("GET", f"/v1/jobs/{jid}", tok, port=port, timeout=timeout)
    except OSError:
        return None
    if r.status != 200:
        ODD_READS[f"{r.status} {r.code}"] += 1
    return r.json() if r.status == 200 else None


def wait_job(tok: str, jid: str, pred, timeout: float, port: int = PORT, interval: float = 0.1, what: str = ""):
    deadline, job = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        job = get_job(tok, jid, port) or job
        if job is not None and pred(job):
            return job
        time.sleep(interval)
    state = f"{job.get('state')} parts {job.get('partsCompleted')} error {job.get('error')}" if job else "no answer"
    raise Problem(f"job {jid[:8]} not {what or 'as expected'} within {timeout:.0f}s (last: {state})")


def wait_final(tok: str, jid: str, timeout: float, port: int = PORT) -> dict:
    return wait_job(tok, jid, lambda j: j["state"] in FINAL, timeout, port, what="ended")


def err_code(job: dict | None) -> str | None:
    return ((job or {}).get("error") or {}).get("code")


def presign_get(tok: str, key: str, level: str = "private", port: int = PORT) -> str:
    r = call("POST", "/v1/presign", tok, json_body={"operation": "get", "accessLevel": level, "key": key}, port=port)
    if r.status != 200:
        raise Problem(f"presign get answered {r}")
    return r.json()["url"]


def upload_job_bytes(tok: str, jid: str, seed: int, size: int, port: int = PORT, tries: int = 40) -> tuple[bool, list]:
    """Sends an upload job's bytes as a careful client does: PUT, then after a 503 (with its
    Retry-After), a cut or a 409, PATCH from the job's bytesCommitted. Returns (completed, log)."""
    history, offset = [], 0
    for attempt in range(tries):
        headers = {"Content-Type": "application/octet-stream"}
        method = "PUT"
        if attempt:
            method = "PATCH"
            headers = {"Upload-Offset": str(offset), "Content-Type": "application/offset+octet-stream"}
        resp, sent, err = send_stream(method, f"/v1/jobs/{jid}/data", tok, chunks(seed, size, offset), size - offset,
                                      headers, port=port)
        history.append(f"{resp.status}" if resp else "cut")
        if resp is not None and resp.status == 200 and (resp.json() or {}).get("state") == "completed":
            return True, history
        if resp is not None and resp.status not in (200, 409, 503, 502) and resp.status < 500:
            return False, history
        wait = 1.0
        if resp is not None and resp.headers.get("retry-after", "").isdigit():
            wait = min(10.0, float(resp.headers["retry-after"]))
        time.sleep(wait)
        job = get_job(tok, jid, port)
        if job is None:
            continue
        if job["state"] in FINAL:
            return job["state"] == "completed", history
        offset = job["bytesCommitted"]
    return False, history


# ---------------------------------------------------------------------------------------------
# Gateways and the scenario context

PIDS_FILE: Path | None = None
ALL_GATEWAYS: list = []


def base_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    for k in ("GATEWAY_S3_ENDPOINT", "GATEWAY_S3_REGION", "GATEWAY_S3_ACCESS_KEY_ID", "GATEWAY_S3_SECRET_ACCESS_KEY",
              "GATEWAY_JWT_SECRET"):
        if os.environ.get(k):
            env[k] = os.environ[k]
    env.update(GATEWAY_DATABASE_URL=CFG.db_url, GATEWAY_S3_BUCKET=CFG.bucket, GATEWAY_HOST="127.0.0.1",
               GATEWAY_MEMORY_BUDGET=str(MEMORY_BUDGET), GATEWAY_SPOOL_BUDGET=str(SPOOL_BUDGET),
               GATEWAY_LEASE_SECONDS="2", GATEWAY_IMPORT_ALLOW_HOSTS="127.0.0.1",
               GATEWAY_LOG_LEVEL=os.environ.get("ABUSE_LOG_LEVEL", "warn"))
    return env


class Gateway:
    def __init__(self, ctx: "Ctx", port: int, env: dict):
        self.ctx, self.port, self.extra = ctx, port, {k: str(v) for k, v in env.items()}
        self.spool = ctx.dir / f"spool-{port}"
        self.spool.mkdir(parents=True, exist_ok=True)
        self.log_path = ctx.dir / f"gateway-{port}.log"
        self.proc: subprocess.Popen | None = None
        self.killed_by_us = False
        self.deaths: list[str] = []     # exits we did not cause

    def env(self) -> dict:
        env = base_env()
        env.update(GATEWAY_PORT=str(self.port), GATEWAY_SPOOL_DIR=str(self.spool))
        env.update(self.extra)
        return env

    def start(self, timeout: float = 30) -> "Gateway":
        self.note_death()
        with open(self.log_path, "ab") as f:
            f.write(f"----- start {time.strftime('%H:%M:%S')} {self.extra}\n".encode())
        logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen([CFG.bin, "serve"], env=self.env(), cwd=CFG.root, stdin=subprocess.DEVNULL,
                                     stdout=logf, stderr=logf, start_new_session=True)
        logf.close()
        self.killed_by_us = False
        if PIDS_FILE:
            with open(PIDS_FILE, "a") as f:
                f.write(f"{self.proc.pid}\n")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Problem(f"gateway on {self.port} exited at start ({self.proc.returncode}): {self.log_tail(5)}")
            try:
                if call("GET", "/healthz", port=self.port, timeout=2).status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        raise Problem(f"gateway on {self.port} not healthy within {timeout:.0f}s")

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def note_death(self) -> None:
        if self.proc is not None and self.proc.poll() is not None and not self.killed_by_us:
            rc = self.proc.returncode
            self.deaths.append(f"signal {-rc}" if rc < 0 else f"exit {rc}")
            self.killed_by_us = True    # counted once

    def kill9(self) -> None:
        if self.alive():
            self.killed_by_us = True
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, grace: float = 15) -> None:
        self.note_death()
        if not self.alive():
            return
        self.killed_by_us = True
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def log_tail(self, n: int = 8, contains: str | None = None) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        lines = [l for l in lines if not l.startswith("-----") and (contains is None or contains in l)]
        return " | ".join(l[:300] for l in lines[-n:])


def rss_bytes(pid: int | None) -> int | None:
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class Sampler(threading.Thread):
    """VmRSS of every gateway of the scenario, every 100 ms; keeps the peak."""

    def __init__(self, ctx: "Ctx"):
        super().__init__(daemon=True)
        self.ctx, self.peak, self.samples, self.stopped = ctx, 0, 0, threading.Event()

    def run(self):
        while not self.stopped.is_set():
            for gw in list(self.ctx.gateways):
                rss = rss_bytes(gw.pid) if gw.alive() else None
                if rss:
                    self.peak = max(self.peak, rss)
                    self.samples += 1
            self.stopped.wait(0.1)


class MetricSampler(threading.Thread):
    """Named gauges from /metrics (and optionally a directory's disk usage) every `interval`."""

    def __init__(self, port: int, names: list[str], interval: float = 0.1, du: Path | None = None):
        super().__init__(daemon=True)
        self.port, self.names, self.interval, self.du = port, names, interval, du
        self.series: dict[str, list] = {n: [] for n in names}
        self.series["du"] = []
        self.errors = 0
        self.stopped = threading.Event()

    def run(self):
        conn = None
        while not self.stopped.is_set():
            t = time.monotonic()
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/metrics")
                text = conn.getresponse().read().decode()
                for n in self.names:
                    v = metric(text, n)
                    if v is not None:
                        self.series[n].append((t, v))
            except (OSError, http.client.HTTPException):
                self.errors += 1
                if conn:
                    conn.close()
                conn = None
            if self.du is not None:
                self.series["du"].append((t, disk_usage(self.du)))
            self.stopped.wait(self.interval)
        if conn:
            conn.close()

    def peak(self, name: str) -> float:
        return max((v for _, v in self.series[name]), default=0)

    def finish(self):
        self.stopped.set()
        self.join(10)


def disk_usage(path: Path) -> int:
    """What `du` counts: allocated blocks of the files under path."""
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                pass
    return total


class Ctx:
    def __init__(self, name: str, attempt: int = 1):
        self.name = name
        self.dir = CFG.tmp / f"{name}-{attempt}"     # fresh spools and logs for every attempt
        self.dir.mkdir(parents=True, exist_ok=True)
        self.gateways: list[Gateway] = []
        self.figures: list[str] = []
        self.checks: list[tuple[bool, str]] = []
        self.identities: set[str] = set()
        self.servers: list = []

    def gateway(self, port: int = PORT, **env) -> Gateway:
        gw = Gateway(self, port, env)
        self.gateways.append(gw)
        ALL_GATEWAYS.append(gw)
        gw.start()
        housekeeping(self, gw)
        return gw

    def user(self, label: str) -> tuple[str, str]:
        sub = f"abuse-{CFG.run}-{label}"
        self.identities.add(sub)
        return sub, token(sub)

    def fig(self, text: str) -> None:
        self.figures.append(text)
        log(f"[{self.name}] {text}")

    def check(self, ok: bool, what: str) -> bool:
        self.checks.append((bool(ok), what))
        if not ok:
            log(f"[{self.name}] FAILED: {what}")
        return bool(ok)


def housekeeping(ctx: Ctx, gw: Gateway) -> None:
    """Ends what earlier scenarios (or a run that was killed) left active in our database, through
    the API as each owner (so S3 uploads are aborted too); SQL only as the last resort."""
    try:
        jobs = [l.split("|") for l in psql(f"SELECT id, owner FROM jobs WHERE state IN {ACTIVE}").splitlines() if l]
        for jid, owner in jobs:
            try:
                call("POST", f"/v1/jobs/{jid}/cancel", token(owner), port=gw.port, timeout=15)
            except OSError:
                pass
        ups = [l.split("|") for l in psql("SELECT id, owner FROM uploads WHERE state IN ('creating', 'open')").splitlines() if l]
        for uid, owner in ups:
            try:
                call("DELETE", f"/v1/uploads/{uid}", token(owner), port=gw.port, timeout=15)
            except OSError:
                pass
        psql(f"UPDATE jobs SET state = 'canceled', lease_owner = NULL, lease_expires_at = NULL, version = version + 1 "
             f"WHERE state IN {ACTIVE}")
        psql("UPDATE uploads SET state = 'aborted' WHERE state IN ('creating', 'open')")
        if jobs or ups:
            log(f"[{ctx.name}] housekeeping: ended {len(jobs)} job(s), {len(ups)} upload(s) left active")
    except (Problem, subprocess.TimeoutExpired) as e:
        log(f"[{ctx.name}] housekeeping failed: {e}")


# ---------------------------------------------------------------------------------------------
# A source server for imports: ignores Range, streams at a chosen rate, counts its connections.

class SourceServer:
    """GET /<tag>?size=N&rate=R&length=0|1&step=S answers 200 with N bytes of stream 7 at R bytes/s
    (0: as fast as it goes; written S bytes at a time, 64 KiB by default), with Content-Length unless
    length=0 (then the end of the body is the close)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.stats: dict = collections.defaultdict(lambda: {"opened": 0, "open": 0, "sent": 0, "closed": [], "ranges": 0})
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                url = urllib.parse.urlsplit(self.path)
                q = dict(urllib.parse.parse_qsl(url.query))
                tag = url.path.strip("/") or "root"
                size, rate = int(q.get("size", MiB)), float(q.get("rate", 0))
                step = max(1, int(q.get("step", 64 * 1024)))
                with_length = q.get("length", "1") == "1"
                with outer.lock:
                    s = outer.stats[tag]
                    s["opened"] += 1
                    s["open"] += 1
                    if self.headers.get("Range"):
                        s["ranges"] += 1
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/octet-stream")
                    if with_length:
                        self.send_header("Content-Length", str(size))
                    else:
                        self.send_header("Connection", "close")
                        self.close_connection = True
                    self.end_headers()
                    start = time.monotonic()
                    sent = 0
                    for piece in chunks(7, size, 0, step):
                        self.wfile.write(piece)
                        sent += len(piece)
                        with outer.lock:
                            s["sent"] += len(piece)
                        if rate > 0:
                            ahead = sent / rate - (time.monotonic() - start)
                            if ahead > 0:
                                time.sleep(ahead)
                    self.wfile.flush()
                except OSError:
                    self.close_connection = True
                finally:
                    with outer.lock:
                        s["open"] -= 1
                        s["closed"].append(time.monotonic())

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, tag: str, size: int, rate: float = 0, length: bool = True, step: int = 64 * 1024) -> str:
        return (f"http://127.0.0.1:{self.port}/{tag}?size={size}&rate={int(rate)}&length={1 if length else 0}"
                + (f"&step={step}" if step != 64 * 1024 else ""))

    def get(self, tag: str) -> dict:
        with self.lock:
            s = self.stats[tag]
            return {"opened": s["opened"], "open": s["open"], "sent": s["sent"], "closed": list(s["closed"]),
                    "ranges": s["ranges"]}

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


# ---------------------------------------------------------------------------------------------
# Raw HTTP for asyncio scenarios

async def read_response(reader: asyncio.StreamReader, timeout: float = 10) -> tuple[int, dict, bytes]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    if status in (100, 101):
        return status, headers, b""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            size = int((await asyncio.wait_for(reader.readline(), timeout)).split(b";")[0].strip(), 16)
            if size == 0:
                await asyncio.wait_for(reader.readline(), timeout)
                break
            body += await asyncio.wait_for(reader.readexactly(size + 2), timeout)
        return status, headers, body
    n = int(headers.get("content-length", "0"))
    body = await asyncio.wait_for(reader.readexactly(n), timeout) if n else b""
    return status, headers, body


def percentile(values: list, p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


# =============================================================================================
# Scenarios. Each takes its Ctx, starts its gateway(s) through ctx.gateway(), records figures
# with ctx.fig() and expectations with ctx.check(). The RSS and liveness rule is added after.
# =============================================================================================

def sc_crash(ctx: Ctx) -> None:
    """crash — a source that changes under a job, and a job that kills its holder.
    Replays: (1) a 60 MiB copy (concurrency 1, 5 MiB/s) paused after two parts, its source
    overwritten with 6 MiB, resumed; (2) an import from a presigned GET (ranged) whose gateway is
    SIGKILLed mid-import, the source replaced by one of another size, the gateway started again;
    (3) a slow copy whose holder is SIGKILLed while it runs, three times (restarted each time).
    Must hold: (1) and (2) end `failed` with error.code `source_changed` (once the old code
    trapped on the mismatch and took the process down); (3) ends `failed` with `crash_loop` on the
    fourth holder instead of taking instance after instance down."""
    gw = ctx.gateway()
    user, tok = ctx.user("crash")
    size = pick(60, 20) * MiB

    # (1) copy, paused, source overwritten, resumed
    s3_put(f"private/{user}/x/src", 11, size)
    job = create_job(tok, {"type": "copy", "concurrency": 1, "bandwidthLimit": 5 * MiB,
                           "source": {"accessLevel": "private", "key": "x/src"},
                           "destination": {"accessLevel": "private", "key": "x/dst"}})
    j = wait_job(tok, job["id"], lambda j: j["partsCompleted"] >= 2 or j["state"] in FINAL, 60, what="2 parts in")
    r = call("POST", f"/v1/jobs/{job['id']}/pause", tok)
    paused = wait_job(tok, job["id"], lambda j: j["state"] in ("paused",) + tuple(FINAL), 20, what="paused")
    s3_put(f"private/{user}/x/src", 12, 6 * MiB)
    t0 = time.monotonic()
    call("POST", f"/v1/jobs/{job['id']}/resume", tok)
    end = wait_final(tok, job["id"], 60)
    t_copy = time.monotonic() - t0
    ctx.fig(f"copy paused at {paused['partsCompleted']}/{paused['partsTotal']} parts (pause {r.status}), source "
            f"{size // MiB}->6 MiB, resumed: {end['state']}/{err_code(end)} in {t_copy:.1f}s")
    ctx.check(paused["state"] == "paused", f"copy was paused before the overwrite (was {paused['state']})")
    ctx.check(end["state"] == "failed" and err_code(end) == "source_changed",
              f"copy ends failed/source_changed (got {end['state']}/{err_code(end)})")
    ctx.check(gw.alive(), "gateway alive after the resumed copy")

    # (2) import cut by SIGKILL, source replaced by another size, gateway started again
    s3_put(f"private/{user}/x/isrc", 13, size)
    url = presign_get(tok, "x/isrc")
    job = create_job(tok, {"type": "import", "sourceUrl": url, "accessLevel": "private", "key": "x/idst",
                           "concurrency": 1, "bandwidthLimit": 5 * MiB})
    j = wait_job(tok, job["id"], lambda j: j["partsCompleted"] >= 2 or j["state"] in FINAL, 60, what="2 parts in")
    at_kill = f"{j['state']} {j['partsCompleted']}/{j['partsTotal']}"
    gw.kill9()
    s3_put(f"private/{user}/x/isrc", 14, size // 2 + 12345)
    gw.start()
    t0 = time.monotonic()
    end = wait_final(tok, job["id"], 60)
    ctx.fig(f"import SIGKILLed at {at_kill} parts, source {size // MiB}->{(size // 2 + 12345) / MiB:.1f} MiB, "
            f"restarted: {end['state']}/{err_code(end)} {time.monotonic() - t0:.1f}s after restart")
    ctx.check(j["state"] == "running", f"import was running when killed (was {j['state']})")
    ctx.check(end["state"] == "failed" and err_code(end) == "source_changed",
              f"import ends failed/source_changed (got {end['state']}/{err_code(end)})")

    # (3) a job whose holder dies three times
    s3_put(f"private/{user}/x/lsrc", 15, size)
    job = create_job(tok, {"type": "copy", "concurrency": 1, "bandwidthLimit": MiB,
                           "source": {"accessLevel": "private", "key": "x/lsrc"},
                           "destination": {"accessLevel": "private", "key": "x/ldst"}})
    kills = 0
    for k in range(3):
        j = wait_job(tok, job["id"], lambda j: (j["state"] == "running" and j["attempts"] >= k + 1) or j["state"] in FINAL,
                     30, what=f"running on holder {k + 1}")
        if j["state"] in FINAL:
            break
        time.sleep(0.3)
        gw.kill9()
        kills += 1
        gw.start()
    t0 = time.monotonic()
    end = wait_final(tok, job["id"], 30)
    ctx.fig(f"crash loop: {kills} SIGKILLs of the holder, then {end['state']}/{err_code(end)} "
            f"{time.monotonic() - t0:.1f}s after the 4th start (attempts {end['attempts']})")
    ctx.check(kills == 3 and end["state"] == "failed" and err_code(end) == "crash_loop",
              f"3 kills then failed/crash_loop (got {kills} kills, {end['state']}/{err_code(end)})")


def sc_longpolls(ctx: Ctx) -> None:
    """longpolls — long polls abandoned at once.
    Replays: 3,000 `GET /v1/jobs/{id}?wait=60` on one pending job of the attacker, 150 at a time,
    each client hanging up 50 ms after sending (GATEWAY_MAX_CONNECTIONS=200, per-client cap off).
    Must hold for the next 20 s: /healthz answers 200 every time, the open-connections gauge is back
    near 0 (<= 3, our own scrapes) within ~2 s (3 s allowed), and PostgreSQL stays quiet: under
    20 transactions/s in our database (idle is ~4) — the old code kept each abandoned wait polling.
    PostgreSQL publishes an idle backend's counts up to 10 s late, so the rate is judged from 11 s
    to 20 s after the attack; each second's figure is printed. Only 32 waits per identity are
    allowed: the 429s are counted, client- and server-side (499: the client had hung up)."""
    gw = ctx.gateway(GATEWAY_MAX_CONNECTIONS=200, GATEWAY_MAX_CONNECTIONS_PER_CLIENT=100000)
    user, tok = ctx.user("polls")
    job = create_job(tok, {"type": "upload", "accessLevel": "private", "key": "polls/p", "size": MiB})
    total, lanes, watch = pick(3000, 1000), 150, pick(20, 13)

    c0, t_idle = xact_commits(), time.monotonic()
    time.sleep(pick(5, 2))
    idle_tps = (xact_commits() - c0) / (time.monotonic() - t_idle)
    before = requests_by_status(metrics_text(), "/v1/jobs/{id}", "GET")

    request = (f"GET /v1/jobs/{job['id']}?wait=60 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               f"Authorization: Bearer {tok}\r\n\r\n").encode()
    outcome = collections.Counter()

    async def attack():
        queue = iter(range(total))

        async def lane():
            for _ in queue:
                try:
                    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", PORT), 5)
                except (OSError, asyncio.TimeoutError):
                    outcome["connect error"] += 1
                    continue
                try:
                    writer.write(request)
                    await writer.drain()
                    line = await asyncio.wait_for(reader.readline(), 0.05)
                    outcome[line.split(b" ")[1].decode() if line.startswith(b"HTTP/") else "closed"] += 1
                except asyncio.TimeoutError:
                    outcome["held, hung up"] += 1
                except OSError:
                    outcome["reset"] += 1
                finally:
                    writer.close()

        await asyncio.gather(*(lane() for _ in range(lanes)))

    c_attack, t_attack = xact_commits(), time.monotonic()
    asyncio.run(attack())
    t_end = time.monotonic()
    c_end = xact_commits()
    attack_tps = (c_end - c_attack) / (t_end - t_attack)

    # the next `watch` seconds: a normal client on /healthz, the gauge, the database
    sampler = MetricSampler(PORT, ["gateway_http_open_connections"], 0.1)
    sampler.start()
    health = collections.Counter()
    worst = 0.0
    per_second, last_c, last_t = [], c_end, t_end
    while time.monotonic() - t_end < watch:
        t = time.monotonic()
        if t - last_t >= 1.0:
            c = xact_commits()
            per_second.append((c - last_c) / (t - last_t))
            last_c, last_t = c, t
        try:
            status = call("GET", "/healthz", timeout=2).status
        except OSError as e:
            status = type(e).__name__
        worst = max(worst, time.monotonic() - t)
        health[status] += 1
        time.sleep(max(0, 0.1 - (time.monotonic() - t)))
    # PostgreSQL publishes an idle backend's counts up to 10 s late: the attack's own transactions
    # land in the first ~10 s. The rate after the attack is taken from 11 s on.
    late = per_second[11:]
    settled_tps = sum(late) / len(late) if late else float("nan")
    sampler.finish()
    series = sampler.series["gateway_http_open_connections"]
    # Back near 0: the first sample at <= 3 (our scraper, a /healthz probe, one closing). A leak
    # would show as a floor: the lowest value in the last 10 s must be <= 2. Single samples above
    # that later are probes overlapping on a loaded machine, not a leak.
    settle = next((max(0.0, t - t_end) for t, v in series if v <= 3), None)
    floor = min((v for t, v in series if t - t_end >= watch - 10), default=None)
    after = requests_by_status(metrics_text(), "/v1/jobs/{id}", "GET")
    server = {k: after[k] - before.get(k, 0) for k in after if after[k] - before.get(k, 0)}
    non200 = sum(v for k, v in health.items() if k != 200)
    open_first = series[0][1] if series else None
    # the gauge's highest value in each second after the attack
    per_second_open = [max((v for t, v in series if k <= t - t_end < k + 1), default=-1) for k in range(watch)]
    ctx.fig(f"{total} polls in {t_end - t_attack:.1f}s: client saw {dict(outcome)}; server counted {server}; "
            f"next {watch}s: /healthz {sum(health.values())} probes, {non200} non-200 (worst {worst * 1000:.0f} ms); "
            f"open connections {open_first:.0f} at the end of the attack, <=3 after "
            f"{'never' if settle is None else f'{settle:.1f}s'}, lowest in the last 10 s {floor} (highest each second: "
            f"{' '.join(f'{v:.0f}' for v in per_second_open)}); PostgreSQL {idle_tps:.1f} tx/s idle, "
            f"{attack_tps:.1f} during the attack (as published), {settled_tps:.1f} from 11 s to {watch} s after it "
            f"(each second after: {' '.join(f'{v:.0f}' for v in per_second)})")
    ctx.check(non200 == 0, f"/healthz always 200 ({non200} not)")
    ctx.check(settle is not None and settle <= 3.0, "open connections back to <= 3 within ~2 s (3 s allowed)")
    ctx.check(floor is not None and floor <= 2, f"no connection left counted (lowest in the last 10 s: {floor})")
    ctx.check(settled_tps < max(20.0, 3 * idle_tps), f"PostgreSQL quiet after the attack ({settled_tps:.1f} tx/s)")
    ctx.check(outcome.get("500", 0) == 0 and server.get("500", 0) == 0, "no 500")


def sc_memory(ctx: Ctx) -> None:
    """memory — huge parts through a 64 MiB memory budget.
    Replays: eight concurrent upload jobs of ~300 MiB with 240 MiB parts (PUT /v1/jobs/{id}/data,
    continued with PATCH after a 503 or a cut, as a careful client does) and, at the same time, one
    import with 256 MiB parts and concurrency 8 from a presigned GET of a ~600 MiB object.
    Must hold: peak RSS < 128 MiB (the old code held whole parts in memory), every object
    byte-identical (SHA-256 through boto3)."""
    gw = ctx.gateway()
    user, tok = ctx.user("memory")
    n_up = 8
    up_size = pick(300 * MiB + 4321, 24 * MiB + 4321)
    up_part = pick(251658240, 10 * MiB)
    imp_size = pick(600 * MiB + 777, 60 * MiB + 777)
    imp_part = pick(268435456, 20 * MiB)
    log(f"[memory] putting the {imp_size / MiB:.0f} MiB import source")
    s3_put(f"private/{user}/m/source", 30, imp_size)
    url = presign_get(tok, "m/source")
    jobs = [create_job(tok, {"type": "upload", "accessLevel": "private", "key": f"m/up{i}", "size": up_size,
                             "partSize": up_part}) for i in range(n_up)]
    results: dict = {}

    def run_upload(i, jid):
        try:
            results[i] = upload_job_bytes(tok, jid, 100 + i, up_size)
        except Exception as e:   # noqa: BLE001 - reported as the upload's outcome
            results[i] = (False, [f"{type(e).__name__}: {e}"])

    t0 = time.monotonic()
    threads = [threading.Thread(target=run_upload, args=(i, j["id"]), daemon=True) for i, j in enumerate(jobs)]
    for t in threads:
        t.start()
    imp = create_job(tok, {"type": "import", "sourceUrl": url, "accessLevel": "private", "key": "m/imported",
                           "partSize": imp_part, "concurrency": 8})
    for t in threads:
        t.join(900)
    imp_end = wait_final(tok, imp["id"], 600)
    elapsed = time.monotonic() - t0
    completed = sum(1 for ok, _ in results.values() if ok)
    tries = collections.Counter(s for _, h in results.values() for s in h)
    log("[memory] checking SHA-256 of every object")
    identical = 0
    for i in range(n_up):
        if results.get(i, (False,))[0]:
            sha, n = s3_sha256(f"private/{user}/m/up{i}")
            identical += sha == digest(100 + i, up_size)
    imp_ok = False
    if imp_end["state"] == "completed":
        sha, n = s3_sha256(f"private/{user}/m/imported")
        imp_ok = sha == digest(30, imp_size)
    ctx.fig(f"{n_up} uploads of {up_size / MiB:.0f} MiB ({up_part // MiB} MiB parts): {completed} completed, "
            f"{identical} byte-identical, requests {dict(tries)}; import {imp_size / MiB:.0f} MiB "
            f"({imp_part // MiB} MiB parts x8): {imp_end['state']}/{err_code(imp_end)}, "
            f"{'identical' if imp_ok else 'NOT identical'}; {elapsed:.0f}s")
    ctx.check(identical == n_up, f"{n_up}/{n_up} uploads byte-identical ({identical})")
    ctx.check(imp_ok, "import completed byte-identical")


def sc_metrics(ctx: Ctx) -> None:
    """metrics — made-up methods against the metrics' labels.
    Replays: 60,000 requests with a random made-up method each (`FOO1234`-like), over four
    kept-alive connections (pipelined in batches of 100), on /healthz, /v1/jobs and random unknown
    paths.
    Must hold: /metrics does not grow with the number of methods (or paths): less than 16 KiB
    more, at most 8 method labels; RSS grows less than 16 MiB."""
    gw = ctx.gateway()
    total = pick(60000, 12000)
    text0 = metrics_text()
    rss0 = rss_bytes(gw.pid)
    statuses = collections.Counter()
    reconnects = [0]

    def make() -> bytes:
        method = "".join(random.choices(string.ascii_uppercase, k=3)) + str(random.randint(0, 99999))
        path = random.choice(["/healthz", "/v1/jobs", "/x/" + "".join(random.choices(string.ascii_lowercase, k=12))])
        return f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()

    async def lane(n: int):
        todo = [make() for _ in range(n)]
        reader = writer = None
        while todo:
            if writer is None:
                reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", PORT), 5)
            batch = todo[:100]
            writer.write(b"".join(batch))
            await writer.drain()
            done = 0
            try:
                for _ in batch:
                    status, headers, _ = await read_response(reader)
                    statuses[status] += 1
                    done += 1
                    if headers.get("connection", "").lower() == "close":
                        raise ConnectionResetError("close")
            except (asyncio.IncompleteReadError, ConnectionError, asyncio.TimeoutError):
                writer.close()
                writer = None
                reconnects[0] += 1
            todo = todo[done:]
        if writer:
            writer.close()

    async def flood():
        await asyncio.gather(*(lane(total // 4) for _ in range(4)))

    t0 = time.monotonic()
    asyncio.run(flood())
    elapsed = time.monotonic() - t0
    time.sleep(1)
    text1 = metrics_text()
    rss1 = rss_bytes(gw.pid)
    methods = {l.split('method="', 1)[1].split('"', 1)[0] for l in text1.splitlines() if 'method="' in l}
    routes = {l.split('route="', 1)[1].split('"', 1)[0] for l in text1.splitlines() if 'route="' in l}
    growth = len(text1) - len(text0)
    ctx.fig(f"{sum(statuses.values())} requests in {elapsed:.1f}s ({dict(statuses)}, {reconnects[0]} reconnects); "
            f"/metrics {len(text0)} -> {len(text1)} bytes, method labels {sorted(methods)}, {len(routes)} routes; "
            f"RSS {rss0 / MiB:.1f} -> {rss1 / MiB:.1f} MiB")
    ctx.check(sum(statuses.values()) == total, f"every request answered ({sum(statuses.values())}/{total})")
    ctx.check(growth < 16 * 1024 and len(methods) <= 8, f"/metrics bounded (+{growth} bytes, {len(methods)} methods)")
    ctx.check(rss1 - rss0 < 16 * MiB, f"RSS grew {(rss1 - rss0) / MiB:.1f} MiB (< 16)")
    ctx.check(statuses.get(500, 0) == 0, "no 500")


def sc_imports(ctx: Ctx) -> None:
    """imports — a slow source that ignores Range.
    Replays: a local HTTP server that answers every GET with the whole 50 MiB at ~1 MiB/s:
    (a) an import with timeoutSeconds 3; (b) an import canceled after 2 s; (c) eight such imports
    by user A, then a 16-byte copy by user B.
    Must hold: (a) `failed` with job_timeout within ~5 s (6 s allowed) — the old code let the
    streamed read run past the job's lifetime; (b) `canceled`, and the source connection closed
    within ~2 s (3 s allowed); (c) B's copy completes within ~5 s (7 s allowed): claims are fair
    across identities and one of A's jobs yields its worker between parts; and, as in (b),
    canceling A's eight closes their source connections within ~2 s (3 s allowed)."""
    src = SourceServer()
    ctx.servers.append(src)
    gw = ctx.gateway()
    a, tok_a = ctx.user("importsa")
    b, tok_b = ctx.user("importsb")
    size, rate = pick(50, 12) * MiB, MiB

    # (a) timeout
    t0 = time.monotonic()
    job = create_job(tok_a, {"type": "import", "sourceUrl": src.url("timeout", size, rate), "accessLevel": "private",
                             "key": "i/timeout", "timeoutSeconds": 3})
    end = wait_final(tok_a, job["id"], 30)
    t_a = time.monotonic() - t0
    time.sleep(1)
    st = src.get("timeout")
    ctx.fig(f"(a) timeoutSeconds 3: {end['state']}/{err_code(end)} after {t_a:.1f}s "
            f"(source: {st['opened']} GETs, {st['ranges']} with Range, {st['open']} still open)")
    ctx.check(end["state"] == "failed" and err_code(end) == "job_timeout" and t_a <= 6,
              f"(a) failed/job_timeout within ~5 s (got {end['state']}/{err_code(end)} in {t_a:.1f}s)")

    # (b) cancel after 2 s
    job = create_job(tok_a, {"type": "import", "sourceUrl": src.url("cancel", size, rate), "accessLevel": "private",
                             "key": "i/cancel"})
    time.sleep(2)
    opened_before = src.get("cancel")["opened"]
    t0 = time.monotonic()
    r = call("POST", f"/v1/jobs/{job['id']}/cancel", tok_a)
    closed_after = None
    while time.monotonic() - t0 < 10:
        if src.get("cancel")["open"] == 0:
            closed_after = time.monotonic() - t0
            break
        time.sleep(0.05)
    end = wait_final(tok_a, job["id"], 20)
    ctx.fig(f"(b) cancel after 2s ({r.status}, source GETs {opened_before}): {end['state']}, source connection "
            f"closed {'never (10 s)' if closed_after is None else f'{closed_after:.2f}s'} after the cancel")
    ctx.check(end["state"] == "canceled", f"(b) canceled (got {end['state']})")
    ctx.check(opened_before > 0 and closed_after is not None and closed_after <= 3,
              "(b) source connection closed within ~2 s of the cancel (3 s allowed)")

    # (c) eight slow imports by A, then a tiny copy by B
    ids = [create_job(tok_a, {"type": "import", "sourceUrl": src.url(f"fair{i}", size, rate), "accessLevel": "private",
                              "key": f"i/fair{i}"})["id"] for i in range(8)]
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        running = sum(1 for i in ids if (get_job(tok_a, i) or {}).get("state") == "running")
        if running == 8 and all(src.get(f"fair{i}")["open"] > 0 for i in range(8)):
            break
        time.sleep(0.2)
    s3_put(f"private/{b}/tiny", 40, 16)
    t0 = time.monotonic()
    job = create_job(tok_b, {"type": "copy", "source": {"accessLevel": "private", "key": "tiny"},
                             "destination": {"accessLevel": "private", "key": "tiny-copy"}})
    end = wait_final(tok_b, job["id"], 90)
    t_c = time.monotonic() - t0
    a_states = collections.Counter((get_job(tok_a, i) or {}).get("state") for i in ids)
    ctx.fig(f"(c) 8 slow imports by A ({running} running), B's 16-byte copy: {end['state']} after {t_c:.1f}s "
            f"(A's jobs then: {dict(a_states)})")
    ctx.check(end["state"] == "completed" and t_c <= 7, f"(c) B's copy completed within ~5 s (7 s allowed; {t_c:.1f}s)")
    open_before = sum(src.get(f"fair{i}")["open"] for i in range(8))
    for i in ids:
        call("POST", f"/v1/jobs/{i}/cancel", tok_a)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 10 and any(src.get(f"fair{i}")["open"] for i in range(8)):
        time.sleep(0.1)
    left = sum(src.get(f"fair{i}")["open"] for i in range(8))
    opened = sum(src.get(f"fair{i}")["opened"] for i in range(8))
    a_end = collections.Counter((get_job(tok_a, i) or {}).get("state") for i in ids)
    ctx.fig(f"canceling A's 8 (their source connections: {opened} opened, {open_before} open): {left} still open "
            f"{time.monotonic() - t0:.1f}s later (A's jobs: {dict(a_end)})")
    ctx.check(left == 0 and time.monotonic() - t0 <= 3,
              f"(c) canceling A's imports closes their source connections within ~2 s (3 s allowed; {left} open)")


def sc_tails(ctx: Ctx) -> None:
    """tails — a big tail, then one more byte.
    Replays: an upload job of 500 MiB with 240 MiB parts; PATCH 100 MiB at offset 0 (less than a
    part, so all of it is tail), then a 1-byte PATCH at the returned Upload-Offset.
    Must hold: peak RSS < 128 MiB and the 1-byte PATCH takes well under 2 s (the old code kept the
    tail in memory and in one PostgreSQL bytea, rewritten whole on every PATCH)."""
    gw = ctx.gateway()
    user, tok = ctx.user("tails")
    first = pick(100, 40) * MiB
    job = create_job(tok, {"type": "upload", "accessLevel": "private", "key": "t/big", "size": 500 * MiB,
                           "partSize": 251658240})
    headers = {"Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"}
    t0 = time.monotonic()
    resp, sent, err = send_stream("PATCH", f"/v1/jobs/{job['id']}/data", tok, chunks(50, 500 * MiB, 0), first, headers)
    t_first = time.monotonic() - t0
    if resp is None:
        raise Problem(f"the {first // MiB} MiB PATCH got no answer ({err})")
    offset = resp.headers.get("upload-offset")
    one = bytes(next(chunks(50, 500 * MiB, first))[:1])
    t0 = time.monotonic()
    resp2 = call("PATCH", f"/v1/jobs/{job['id']}/data", tok, body=one,
                 headers={"Upload-Offset": str(offset), "Content-Type": "application/offset+octet-stream"}, timeout=60)
    t_one = time.monotonic() - t0
    j = get_job(tok, job["id"]) or {}
    ctx.fig(f"PATCH {first // MiB} MiB: {resp.status} Upload-Offset {offset} in {t_first:.1f}s; 1-byte PATCH: "
            f"{resp2.status} Upload-Offset {resp2.headers.get('upload-offset')} in {t_one:.3f}s; job {j.get('state')} "
            f"bytesCommitted {j.get('bytesCommitted')}")
    ctx.check(resp.status == 200 and offset == str(first), f"first PATCH 200 with Upload-Offset {first} (got {resp.status} {offset})")
    ctx.check(resp2.status == 200 and resp2.headers.get("upload-offset") == str(first + 1),
              f"1-byte PATCH 200 with Upload-Offset {first + 1} (got {resp2.status} {resp2.headers.get('upload-offset')})")
    ctx.check(t_one < 2.0, f"1-byte PATCH fast ({t_one:.3f}s < 2 s)")


def sc_tus(ctx: Ctx) -> None:
    """tus — many checksummed chunks at once.
    Replays (with GATEWAY_USER_MAX_ACTIVE_JOBS=32, since the default quota of 16 active jobs would
    refuse the 17th tus upload: the bound must hold however generous the quotas):
    24 parallel tus uploads of 64 MiB, each sent in one PATCH with
    `Upload-Checksum: sha1 <base64>` (a 503 is retried from HEAD's Upload-Offset after its
    Retry-After); and one PATCH whose checksum is wrong.
    Must hold: peak RSS < 128 MiB (the old code held each checksummed chunk in memory, up to 64 MiB
    apiece), every completed object byte-identical, and the wrong checksum answered 460 with
    nothing kept (HEAD says Upload-Offset 0)."""
    gw = ctx.gateway(GATEWAY_USER_MAX_ACTIVE_JOBS=32)
    user, tok = ctx.user("tus")
    n, size = pick(24, 8), pick(64, 8) * MiB
    tus_h = {"Tus-Resumable": "1.0.0"}

    def create(key: str, length: int) -> str:
        meta = "key " + base64.b64encode(key.encode()).decode()
        r = call("POST", "/v1/tus/", tok, headers={**tus_h, "Upload-Length": str(length), "Upload-Metadata": meta})
        if r.status != 201:
            raise Problem(f"tus create answered {r}")
        return r.headers["location"]

    def head_offset(loc: str) -> int | None:
        r = call("HEAD", loc, tok, headers=tus_h)
        return int(r.headers["upload-offset"]) if r.status == 200 and "upload-offset" in r.headers else None

    locations = [create(f"tus/u{i}", size) for i in range(n)]
    outcome: dict = {}

    def send(i: int, loc: str):
        history, offset = [], 0
        for _ in range(20):
            sha1 = base64.b64encode(digest(200 + i, size, "sha1", offset)).decode()
            resp, sent, err = send_stream("PATCH", loc, tok, chunks(200 + i, size, offset), size - offset,
                                          {**tus_h, "Upload-Offset": str(offset), "Upload-Checksum": f"sha1 {sha1}",
                                           "Content-Type": "application/offset+octet-stream"})
            history.append(str(resp.status) if resp else "cut")
            if resp is not None and resp.status == 204 and resp.headers.get("upload-offset") == str(size):
                outcome[i] = (True, history)
                return
            if resp is not None and resp.status not in (204, 409, 503) and resp.status < 500:
                break
            wait = resp.headers.get("retry-after", "1") if resp else "1"
            time.sleep(min(10, float(wait) if wait.isdigit() else 1))
            got = head_offset(loc)
            offset = got if got is not None else offset
            if offset == size:
                outcome[i] = (True, history)
                return
        outcome[i] = (False, history)

    t0 = time.monotonic()
    threads = [threading.Thread(target=send, args=(i, loc), daemon=True) for i, loc in enumerate(locations)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(900)
    elapsed = time.monotonic() - t0
    tries = collections.Counter(s for _, h in outcome.values() for s in h)
    done = [i for i, (ok, _) in outcome.items() if ok]
    log("[tus] checking SHA-256 of every object")
    identical = sum(1 for i in done if s3_sha256(f"private/{user}/tus/u{i}")[0] == digest(200 + i, size))

    # a wrong checksum
    loc = create("tus/wrong", 8 * MiB)
    wrong = base64.b64encode(hashlib.sha1(b"not the body").digest()).decode()
    resp, _, err = send_stream("PATCH", loc, tok, chunks(300, 8 * MiB), 8 * MiB,
                               {**tus_h, "Upload-Offset": "0", "Upload-Checksum": f"sha1 {wrong}",
                                "Content-Type": "application/offset+octet-stream"})
    kept = head_offset(loc)
    ctx.fig(f"{n} x {size // MiB} MiB checksummed PATCHes in {elapsed:.0f}s: {len(done)} completed, {identical} "
            f"byte-identical, answers {dict(tries)}; wrong checksum: {resp.status if resp else err} "
            f"{resp.code if resp else ''}, HEAD Upload-Offset {kept}")
    ctx.check(identical == n, f"{n}/{n} tus uploads completed byte-identical ({identical})")
    ctx.check(resp is not None and resp.status == 460 and kept == 0, "wrong checksum: 460 and Upload-Offset 0")


def sc_spool(ctx: Ctx) -> None:
    """spool — filling the disk.
    Replays: (a) with GATEWAY_MAX_OBJECT_SIZE=10485760, an import of a 300 MiB source that ignores
    Range, once with Content-Length and once without (the end is the close); (b) with
    GATEWAY_SPOOL_BUDGET=268435456, sixteen download jobs of one 64 MiB object.
    Must hold: (a) each import fails EntityTooLarge within seconds and the spool gauge never passes
    ~10 MiB (11 MiB allowed) — the old code spooled the whole body first; (b) the sampled spool gauge
    and the spool directory's disk usage never pass 256 MiB (du may add ext4's 4 KiB extent block
    per file), and — the fairness rule of `imports` (c) — while the spool is full, another
    identity's 16-byte copy still completes (within 15 s): a full spool may hold downloads back,
    not every worker of the instance.
    (c) The spool share and stalled uploads with huge parts: on (b)'s gateway, upload
    jobs with a partSize of 25% of its spool (64 MiB) and 1 MiB more; then, with
    GATEWAY_SPOOL_BUDGET=24 GiB (one identity's 25% share, 6 GiB, admits S3's largest part, 5 GiB;
    nothing is written to disk unless sent), two upload jobs of A with 5 GiB parts,
    each PUT announcing 5 GiB + 12345 bytes, sending 1,000 and stalling; meanwhile another identity's
    upload job (12 MiB; quick 4) and tus creation-with-upload (the same size).
    Must hold: (c) the partSize above the share is 400 (the old gateway took up to the whole
    budget), the share itself 201; the spool gauge (gateway_spool_used_bytes)
    and the spool's disk usage stay <= 8 MiB while A's two hold (the old gateway reserved each
    whole 5 GiB part before its first byte, and two of them made everyone else's PUT 503 after 5 s);
    the other identity's upload job and tus upload complete byte-identical within 10 s each."""
    src = SourceServer()
    ctx.servers.append(src)
    gw = ctx.gateway(GATEWAY_MAX_OBJECT_SIZE=10485760)
    user, tok = ctx.user("spool")
    big = pick(300, 100) * MiB
    for tag, with_length in (("big-length", True), ("big-nolength", False)):
        sampler = MetricSampler(PORT, ["gateway_spool_used_bytes"], 0.05, du=gw.spool)
        sampler.start()
        t0 = time.monotonic()
        job = create_job(tok, {"type": "import", "sourceUrl": src.url(tag, big, 0, with_length), "accessLevel": "private",
                               "key": f"s/{tag}"})
        end = wait_final(tok, job["id"], 120)
        t_end = time.monotonic() - t0
        time.sleep(0.5)
        sampler.finish()
        st = src.get(tag)
        peak, du = sampler.peak("gateway_spool_used_bytes"), sampler.peak("du")
        ctx.fig(f"(a) {big // MiB} MiB source {'with' if with_length else 'without'} Content-Length: "
                f"{end['state']}/{err_code(end)} in {t_end:.1f}s, source sent {st['sent'] / MiB:.1f} MiB, "
                f"spool peak {peak / MiB:.1f} MiB (du {du / MiB:.1f} MiB)")
        ctx.check(end["state"] == "failed" and err_code(end) == "entity_too_large" and t_end < 10,
                  f"(a) {tag}: failed/entity_too_large within seconds (got {end['state']}/{err_code(end)} in {t_end:.1f}s)")
        ctx.check(peak <= 11 * MiB and du <= 11 * MiB, f"(a) {tag}: spool stayed <= ~10 MiB ({peak / MiB:.1f} MiB)")
    gw.stop()

    gw = ctx.gateway(port=PORT2, GATEWAY_SPOOL_BUDGET=268435456)
    size = pick(64, 32) * MiB       # 256 MiB holds 4 (or 8): the other 12 (or 8) wait for room
    s3_put(f"private/{user}/s/dl", 60, size)
    sampler = MetricSampler(PORT2, ["gateway_spool_used_bytes"], 0.1, du=gw.spool)
    sampler.start()
    t0 = time.monotonic()
    ids = []
    for i in range(16):
        r = call("POST", "/v1/jobs", tok, json_body={"type": "download", "source": {"accessLevel": "private", "key": "s/dl"}},
                 port=PORT2)
        if r.status == 201:
            ids.append(r.json()["id"])
    # wait until nothing moves any more: all ended, or the states unchanged for 10 s
    last, still = None, time.monotonic()
    while time.monotonic() - t0 < pick(120, 60):
        states = collections.Counter((get_job(tok, i, PORT2) or {}).get("state") for i in ids)
        snapshot = (tuple(sorted(states.items())), sum((get_job(tok, i, PORT2) or {}).get("bytesTransferred", 0) for i in ids))
        if snapshot != last:
            last, still = snapshot, time.monotonic()
        if all(s in FINAL for s in states) or time.monotonic() - still > pick(10, 4):
            break
        time.sleep(0.5)
    sampler.finish()
    states = collections.Counter()
    codes = collections.Counter()
    for i in ids:
        j = get_job(tok, i, PORT2) or {}
        states[j.get("state")] += 1
        if err_code(j):
            codes[err_code(j)] += 1
    # Can anyone else still run a job here? (Fairness across identities, as in `imports` (c).)
    other, tok_o = ctx.user("spoolother")
    s3_put(f"private/{other}/tiny", 61, 16)
    t1 = time.monotonic()
    probe = create_job(tok_o, {"type": "copy", "source": {"accessLevel": "private", "key": "tiny"},
                               "destination": {"accessLevel": "private", "key": "tiny-copy"}}, port=PORT2)
    try:
        probe_state = wait_final(tok_o, probe["id"], pick(15, 5), port=PORT2)["state"]
    except Problem:
        probe_state = (get_job(tok_o, probe["id"], PORT2) or {}).get("state")
    probe_seconds = time.monotonic() - t1
    probe_fig = f"another identity's 16-byte copy meanwhile: {probe_state} after {probe_seconds:.1f}s"
    served = 0
    for i in ids:
        if (get_job(tok, i, PORT2) or {}).get("state") == "completed":
            r = call("GET", f"/v1/jobs/{i}/data", tok, port=PORT2, timeout=60)
            served += r.status == 200 and hashlib.sha256(r.body).digest() == digest(60, size)
    peak, du = sampler.peak("gateway_spool_used_bytes"), sampler.peak("du")
    ctx.fig(f"(b) {len(ids)} downloads of {size // MiB} MiB, spool budget 256 MiB: {dict(states)} {dict(codes)} after "
            f"{time.monotonic() - t0:.0f}s, {served} served byte-identical; spool peak {peak:.0f} bytes, "
            f"du peak {du:.0f} bytes (256 MiB = {256 * MiB}; {len(sampler.series['du'])} samples); {probe_fig}")
    ctx.check(len(ids) == 16, f"(b) 16 download jobs created ({len(ids)})")
    # ext4 gives a large file one 4 KiB extent-tree block, which du counts: 64 KiB for 16 files.
    ctx.check(peak <= 256 * MiB and du <= 256 * MiB + 64 * 1024,
              f"(b) spool <= 256 MiB (gauge {peak:.0f} bytes; du {du:.0f} bytes, 64 KiB of file-system blocks allowed)")
    ctx.check(served == states.get("completed", 0), "(b) every completed download served byte-identical")
    ctx.check(probe_state == "completed",
              f"(b) the full spool blocks downloads, not everyone: another identity's 16-byte copy completes "
              f"(got {probe_state} after {probe_seconds:.1f}s)")

    # (c) a part above one identity's share of the spool (here 25% of 256 MiB), then
    # stalled uploads with huge parts against everyone's spool
    share_b = 268435456 // 4
    spec = {"type": "upload", "accessLevel": "private", "key": "s/share", "size": 4 * share_b}
    above = call("POST", "/v1/jobs", tok, json_body={**spec, "partSize": share_b + MiB}, port=PORT2)
    at = call("POST", "/v1/jobs", tok, json_body={**spec, "partSize": share_b}, port=PORT2)
    if at.status == 201:
        call("POST", f"/v1/jobs/{at.json()['id']}/cancel", tok, port=PORT2)
    ctx.fig(f"(c) spool budget 256 MiB: upload job with partSize share + 1 MiB (65 MiB) {above!r}, = share (64 MiB) {at!r}")
    ctx.check(above.status == 400 and at.status == 201,
              f"(c) a partSize above the identity's spool share is 400 at creation, the share itself 201 "
              f"(got {above!r} and {at!r})")
    gw.stop()
    spool_c(ctx, user, tok)


def stalled_put(path: str, tok: str, length: int, send: int, headers=None, port: int = PORT) -> socket.socket:
    """A raw PUT announcing `length` bytes that sends `send` of them and stalls (the socket is
    returned open; closing it is the hang-up)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=15)
    head = [f"PUT {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Authorization: Bearer {tok}",
            f"Content-Length: {length}", "Content-Type: application/octet-stream"]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    s.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + b"".join(chunks(90, send)))
    return s


def spool_c(ctx: Ctx, user: str, tok: str) -> None:
    part = 5 * GiB                      # S3's largest part
    budget = 24 * GiB                   # its 25% share, 6 GiB, holds a 5 GiB part; nothing is written unless sent
    gw = ctx.gateway(GATEWAY_SPOOL_BUDGET=budget)
    share = budget // 4
    other, tok_o = ctx.user("spoolc")
    stalled, socks = [], []
    for i in range(2):
        job = create_job(tok, {"type": "upload", "accessLevel": "private", "key": f"s/huge{i}", "size": part + 12345,
                               "partSize": part})
        stalled.append(job["id"])
        socks.append(stalled_put(f"/v1/jobs/{job['id']}/data", tok, part + 12345, 1000))
    sampler = MetricSampler(PORT, ["gateway_spool_used_bytes"], 0.1, du=gw.spool)
    sampler.start()
    time.sleep(2)
    held = [get_job(tok, j) or {} for j in stalled]
    stall_peak, stall_du = sampler.peak("gateway_spool_used_bytes"), sampler.peak("du")
    size = pick(12, 4) * MiB
    up = timed_upload_job(tok_o, "s/other-up", 91, size)
    tus = timed_tus(tok_o, "s/other-tus", 92, size, with_upload=True)
    identical = 0
    if up[0]:
        identical += s3_sha256(f"private/{other}/s/other-up")[0] == digest(91, size)
    if tus[0]:
        identical += s3_sha256(f"private/{other}/s/other-tus")[0] == digest(92, size)
    held_after = [get_job(tok, j) or {} for j in stalled]
    total_peak, total_du = sampler.peak("gateway_spool_used_bytes"), sampler.peak("du")
    sampler.finish()
    for s in socks:
        s.close()
    ctx.fig(f"(c) spool budget {budget // GiB} GiB (share {share // GiB} GiB): "
            f"2 upload jobs of A with {part // GiB} GiB parts, 1000 bytes each then stalled: "
            f"{[(j.get('state'), j.get('bytesTransferred')) for j in held]}; spool gauge peak {stall_peak / MiB:.2f} MiB ("
            f"du {stall_du / MiB:.2f} MiB; {len(sampler.series['du'])} samples, {sampler.errors} failed)")
    ctx.fig(f"(c) meanwhile another identity: upload job {size // MiB} MiB {'ok' if up[0] else 'FAILED ' + up[2]} "
            f"in {up[1]:.2f}s, tus creation-with-upload {size // MiB} MiB {'ok' if tus[0] else 'FAILED ' + tus[2]} "
            f"in {tus[1]:.2f}s, {identical}/2 byte-identical; spool gauge peak over all {total_peak / MiB:.2f} MiB "
            f"(du {total_du / MiB:.2f} MiB); A's still {[j.get('state') for j in held_after]}")
    ctx.check(all(j.get("state") not in FINAL for j in held + held_after),
              "(c) A's two stalled jobs still hold while the other identity uploads")
    ctx.check(stall_peak <= 8 * MiB and stall_du <= 8 * MiB,
              f"(c) the stalled 5 GiB-part uploads hold what they were sent, not their parts (spool gauge peak "
              f"{stall_peak / MiB:.2f} MiB, du {stall_du / MiB:.2f} MiB; 8 MiB allowed)")
    ctx.check(up[0] and tus[0] and identical == 2,
              f"(c) another identity's upload job and tus upload complete byte-identical (upload {up[2]}, tus {tus[2]})")
    ctx.check(up[1] <= 10 and tus[1] <= 10, f"(c) ... without waiting for room (upload {up[1]:.1f}s, tus {tus[1]:.1f}s; 10 s allowed)")


def sc_bodies(ctx: Ctx) -> None:
    """bodies — making the gateway wait for bodies it will refuse, and one address's connections.
    Replays: (a) an anonymous POST /v1/presign announcing Content-Length 100 and dripping one byte
    every 5 s; (b) an anonymous POST /v1/presign with a JSON body lacking `operation`;
    (c) `Expect: 100-continue` without a token; (d) 300 connections from one address with
    GATEWAY_MAX_CONNECTIONS_PER_CLIENT=256; (e) the same, each sending a different
    X-Forwarded-For, from a peer that is not a trusted proxy.
    Must hold: (a) 401 at once (under 1 s), not after the body; (b) 401 (not 400: the token comes
    first); (c) 401 and no `100 Continue`; (d) exactly 44 refused with 429; (e) the header is
    ignored: again 256 served and 44 refused."""
    gw = ctx.gateway(GATEWAY_MAX_CONNECTIONS_PER_CLIENT=256)

    # (a) a dripped body
    s = socket.create_connection(("127.0.0.1", PORT), timeout=20)
    s.sendall(b"POST /v1/presign HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
    t0 = time.monotonic()
    s.settimeout(0.1)
    data, dripped = b"", 1
    while time.monotonic() - t0 < 16 and b"\r\n\r\n" not in data:
        try:
            got = s.recv(4096)
            if not got:
                break
            data += got
        except socket.timeout:
            pass
        if b"\r\n\r\n" not in data and time.monotonic() - t0 > dripped * 5:
            try:
                s.sendall(b" ")
                dripped += 1
            except OSError:
                break
    t_a = time.monotonic() - t0
    s.close()
    status_a = data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/") else "none"
    ctx.fig(f"(a) dripped body: {status_a} after {t_a:.2f}s ({dripped} byte(s) sent)")
    ctx.check(status_a == "401" and t_a < 1.0, f"(a) 401 at once (got {status_a} after {t_a:.2f}s)")

    # (b) no operation, no token
    r = call("POST", "/v1/presign", json_body={"accessLevel": "private", "key": "a.txt"})
    ctx.fig(f"(b) anonymous presign without operation: {r}")
    ctx.check(r.status == 401, f"(b) 401 (got {r.status})")

    # (c) Expect: 100-continue without a token
    s = socket.create_connection(("127.0.0.1", PORT), timeout=5)
    s.sendall(b"POST /v1/presign HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Content-Length: 20\r\nExpect: 100-continue\r\n\r\n")
    s.settimeout(1.5)
    data = b""
    try:
        while True:
            got = s.recv(4096)
            if not got:
                break
            data += got
    except socket.timeout:
        pass
    s.close()
    first = data.split(b"\r\n", 1)[0].decode(errors="replace")
    saw_100 = b"HTTP/1.1 100" in data
    ctx.fig(f"(c) Expect: 100-continue without token: '{first}', 100 Continue {'SENT' if saw_100 else 'not sent'}")
    ctx.check(first.startswith("HTTP/1.1 401") and not saw_100, "(c) 401 without 100 Continue")

    # (d) and (e): 300 connections from 127.0.0.1
    async def flood(xff: bool):
        conns = []
        for i in range(300):
            try:
                conns.append(await asyncio.wait_for(asyncio.open_connection("127.0.0.1", PORT), 5))
            except (OSError, asyncio.TimeoutError):
                conns.append(None)
        await asyncio.sleep(0.5)
        results = collections.Counter()

        async def one(i, c):
            if c is None:
                results["connect error"] += 1
                return
            reader, writer = c
            extra = f"X-Forwarded-For: 10.{i // 250}.{i % 250}.7\r\n" if xff else ""
            try:
                writer.write(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n".encode())
                await writer.drain()
            except OSError:
                pass
            try:
                status, _, _ = await read_response(reader, 5)
                results[status] += 1
            except (asyncio.IncompleteReadError, OSError, asyncio.TimeoutError, ValueError):
                results["no answer"] += 1

        await asyncio.gather(*(one(i, c) for i, c in enumerate(conns)))
        for c in conns:
            if c:
                c[1].close()
        return results

    for label, xff in (("(d)", False), ("(e)", True)):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (metric(metrics_text(), "gateway_http_open_connections") or 0) > 1:
            time.sleep(0.2)
        res = asyncio.run(flood(xff))
        ctx.fig(f"{label} 300 connections{' with 300 X-Forwarded-For' if xff else ''}: {dict(res)}")
        ctx.check(res.get(429, 0) == 44 and res.get(200, 0) == 256,
                  f"{label} 256 served, 44 refused with 429 (got {res.get(200, 0)} and {res.get(429, 0)})")


def sc_expiry(ctx: Ctx) -> None:
    """expiry — an upload cut by a crash and never continued.
    Replays: an upload job of 64 MiB whose PUT is cut by SIGKILL of the gateway after ~20 MiB; the
    gateway started again with GATEWAY_UPLOAD_TTL=60 (its janitor passes every 15 s).
    Must hold: within ~90 s of the last byte (100 s allowed) the job is `failed` with
    `upload_expired` and S3 lists no multipart upload for its key (the old code left the upload,
    and its parts' storage, forever)."""
    gw = ctx.gateway()
    user, tok = ctx.user("expiry")
    size = 64 * MiB
    job = create_job(tok, {"type": "upload", "accessLevel": "private", "key": "e/cut", "size": size})
    key = job["objectKey"]

    def slow_parts():
        for i, piece in enumerate(chunks(70, size)):
            yield piece
            if i >= 20:
                time.sleep(0.2)

    result: dict = {}
    sender = threading.Thread(target=lambda: result.update(
        r=send_stream("PUT", f"/v1/jobs/{job['id']}/data", tok, slow_parts(), size, port=PORT, timeout=60)), daemon=True)
    sender.start()
    wait_job(tok, job["id"], lambda j: j["bytesCommitted"] >= 10 * MiB or j["state"] in FINAL, 60, what="10 MiB in")
    before = s3_uploads(key)
    gw.kill9()
    t_kill = time.monotonic()
    sender.join(30)
    gw.extra["GATEWAY_UPLOAD_TTL"] = "60"
    gw.start()
    j = get_job(tok, job["id"]) or {}
    ctx.fig(f"PUT cut at bytesCommitted {j.get('bytesCommitted', 0) / MiB:.0f} MiB ({j.get('state')}), "
            f"{len(before)} S3 upload(s) open")
    end = wait_job(tok, job["id"], lambda j: j["state"] in FINAL, 150, interval=1, what="ended")
    t_end = time.monotonic() - t_kill
    time.sleep(1)
    after = s3_uploads(key)
    ctx.fig(f"restarted with TTL 60: {end['state']}/{err_code(end)} {t_end:.0f}s after the kill; "
            f"S3 uploads for the key afterwards: {len(after)}")
    ctx.check(len(before) >= 1, "an S3 multipart upload existed when the PUT was cut")
    ctx.check(end["state"] == "failed" and err_code(end) == "upload_expired" and t_end <= 100,
              f"failed/upload_expired within ~90 s (got {end['state']}/{err_code(end)} after {t_end:.0f}s)")
    ctx.check(not after, f"its S3 multipart upload is gone ({len(after)} left)")


def sc_quotas(ctx: Ctx) -> None:
    """quotas — one identity creating as fast as it can.
    Replays: for 10 s, eight concurrent loops of one identity creating upload jobs, tus uploads and
    client-driven uploads (POST /v1/uploads) in turn; 5 s in, a second identity creates an upload job.
    Must hold: the 201s stay within the quotas (at most 16 active jobs and 64 open uploads at the
    end, at most burst 50 + 10/s creations), every 429 is `quota_exceeded` with Retry-After, no 5xx,
    and the second identity is served (201)."""
    gw = ctx.gateway()
    user, tok = ctx.user("quota")
    other, tok_o = ctx.user("quotaother")
    duration = pick(10, 6)
    counts: dict = collections.defaultdict(collections.Counter)
    bad_429 = [0]
    stop = time.monotonic() + duration
    seq = iter(range(10 ** 9))
    lock = threading.Lock()
    second: dict = {}

    def loop(w: int):
        kinds = ["job", "tus", "upload"]
        while time.monotonic() < stop:
            with lock:
                n = next(seq)
            kind = kinds[n % 3]
            try:
                if kind == "job":
                    r = call("POST", "/v1/jobs", tok, json_body={"type": "upload", "accessLevel": "private",
                                                                  "key": f"q/j{n}", "size": 10 * MiB})
                elif kind == "tus":
                    meta = "key " + base64.b64encode(f"q/t{n}".encode()).decode()
                    r = call("POST", "/v1/tus/", tok, headers={"Tus-Resumable": "1.0.0", "Upload-Length": str(10 * MiB),
                                                              "Upload-Metadata": meta})
                else:
                    r = call("POST", "/v1/uploads", tok, json_body={"accessLevel": "private", "key": f"q/u{n}",
                                                                     "size": 10 * MiB})
            except OSError as e:
                with lock:
                    counts[kind][type(e).__name__] += 1
                continue
            with lock:
                counts[kind][r.status] += 1
                if r.status == 429 and not (r.code == "quota_exceeded" and r.headers.get("retry-after", "").isdigit()):
                    bad_429[0] += 1

    def second_identity():
        time.sleep(duration / 2)
        t = time.monotonic()
        r = call("POST", "/v1/jobs", tok_o, json_body={"type": "upload", "accessLevel": "private", "key": "q/other",
                                                        "size": MiB})
        second.update(status=r.status, seconds=time.monotonic() - t)

    t0 = time.monotonic()
    threads = [threading.Thread(target=loop, args=(w,), daemon=True) for w in range(8)]
    threads.append(threading.Thread(target=second_identity, daemon=True))
    for t in threads:
        t.start()
    for t in threads:
        t.join(duration + 60)
    elapsed = time.monotonic() - t0
    active = int(psql(f"SELECT count(*) FROM jobs WHERE owner = '{user}' AND state IN {ACTIVE}"))
    open_uploads = active + int(psql(f"SELECT count(*) FROM uploads WHERE owner = '{user}' AND state IN ('creating', 'open')"))
    created = sum(c[201] for c in counts.values())
    fivexx = sum(v for c in counts.values() for k, v in c.items() if isinstance(k, int) and k >= 500)
    ctx.fig(f"{elapsed:.0f}s of creations: " + ", ".join(f"{k} {dict(v)}" for k, v in sorted(counts.items())) +
            f"; held at the end: {active} active jobs, {open_uploads} open uploads; second identity "
            f"{second.get('status')} in {second.get('seconds', 0):.2f}s")
    ctx.check(active <= 16 and open_uploads <= 64, f"quotas hold ({active} active jobs <= 16, {open_uploads} uploads <= 64)")
    ctx.check(created <= 50 + 10 * elapsed + 5, f"creations bounded by the rate ({created} <= {50 + 10 * elapsed:.0f})")
    ctx.check(bad_429[0] == 0, f"every 429 is quota_exceeded with Retry-After ({bad_429[0]} not)")
    ctx.check(fivexx == 0, f"no 5xx ({fivexx})")
    ctx.check(second.get("status") == 201, f"second identity served (got {second.get('status')})")


def sc_readyz(ctx: Ctx) -> None:
    """readyz — anonymous clients hammering the readiness check.
    Replays: 300 concurrent anonymous kept-alive clients asking /readyz as fast as they can for 10 s
    (GATEWAY_MAX_CONNECTIONS_PER_CLIENT=1000: here they all come from 127.0.0.1, which the default
    cap of 256 would otherwise refuse 44 of, as `bodies` shows).
    Must hold: every answer 200, PostgreSQL sees few backends (at most 10 for our database) and
    few transactions (under 20/s): the checks are cached ~1 s, not run per request."""
    gw = ctx.gateway(GATEWAY_MAX_CONNECTIONS_PER_CLIENT=1000)
    duration = pick(10, 5)
    latencies: list = []
    statuses = collections.Counter()
    peak_backends = [backends()]
    base_backends = peak_backends[0]
    stop_flag = threading.Event()

    def watch():
        while not stop_flag.is_set():
            try:
                peak_backends[0] = max(peak_backends[0], backends())
            except Exception:   # noqa: BLE001 - a missed sample is not a finding
                pass
            stop_flag.wait(0.5)

    async def hammer():
        end = time.monotonic() + duration

        async def client():
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", PORT), 10)
            try:
                while time.monotonic() < end:
                    t = time.monotonic()
                    writer.write(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    status, _, _ = await read_response(reader, 10)
                    latencies.append(time.monotonic() - t)
                    statuses[status] += 1
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as e:
                statuses[type(e).__name__] += 1
            finally:
                writer.close()

        await asyncio.gather(*(client() for _ in range(300)), return_exceptions=True)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    c0, t0 = xact_commits(), time.monotonic()
    asyncio.run(hammer())
    tps = (xact_commits() - c0) / (time.monotonic() - t0)
    stop_flag.set()
    watcher.join(5)
    n = sum(statuses.values())
    ctx.fig(f"{n} /readyz in {duration}s ({n / duration:.0f}/s): {dict(statuses)}; p50 "
            f"{percentile(latencies, 50) * 1000:.1f} ms, p99 {percentile(latencies, 99) * 1000:.1f} ms; PostgreSQL "
            f"backends {base_backends} before, peak {peak_backends[0]}; {tps:.1f} tx/s")
    ctx.check(statuses.get(200, 0) == n and n > 0, f"every /readyz answered 200 ({statuses.get(200, 0)}/{n})")
    ctx.check(peak_backends[0] <= 10, f"few PostgreSQL backends (peak {peak_backends[0]} <= 10)")
    ctx.check(tps < 20, f"few transactions ({tps:.1f}/s < 20)")


def sc_smaller(ctx: Ctx) -> None:
    """smaller — six small ones.
    Replays: (a) five multipart uploads made directly in S3 (boto3) under public/foreign/, with a
    gateway whose janitor runs every 15 s (GATEWAY_UPLOAD_TTL=60); (b) targetIdentityId naming
    someone else on a write (upload job, copy destination); (c) another identity's job id as
    `cursor` of GET /v1/jobs; (d) two Authorization headers; (e) Content-Type application/jsonx on
    a JSON route; (f) tus creation-with-upload with a body past Upload-Length.
    Must hold: (a) all five uploads still exist after the janitor's passes (it touches only what
    this deployment recorded; the old code aborted every upload in the bucket older than the TTL).
    The full run waits ~85 s, until they are older than the TTL, and a control (an idle
    POST /v1/uploads of ours) must then be aborted, which shows the janitor did pass; the quick run
    waits ~35 s (two passes, uploads younger than the TTL, no control). (b) 403; (c) 400; (d) 400
    `duplicate_authorization`; (e) 415; (f) 413."""
    gw = ctx.gateway(GATEWAY_UPLOAD_TTL=60)
    t_start = time.monotonic()
    user, tok = ctx.user("small")
    victim, tok_v = ctx.user("smallvictim")
    prefix = f"public/foreign/{CFG.run}/"
    foreign = [s3().create_multipart_upload(Bucket=CFG.bucket, Key=f"{prefix}k{i}")["UploadId"] for i in range(5)]
    # The control: an upload this deployment recorded, left idle. Past the TTL the janitor must abort
    # it, which shows its passes ran while the foreign ones were kept.
    r = call("POST", "/v1/uploads", tok, json_body={"accessLevel": "private", "key": "a/control", "size": 6 * MiB})
    control = r.json()["uploadId"] if r.status == 201 else None

    r1 = call("POST", "/v1/jobs", tok, json_body={"type": "upload", "accessLevel": "private", "key": "b/x",
                                                   "targetIdentityId": victim})
    s3_put(f"private/{user}/b/src", 80, 16)
    r2 = call("POST", "/v1/jobs", tok, json_body={"type": "copy", "source": {"accessLevel": "private", "key": "b/src"},
                                                   "destination": {"accessLevel": "protected", "key": "b/y",
                                                                   "targetIdentityId": victim}})
    ctx.fig(f"(b) targetIdentityId of another on writes: upload job {r1}, copy destination {r2}")
    ctx.check(r1.status == 403 and r2.status == 403, "(b) 403 for both")

    vjob = create_job(tok_v, {"type": "upload", "accessLevel": "private", "key": "c/v", "size": 1})
    r = call("GET", f"/v1/jobs?cursor={vjob['id']}", tok)
    ctx.fig(f"(c) another identity's job id as cursor: {r}")
    ctx.check(r.status == 400, f"(c) 400 (got {r.status})")

    s = socket.create_connection(("127.0.0.1", PORT), timeout=5)
    s.sendall(f"GET /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {tok}\r\n"
              f"Authorization: Bearer {tok_v}\r\nConnection: close\r\n\r\n".encode())
    data = b""
    try:
        while True:
            got = s.recv(65536)
            if not got:
                break
            data += got
    except socket.timeout:
        pass
    s.close()
    status_d = data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/") else "none"
    code_d = (json.loads(data.split(b"\r\n\r\n", 1)[1] or b"{}").get("code") if b"\r\n\r\n" in data and status_d != "200"
              else "")
    ctx.fig(f"(d) two Authorization headers: {status_d} {code_d}")
    ctx.check(status_d == "400", f"(d) 400 (got {status_d})")

    r = call("POST", "/v1/presign", tok, body=json.dumps({"operation": "get", "accessLevel": "private", "key": "e"}).encode(),
             headers={"Content-Type": "application/jsonx"})
    ctx.fig(f"(e) Content-Type application/jsonx: {r}")
    ctx.check(r.status == 415, f"(e) 415 (got {r.status})")

    meta = "key " + base64.b64encode(b"f/over").decode()
    r = call("POST", "/v1/tus/", tok, body=b"x" * 20, headers={"Tus-Resumable": "1.0.0", "Upload-Length": "10",
                                                               "Upload-Metadata": meta,
                                                               "Content-Type": "application/offset+octet-stream"})
    ctx.fig(f"(f) tus creation-with-upload of 20 bytes, Upload-Length 10: {r}")
    ctx.check(r.status == 413, f"(f) 413 (got {r.status})")

    wait = pick(85, 32) - (time.monotonic() - t_start)
    log(f"[smaller] waiting {wait:.0f}s for the janitor's passes")
    time.sleep(max(0, wait))
    left = {u["UploadId"] for u in s3_uploads(prefix)}
    kept = sum(1 for u in foreign if u in left)
    control_now = call("GET", f"/v1/uploads/{control}", tok).status if control else None
    ctx.fig(f"(a) foreign multipart uploads after {time.monotonic() - t_start:.0f}s (janitor every 15 s): "
            f"{kept}/5 still there; the control (an idle upload of ours): "
            f"{'aborted (404)' if control_now == 404 else f'{control_now}'}")
    ctx.check(kept == 5, f"(a) all 5 foreign uploads kept ({kept})")
    if not CFG.quick:
        ctx.check(control_now == 404, f"(a) control: our own idle upload aborted past the TTL, so the janitor ran "
                                      f"(GET answered {control_now})")
    for i, u in enumerate(foreign):
        try:
            s3().abort_multipart_upload(Bucket=CFG.bucket, Key=f"{prefix}k{i}", UploadId=u)
        except Exception:   # noqa: BLE001 - already gone is what (a) reports
            pass


def paged_keys(tok: str, query: str, pages: int) -> tuple[list, bool, list]:
    """GET /v1/objects one key per page, following nextCursor at most `pages` times: the keys,
    whether the listing ended, and any answer other than 200."""
    keys, cursor, odd = [], None, []
    for _ in range(pages):
        path = f"/v1/objects?{query}&limit=1" + (f"&cursor={urllib.parse.quote(cursor, safe='')}" if cursor else "")
        r = call("GET", path, tok)
        if r.status != 200:
            odd.append(repr(r))
            return keys, True, odd
        keys += [o["key"] for o in r.json().get("objects", [])]
        cursor = r.json().get("nextCursor")
        if cursor is None:
            return keys, True, odd
    return keys, False, odd


def sc_keys(ctx: Ctx) -> None:
    """keys — keys S3 would list as other keys.
    Replays: (a) a key holding U+FFFE on POST /v1/presign, /v1/presign/post, /v1/uploads and
    /v1/jobs (upload, copy destination), and U+FFFF in a listing prefix; (b) four objects
    uploaded through the gateway (upload jobs) whose keys hold `%`, `+`, spaces and non-ASCII
    letters, listed back whole and one per page; (c) objects put straight into S3 (boto3) under
    the account's prefix whose keys hold U+FFFE and U+FFFF, beside one with U+FFFD, listed one per
    page (at most 12 pages).
    Must hold: (a) 400 `invalid_key` for each; (b) every key listed back byte for byte, in order,
    and the paging ends; (c) the keys listed exactly as put, each once, and the paging ends (the
    old listing, without encoding-type=url, showed U+FFFE as U+FFFD, and its cursor answered the
    same page forever)."""
    ctx.gateway()
    user, tok = ctx.user("keys")
    bad = "k/a\ufffeb"
    refusals = {
        "presign": call("POST", "/v1/presign", tok, json_body={"operation": "put", "accessLevel": "private", "key": bad}),
        "presign/post": call("POST", "/v1/presign/post", tok, json_body={"accessLevel": "private", "key": bad}),
        "uploads": call("POST", "/v1/uploads", tok, json_body={"accessLevel": "private", "key": bad, "size": 10}),
        "upload job": call("POST", "/v1/jobs", tok, json_body={"type": "upload", "accessLevel": "private", "key": bad}),
        "copy job": call("POST", "/v1/jobs", tok, json_body={"type": "copy", "source": {"accessLevel": "private", "key": "s"},
                                                              "destination": {"accessLevel": "private", "key": bad}}),
        "listing prefix": call("GET", "/v1/objects?accessLevel=private&prefix=" + urllib.parse.quote("a\uffff"), tok),
    }
    ctx.fig("(a) U+FFFE key: " + ", ".join(f"{k} {v}" for k, v in refusals.items()))
    ctx.check(all(r.status == 400 and r.code == "invalid_key" for r in refusals.values()), "(a) 400 invalid_key on every route")

    folder = f"enc-{CFG.run}/"
    names = [folder + n for n in ("100% a+b é.txt", "100%25 a b.txt", "plus+plus", "ü/ñ space+%2B")]
    for name in names:
        job = create_job(tok, {"type": "upload", "accessLevel": "private", "key": name})
        r = call("PUT", f"/v1/jobs/{job['id']}/data", tok, body=name.encode(), headers={"Content-Type": "application/octet-stream"})
        if r.status != 200:
            raise Problem(f"upload of {name!r} answered {r}")
    want = sorted(names, key=lambda n: n.encode())
    r = call("GET", "/v1/objects?accessLevel=private&prefix=" + urllib.parse.quote(folder, safe=""), tok)
    whole = [o["key"] for o in r.json().get("objects", [])] if r.status == 200 else []
    paged, ended, odd = paged_keys(tok, "accessLevel=private&prefix=" + urllib.parse.quote(folder, safe=""), 12)
    ctx.fig(f"(b) {len(names)} keys with %, +, spaces, non-ASCII: listed {len(whole)} exact {whole == want}; one per page "
            f"{len(paged)} exact {paged == want}, ended {ended}{', ' + ', '.join(odd) if odd else ''}")
    ctx.check(whole == want and paged == want and ended and not odd, "(b) every key listed back byte for byte, paging ends")

    outside = [f"raw-{CFG.run}/k\ufffd", f"raw-{CFG.run}/k\ufffe", f"raw-{CFG.run}/k\uffffz", f"raw-{CFG.run}/l"]
    for name in outside:
        s3().put_object(Bucket=CFG.bucket, Key=f"private/{user}/{name}", Body=b"x")
    paged, ended, odd = paged_keys(tok, "accessLevel=private&prefix=" + urllib.parse.quote(f"raw-{CFG.run}/", safe=""), 12)
    shown = [" ".join(f"U+{ord(c):04X}" for c in k if ord(c) > 0x7F) or k[-1] for k in paged]
    ctx.fig(f"(c) keys with U+FFFD, U+FFFE, U+FFFF put in S3: paged {len(paged)} ({', '.join(shown)}), ended {ended}"
            f"{', ' + ', '.join(odd) if odd else ''}")
    ctx.check(paged == outside and ended and not odd, "(c) listed exactly as put, each once, and the paging ends")


class JWKSProvider:
    """The identity-provider stand-in of the live tests (Tests/IntegrationTests/Scripts/jwks_server.py):
    a key set on loopback whose keys rotate on request, and tokens signed with them."""

    def __init__(self, ctx: Ctx):
        port_file = ctx.dir / "jwks-port"
        self.log = open(ctx.dir / "jwks.log", "ab")
        self.proc = subprocess.Popen([sys.executable, str(CFG.root / "Tests/IntegrationTests/Scripts/jwks_server.py"), str(port_file)],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, start_new_session=True)
        ctx.servers.append(self)
        deadline = time.monotonic() + 20
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise Problem("the key-set stand-in did not start")
            time.sleep(0.05)
        self.port = int(port_file.read_text().strip())
        self.url = f"http://127.0.0.1:{self.port}/.well-known/jwks.json"

    def call(self, method: str, path: str) -> str:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        try:
            conn.request(method, path)
            return conn.getresponse().read().decode()
        finally:
            conn.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def sc_rotation(ctx: Ctx) -> None:
    """rotation — a token whose key the identity provider rotated out.
    Replays: a gateway reading a stand-in provider's key set (GATEWAY_JWT_JWKS_URL) of two keys;
    a token of each used (so both are in the verified-token cache); the provider retires the
    first key and publishes a third, and a token of the third makes the gateway fetch the set;
    then the two first tokens again.
    Must hold: the token of the retired key is 401 (the old cache answered it 200 until it
    expired), the token whose key stayed is still 200, and the new key's token is 200."""
    provider = JWKSProvider(ctx)
    leaving = provider.call("POST", "/rotate?alg=RS256")
    staying = provider.call("POST", "/rotate?alg=ES256&keep=1")
    ctx.gateway(GATEWAY_JWT_JWKS_URL=provider.url)
    sub = f"abuse-{CFG.run}-rotation"
    ctx.identities.add(sub)
    old = provider.call("GET", f"/token?sub={sub}&kid={leaving}")
    kept = provider.call("GET", f"/token?sub={sub}&kid={staying}")
    before = [call("GET", "/v1/jobs?limit=1", t).status for t in (old, kept, old)]
    provider.call("POST", f"/retire?kid={leaving}")
    fresh = provider.call("POST", "/rotate?alg=RS256&keep=1")
    fetches = int(provider.call("GET", "/fetches"))
    new = call("GET", "/v1/jobs?limit=1", provider.call("GET", f"/token?sub={sub}&kid={fresh}"))
    fetched = int(provider.call("GET", "/fetches")) > fetches
    after_old = [call("GET", "/v1/jobs?limit=1", old) for _ in range(3)]
    after_kept = call("GET", "/v1/jobs?limit=1", kept)
    ctx.fig(f"before the rotation: old, kept, old again {before}; new key's token {new} (set fetched: {fetched}); "
            f"then the retired key's token {[r.status for r in after_old]}, the kept key's {after_kept}")
    ctx.check(before == [200, 200, 200], "both tokens accepted before the rotation")
    ctx.check(new.status == 200 and fetched, "the new key's token fetched the set and was accepted")
    ctx.check(all(r.status == 401 for r in after_old), "the retired key's token is 401 once the new set is in")
    ctx.check(after_kept.status == 200, "the token whose key stayed is still 200")


def sc_queries(ctx: Ctx) -> None:
    """queries — one parameter given twice, on every route that reads a query.
    Replays: GET /v1/jobs?type=copy&type=import (and state, limit twice), GET /v1/jobs/{id}?wait
    twice, GET /v1/uploads?limit twice, the data and events links with expires or signature
    twice, the objects API with accessLevel or key twice, and ?x=1&x=2 on routes that read no
    query (POST /v1/jobs/{id}/pause, GET /healthz).
    Must hold: every one 400 `validation_failed` (the old gateway took the first value on the
    jobs, uploads, wait and link routes: GET /v1/jobs?type=copy&type=import answered 200 with the
    copies only), and the same requests with each parameter once are answered as before."""
    ctx.gateway(GATEWAY_LINK_SECRET="abuse-queries-link-secret-0123456789")
    _, tok = ctx.user("queries")
    job = create_job(tok, {"type": "upload", "accessLevel": "private", "key": "q/x", "size": 1})
    jid = job["id"]
    twice = [("GET", "/v1/jobs?type=copy&type=import"), ("GET", "/v1/jobs?state=pending&state=queued"),
             ("GET", "/v1/jobs?limit=1&limit=50"), ("GET", f"/v1/jobs/{jid}?wait=0&wait=1"),
             ("GET", "/v1/uploads?limit=1&limit=2"), ("GET", f"/v1/jobs/{jid}/data?expires=1&expires=2&signature=00"),
             ("GET", f"/v1/jobs/{jid}/events?expires=1&signature=00&signature=01"),
             ("GET", "/v1/objects?accessLevel=private&accessLevel=public"),
             ("GET", "/v1/objects/properties?accessLevel=private&key=a&key=b"),
             ("POST", f"/v1/jobs/{jid}/pause?x=1&x=2"), ("GET", "/healthz?x=1&x=2")]
    answers = {f"{m} {p.split('?')[0].replace(jid, '{id}')}?{p.split('?')[1]}": call(m, p, tok) for m, p in twice}
    wrong = {k: repr(r) for k, r in answers.items() if not (r.status == 400 and r.code == "validation_failed")}
    once = [call("GET", "/v1/jobs?type=upload&state=pending", tok), call("GET", f"/v1/jobs/{jid}?wait=0", tok),
            call("GET", "/v1/uploads?limit=2", tok), call("GET", "/v1/objects?accessLevel=private", tok)]
    listed = once[0].json().get("jobs", []) if once[0].status == 200 else []
    ctx.fig(f"{len(answers)} requests with a parameter twice: {len(answers) - len(wrong)} answered 400 validation_failed"
            + (f"; others: {wrong}" if wrong else "") + f"; once each: {[r.status for r in once]} ({len(listed)} job listed)")
    ctx.check(not wrong, "every repeated parameter is 400 validation_failed")
    ctx.check(all(r.status == 200 for r in once) and len(listed) == 1, "each parameter once: answered as before")


# ---------------------------------------------------------------------------------------------
# Bounded, second pass

def stalled_get(path: str, port: int = PORT, rcvbuf: int = 4096, head_timeout: float = 15, keep: int = 1024,
                headers=None) -> dict:
    """A raw GET whose reader stalls: a small SO_RCVBUF, the head and `keep` bytes of the body
    read, then nothing more. Returns {status, code, seconds, sock (open, for a 2xx), got}."""
    out = {"status": None, "code": None, "seconds": None, "sock": None, "got": 0}
    t0 = time.monotonic()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(head_timeout)
    try:
        s.connect(("127.0.0.1", port))
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}\r\n".encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            piece = s.recv(4096)
            if not piece:
                raise ConnectionError("closed before the head")
            buf += piece
        head, rest = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        out["status"] = int(lines[0].split(" ", 2)[1])
        headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
        out["seconds"] = time.monotonic() - t0
        if 200 <= out["status"] < 300:
            while len(rest) < keep:
                piece = s.recv(keep - len(rest))
                if not piece:
                    break
                rest += piece
            out["got"] = len(rest)
            out["sock"] = s
            return out
        n = int(headers.get("content-length", "0") or 0)
        while len(rest) < n:
            piece = s.recv(n - len(rest))
            if not piece:
                break
            rest += piece
        try:
            out["code"] = json.loads(rest or b"null").get("code")
        except (ValueError, AttributeError):
            pass
    except (OSError, ConnectionError, ValueError, IndexError) as e:
        out["status"] = f"{type(e).__name__}"
        out["seconds"] = time.monotonic() - t0
    s.close()
    return out


def timed_upload_job(tok: str, key: str, seed: int, size: int, port: int = PORT) -> tuple[bool, float, str]:
    """One upload job, its bytes in one PUT: (completed, seconds from creation to the answer, answer)."""
    t0 = time.monotonic()
    job = create_job(tok, {"type": "upload", "accessLevel": "private", "key": key, "size": size}, port=port)
    resp, sent, err = send_stream("PUT", f"/v1/jobs/{job['id']}/data", tok, chunks(seed, size), size,
                                  {"Content-Type": "application/octet-stream"}, port=port, timeout=120)
    seconds = time.monotonic() - t0
    ok = resp is not None and resp.status == 200 and (resp.json() or {}).get("state") == "completed"
    return ok, seconds, repr(resp) if resp is not None else f"cut after {sent} bytes ({err})"


TUS_H = {"Tus-Resumable": "1.0.0"}


def timed_tus(tok: str, key: str, seed: int, size: int, port: int = PORT, with_upload: bool = False) -> tuple[bool, float, str]:
    """One tus upload: creation, then its bytes in one PATCH (or in the creation request itself,
    creation-with-upload). (all stored, seconds, answers)."""
    t0 = time.monotonic()
    meta = "key " + base64.b64encode(key.encode()).decode()
    h = {**TUS_H, "Upload-Length": str(size), "Upload-Metadata": meta}
    if with_upload:
        resp, sent, err = send_stream("POST", "/v1/tus/", tok, chunks(seed, size), size,
                                      {**h, "Content-Type": "application/offset+octet-stream"}, port=port, timeout=120)
        seconds = time.monotonic() - t0
        if resp is None:
            return False, seconds, f"creation cut after {sent} bytes ({err})"
        ok = resp.status == 201 and resp.headers.get("upload-offset") == str(size)
        return ok, seconds, f"{resp!r} Upload-Offset {resp.headers.get('upload-offset')}"
    r = call("POST", "/v1/tus/", tok, headers=h, port=port)
    if r.status != 201:
        return False, time.monotonic() - t0, f"creation {r!r}"
    resp, sent, err = send_stream("PATCH", r.headers["location"], tok, chunks(seed, size), size,
                                  {**TUS_H, "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"},
                                  port=port, timeout=120)
    seconds = time.monotonic() - t0
    if resp is None:
        return False, seconds, f"PATCH cut after {sent} bytes ({err})"
    ok = resp.status == 204 and resp.headers.get("upload-offset") == str(size)
    return ok, seconds, f"PATCH {resp!r} Upload-Offset {resp.headers.get('upload-offset')}"


def timed_download(tok: str, jid: str, seed: int, size: int, port: int = PORT) -> tuple[bool, float, str]:
    """A download job's data through the token route, read whole: (byte-identical, seconds, answer)."""
    t0 = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", f"/v1/jobs/{jid}/data", headers={"Authorization": "Bearer " + tok})
        r = conn.getresponse()
        h, n = hashlib.sha256(), 0
        while True:
            piece = r.read(MiB)
            if not piece:
                break
            h.update(piece)
            n += len(piece)
        seconds = time.monotonic() - t0
        ok = r.status == 200 and n == size and h.digest() == digest(seed, size)
        return ok, seconds, f"{r.status} {n} bytes{'' if ok or r.status != 200 else ' NOT identical'}"
    except (OSError, http.client.HTTPException) as e:
        return False, time.monotonic() - t0, f"{type(e).__name__}: {e}"
    finally:
        conn.close()


def sc_streams(ctx: Ctx) -> None:
    """streams — stalled readers of one account's dataUrl against everyone's memory budget.
    Replays: user A's download job of a 64 MiB object; 20 raw-socket readers of its `dataUrl`
    (no token; SO_RCVBUF 4 KiB; every other one with `Range: bytes=0-8388607`), opened at once,
    each reading the head and 1 KiB and then nothing more. Meanwhile user B, one after another: an upload job PUT (8 MiB; quick 4), a tus PATCH
    (8 MiB; quick 4) and its own download of a 32 MiB object (quick 8), each timed also before
    the readers came (unloaded). Then the readers hang up.
    Must hold: exactly 20 - GATEWAY_USER_MAX_STREAMS (8) readers are refused 429 `quota_exceeded`
    (the old gateway admitted all 20); A's holdings of the memory budget (the gauge
    gateway_memory_budget_used_bytes while only A's readers hold) never pass A's share, 25% of 64 MiB
    = 16 MiB (the old read-ahead reserved up to 24 MiB per stream before its first byte: three
    stalled readers filled the budget); B's three requests all succeed byte-identical, none 503
    `insufficient_storage`, each within 3x its unloaded time (or 1 s more, when that is larger); streams and
    memory are given back once the readers hang up."""
    gw = ctx.gateway(GATEWAY_LINK_SECRET="abuse-streams-link-secret-0123456789")
    a, tok_a = ctx.user("streamsa")
    b, tok_b = ctx.user("streamsb")
    big, up, dl = 64 * MiB, pick(8, 4) * MiB, pick(32, 8) * MiB
    n_readers, max_streams, share = 20, 8, MEMORY_BUDGET // 4
    s3_put(f"private/{a}/st/big", 70, big)
    s3_put(f"private/{b}/st/own", 71, dl)
    a_job = create_job(tok_a, {"type": "download", "source": {"accessLevel": "private", "key": "st/big"}})
    a_job = wait_job(tok_a, a_job["id"], lambda j: j["state"] in FINAL, 30, what="pinned")
    b_job = create_job(tok_b, {"type": "download", "source": {"accessLevel": "private", "key": "st/own"}})
    b_job = wait_job(tok_b, b_job["id"], lambda j: j["state"] in FINAL, 30, what="pinned")
    if a_job["state"] != "completed" or not a_job.get("dataUrl") or b_job["state"] != "completed":
        raise Problem(f"download jobs not ready: A {a_job['state']} dataUrl {bool(a_job.get('dataUrl'))}, B {b_job['state']}")
    link = urllib.parse.urlsplit(a_job["dataUrl"])
    link_path = f"{link.path}?{link.query}"

    def b_round(tag: str) -> dict:
        return {"upload job": timed_upload_job(tok_b, f"st/up-{tag}", 72, up),
                "tus PATCH": timed_tus(tok_b, f"st/tus-{tag}", 73, up),
                "download": timed_download(tok_b, b_job["id"], 71, dl)}

    b_round("warm")     # the first transfers of a fresh process pay for its warm-up
    unloaded = b_round("unloaded")
    if not all(ok for ok, _, _ in unloaded.values()):
        raise Problem(f"B's requests failed with nothing else running: {unloaded}")

    # A's readers, all at once; only A holds anything while they settle.
    sampler = MetricSampler(PORT, ["gateway_memory_budget_used_bytes", "gateway_data_streams_open"], 0.1)
    sampler.start()
    readers: list = [None] * n_readers

    def open_reader(i: int):
        # Every other reader asks for the first 8 MiB: the old gateway sized each window by the
        # Range (whole object: 24 MiB), so together they could take the whole budget.
        readers[i] = stalled_get(link_path, headers={"Range": f"bytes=0-{8 * MiB - 1}"} if i % 2 else None)

    threads = [threading.Thread(target=open_reader, args=(i,), daemon=True) for i in range(n_readers)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    opened = time.monotonic() - t0
    time.sleep(3)       # past the ~1 s after which a stream not read shrinks to the block in hand
    a_only_peak = sampler.peak("gateway_memory_budget_used_bytes")
    a_only_streams = sampler.peak("gateway_data_streams_open")
    settled = metrics_text()
    a_settled = metric(settled, "gateway_memory_budget_used_bytes") or 0
    statuses = collections.Counter(f"{r['status']} {r['code'] or ''}".strip() for r in readers if r)
    holding = [r for r in readers if r and r["sock"] is not None]
    refused_429 = [r for r in readers if r and r["status"] == 429]

    loaded = b_round("loaded")
    loaded_peak = sampler.peak("gateway_memory_budget_used_bytes")
    still_open = 0
    for r in holding:        # are they still stalled streams (not closed by the gateway)?
        try:
            r["sock"].setblocking(False)
            still_open += r["sock"].recv(1, socket.MSG_PEEK) != b""
        except BlockingIOError:
            still_open += 1
        except OSError:
            pass
    for r in holding:
        r["sock"].close()
    t1 = time.monotonic()
    freed = None
    while time.monotonic() - t1 < 10:
        text = metrics_text()
        if (metric(text, "gateway_data_streams_open") or 0) == 0 and (metric(text, "gateway_memory_budget_used_bytes") or 0) == 0:
            freed = time.monotonic() - t1
            break
        time.sleep(0.1)
    sampler.finish()

    def show(d: dict) -> str:
        return ", ".join(f"{k} {'ok' if ok else 'FAILED ' + ans} {sec:.2f}s" for k, (ok, sec, ans) in d.items())

    ctx.fig(f"B unloaded: {show(unloaded)}")
    ctx.fig(f"{n_readers} stalled readers of A's dataUrl ({big // MiB} MiB, SO_RCVBUF 4 KiB), opened in {opened:.1f}s: "
            f"{dict(statuses)}; streams open peak {a_only_streams:.0f}; A's memory held: peak {a_only_peak / MiB:.1f} MiB, "
            f"{a_settled / MiB:.1f} MiB 3 s after the stall (share {share // MiB} MiB; "
            f"{len(sampler.series['gateway_memory_budget_used_bytes'])} samples of /metrics, {sampler.errors} failed)")
    ctx.fig(f"B with the readers stalled: {show(loaded)}; budget peak meanwhile {loaded_peak / MiB:.1f} MiB; "
            f"{still_open}/{len(holding)} readers still open at the end")
    ctx.fig(f"readers hung up: streams and memory back to 0 "
            f"{'never (10 s)' if freed is None else f'after {freed:.2f}s'}")
    ctx.check(len(refused_429) == n_readers - max_streams and all(r["code"] == "quota_exceeded" for r in refused_429),
              f"readers beyond {max_streams} refused 429 quota_exceeded ({len(refused_429)} of {n_readers - max_streams})")
    ctx.check(len(holding) >= 1, f"some of A's readers were served (200) and stalled ({len(holding)})")
    ctx.check(a_only_peak <= share, f"A's readers hold at most its share of the memory budget "
                                    f"({a_only_peak / MiB:.1f} MiB <= {share // MiB} MiB)")
    for k, (ok, sec, ans) in loaded.items():
        base = unloaded[k][1]
        ctx.check(ok, f"B's {k} succeeds with A's readers stalled ({ans})")
        ctx.check(sec <= max(3 * base, base + 1.0),
                  f"B's {k} at close to its unloaded speed ({sec:.2f}s vs {base:.2f}s unloaded; at most 3x, +1 s)")
    ctx.check(freed is not None, "streams and memory given back once the readers hang up")


class HookReceiver:
    """A webhook endpoint on loopback that acknowledges everything and keeps the events."""

    def __init__(self):
        self.lock = threading.Lock()
        self.events: list = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
                try:
                    event = json.loads(body)
                except ValueError:
                    event = {"unreadable": body[:100]}
                with outer.lock:
                    outer.events.append(event)
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

        class Server(ThreadingHTTPServer):
            daemon_threads = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def race(first, second, delay: float) -> tuple:
    """Runs first() and second() on two threads, second() `delay` seconds after first() (before
    it when negative). Returns their results."""
    out: list = [None, None]
    t0 = time.monotonic() + 0.02

    def run(i, fn, at):
        time.sleep(max(0.0, at - time.monotonic()))
        try:
            out[i] = fn()
        except Exception as e:   # noqa: BLE001 - a failed request is the race's outcome
            out[i] = e

    threads = [threading.Thread(target=run, args=(0, first, t0 + max(0.0, -delay)), daemon=True),
               threading.Thread(target=run, args=(1, second, t0 + max(0.0, delay)), daemon=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return out[0], out[1]


def object_version(key: str, old: bytes, new: bytes) -> str:
    try:
        body = s3().get_object(Bucket=CFG.bucket, Key=key)["Body"].read()
    except s3().exceptions.NoSuchKey:
        return "none"
    return "new" if body == new else "old" if body == old else f"other ({len(body)} bytes)"


def webhook_events(ids: list) -> dict:
    """Recorded webhook events per subject id (the outbox of the gateways of this database)."""
    if not ids:
        return {}
    rows = psql("SELECT subject_id, type FROM webhook_events WHERE subject_id IN ("
                + ", ".join(f"'{i}'" for i in ids) + ") ORDER BY created_at")
    out: dict = collections.defaultdict(list)
    for line in rows.splitlines():
        sid, kind = line.split("|")
        out[sid].append(kind)
    return out


def sc_completion(ctx: Ctx) -> None:
    """completion — cancel and abort racing the write of an object.
    Replays (GATEWAY_USER_RATE=1000 for the rounds; webhooks on, to a receiver on loopback):
    (a) 50 rounds (quick 12) of an upload job of 64 KiB over an older object of the same key,
    its PUT sent but for the last byte, then the last byte and `POST /v1/jobs/{id}/cancel` at a
    random offset from each other (within +-1.5x the measured time from a last byte to its answer);
    (b) 50 rounds (quick 12) of a client upload (`POST /v1/uploads`, its one part PUT to S3 with
    the presigned URL) over an older object, then `POST /v1/uploads/{id}/complete` and
    `DELETE /v1/uploads/{id}` at a random offset from each other (within +-1x a complete's time).
    Must hold, every round: never both succeed; (a) a cancel that answers 200 `canceled` leaves
    the job `canceled` and the old object in S3, a PUT that answers 200 `completed` leaves the job
    `completed` with the new object, a refused cancel is 409 `job_completing` — the old gateway
    answered the cancel 200 and the PUT 409 while the object was replaced; (b) exactly one of
    complete (200) and abort (204) succeeds, the loser is 409 `upload_not_open` (or 404 after a
    finished abort), S3 holds the new object exactly when complete won, the upload reads
    `completed` or `aborted`/404 accordingly, no multipart upload is left open, and each job and
    upload has exactly one webhook event, of the kind its end says."""
    hooks = HookReceiver()
    ctx.servers.append(hooks)
    ctx.gateway(GATEWAY_USER_RATE=1000, GATEWAY_WEBHOOK_URL=hooks.url,
                GATEWAY_WEBHOOK_SECRET="abuse-completion-webhook-secret")
    user, tok = ctx.user("completion")
    rounds, size = pick(50, 12), 64 * 1024
    rng = random.Random(CFG.run)

    # (a) cancel racing an upload job's last PUT
    def put_round(i: int, delay: float | None) -> dict:
        key = f"c/j{i}"
        old, new = b"old version " + str(i).encode(), b"".join(chunks(600 + i, size))
        s3().put_object(Bucket=CFG.bucket, Key=f"private/{user}/{key}", Body=old)
        job = create_job(tok, {"type": "upload", "accessLevel": "private", "key": key, "size": size})
        conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
        conn.putrequest("PUT", f"/v1/jobs/{job['id']}/data", skip_accept_encoding=True)
        for k, v in (("Authorization", "Bearer " + tok), ("Content-Length", str(size)),
                     ("Content-Type", "application/octet-stream")):
            conn.putheader(k, v)
        conn.endheaders()
        conn.send(new[:-1])
        time.sleep(0.05)
        times: dict = {}

        def last_byte():
            try:
                t = time.monotonic()
                conn.send(new[-1:])
                r = conn.getresponse()
                resp = Resp(r.status, r.getheaders(), r.read())
                times["put"] = time.monotonic() - t
                return resp
            finally:
                conn.close()

        def cancel():
            return call("POST", f"/v1/jobs/{job['id']}/cancel", tok)

        if delay is None:
            put, canc = last_byte(), None
        else:
            put, canc = race(last_byte, cancel, delay)
        end = wait_final(tok, job["id"], 30)
        return {"id": job["id"], "put": put, "cancel": canc, "end": end["state"], "seconds": times.get("put"),
                "object": object_version(f"private/{user}/{key}", old, new)}

    warm = [put_round(-1 - i, None) for i in range(3)]
    t_put = sorted(w["seconds"] or 0.05 for w in warm)[1]
    rows_a = []
    for i in range(rounds):
        rows_a.append(put_round(i, rng.uniform(-1.5 * t_put, 1.5 * t_put)))
    bad_a, kinds_a = [], collections.Counter()
    for r in rows_a:
        put, canc = r["put"], r["cancel"]
        put_ok = isinstance(put, Resp) and put.status == 200 and (put.json() or {}).get("state") == "completed"
        cancel_ok = isinstance(canc, Resp) and canc.status == 200 and (canc.json() or {}).get("state") == "canceled"
        cancel_desc = (f"{canc.status} {canc.code or (canc.json() or {}).get('state')}" if isinstance(canc, Resp)
                       else type(canc).__name__)
        put_desc = f"{put.status} {put.code or (put.json() or {}).get('state')}" if isinstance(put, Resp) else type(put).__name__
        kinds_a[f"cancel {cancel_desc} / PUT {put_desc} / {r['end']} / {r['object']}"] += 1
        why = []
        if put_ok and cancel_ok:
            why.append("both succeeded")
        if cancel_ok and (r["end"] != "canceled" or r["object"] != "old"):
            why.append("cancel answered canceled but the job or the object says otherwise")
        if put_ok and (r["end"] != "completed" or r["object"] != "new"):
            why.append("PUT answered completed but the job or the object says otherwise")
        if r["end"] == "completed" and r["object"] != "new" or r["end"] == "canceled" and r["object"] != "old":
            why.append("the job's end and S3's object disagree")
        if r["end"] not in ("completed", "canceled"):
            why.append(f"ended {r['end']}")
        if isinstance(canc, Resp) and canc.status != 200 and not (canc.status == 409 and canc.code == "job_completing"):
            why.append("cancel refused with something other than 409 job_completing")
        if isinstance(canc, Resp) and canc.status == 409 and r["end"] != "completed":
            why.append("cancel refused job_completing but the job did not complete")
        if why:
            bad_a.append(f"{r['id'][:8]}: {', '.join(why)} ({cancel_desc}, PUT {put_desc}, {r['end']}, object {r['object']})")

    # (b) abort racing complete on /v1/uploads
    def upload_round(i: int, delay: float | None) -> dict:
        key = f"c/u{i}"
        old, new = b"old version " + str(i).encode(), b"".join(chunks(700 + i, size))
        s3().put_object(Bucket=CFG.bucket, Key=f"private/{user}/{key}", Body=old)
        r = call("POST", "/v1/uploads", tok, json_body={"accessLevel": "private", "key": key, "size": size})
        if r.status != 201:
            raise Problem(f"POST /v1/uploads answered {r}")
        up = r.json()
        url = urllib.parse.urlsplit(up["parts"][0]["url"])
        conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=30)
        try:
            conn.request("PUT", f"{url.path}?{url.query}", body=new)
            pr = conn.getresponse()
            pr.read()
            if pr.status != 200:
                raise Problem(f"part PUT to S3 answered {pr.status}")
        finally:
            conn.close()
        uid = up["uploadId"]
        times: dict = {}

        def complete():
            t = time.monotonic()
            resp = call("POST", f"/v1/uploads/{uid}/complete", tok, json_body={})
            times["complete"] = time.monotonic() - t
            return resp

        def abort():
            return call("DELETE", f"/v1/uploads/{uid}", tok)

        if delay is None:
            comp, ab = complete(), None
        else:
            comp, ab = race(complete, abort, delay)
        state = call("GET", f"/v1/uploads/{uid}", tok)
        left = [u for u in s3_uploads(f"private/{user}/{key}") if u["Key"] == f"private/{user}/{key}"]
        return {"id": uid, "complete": comp, "abort": ab, "seconds": times.get("complete"),
                "state": (state.json() or {}).get("state") if state.status == 200 else str(state.status),
                "object": object_version(f"private/{user}/{key}", old, new), "left": len(left)}

    warm_b = [upload_round(-1 - i, None) for i in range(3)]
    t_complete = sorted(w["seconds"] or 0.05 for w in warm_b)[1]
    rows_b = [upload_round(i, rng.uniform(-t_complete, t_complete)) for i in range(rounds)]
    bad_b, kinds_b = [], collections.Counter()
    for r in rows_b:
        comp, ab = r["complete"], r["abort"]
        comp_ok = isinstance(comp, Resp) and comp.status == 200
        abort_ok = isinstance(ab, Resp) and ab.status == 204
        cd = f"{comp.status} {comp.code or ''}".strip() if isinstance(comp, Resp) else type(comp).__name__
        ad = f"{ab.status} {ab.code or ''}".strip() if isinstance(ab, Resp) else type(ab).__name__
        kinds_b[f"complete {cd} / abort {ad} / {r['state']} / {r['object']}"] += 1
        why = []
        if comp_ok == abort_ok:
            why.append("both succeeded" if comp_ok else "neither succeeded")
        if comp_ok and not (isinstance(ab, Resp) and ab.status == 409 and ab.code == "upload_not_open"):
            why.append("the losing abort is not 409 upload_not_open")
        if abort_ok and not (isinstance(comp, Resp) and (comp.status == 404 or comp.status == 409 and comp.code == "upload_not_open")):
            why.append("the losing complete is not 409 upload_not_open or 404")
        if comp_ok and (r["object"] != "new" or r["state"] != "completed"):
            why.append("complete won but the object or the upload says otherwise")
        if abort_ok and (r["object"] != "old" or r["state"] not in ("aborted", "404")):
            why.append("abort won but the object or the upload says otherwise")
        if r["left"]:
            why.append(f"{r['left']} multipart upload(s) left open")
        if why:
            bad_b.append(f"{r['id'][:8]}: {', '.join(why)} (complete {cd}, abort {ad}, {r['state']}, object {r['object']})")

    # one webhook event per job and upload, of the kind its end says
    time.sleep(2)
    events = webhook_events([r["id"] for r in rows_a + rows_b])
    wrong_events = []
    for r in rows_a:
        want = [f"job.{r['end']}"]
        if events.get(r["id"], []) != want:
            wrong_events.append(f"job {r['id'][:8]} ({r['end']}): {events.get(r['id'], [])}")
    for r in rows_b:
        comp_ok = isinstance(r["complete"], Resp) and r["complete"].status == 200
        want = ["upload.completed" if comp_ok else "upload.canceled"]
        if events.get(r["id"], []) != want:
            wrong_events.append(f"upload {r['id'][:8]}: {events.get(r['id'], [])}")
    delivered = len(hooks.events)

    ctx.fig(f"(a) {rounds} cancels racing an upload job's last byte (64 KiB; PUT completes in ~{t_put * 1000:.0f} ms, "
            f"offsets +-{1.5 * t_put * 1000:.0f} ms): " +
            "; ".join(f"{n} x {k}" for k, n in kinds_a.most_common()))
    ctx.fig(f"(b) {rounds} aborts racing complete on /v1/uploads (complete takes ~{t_complete * 1000:.0f} ms, offsets "
            f"+-{t_complete * 1000:.0f} ms): " + "; ".join(f"{n} x {k}" for k, n in kinds_b.most_common()))
    ctx.fig(f"webhook events recorded: {sum(len(v) for v in events.values())} for {len(rows_a) + len(rows_b)} jobs and "
            f"uploads ({len(wrong_events)} not exactly one of the right kind); {delivered} delivered to the receiver")
    for line in bad_a + bad_b + wrong_events:
        log(f"[completion] {line}")
    ctx.check(not bad_a, f"(a) API, job and object agree in every round, never both succeed ({len(bad_a)} rounds not: "
                         f"{'; '.join(bad_a[:3])})")
    ctx.check(not bad_b, f"(b) exactly one of complete and abort wins and S3 agrees ({len(bad_b)} rounds not: "
                         f"{'; '.join(bad_b[:3])})")
    ctx.check(not wrong_events, f"one webhook event per job and upload, of its kind ({'; '.join(wrong_events[:3])})")


def sc_fairness(ctx: Ctx) -> None:
    """fairness — one account's slow one-part jobs in every worker slot.
    Replays (GATEWAY_WORKERS=4): user A creates six imports, each from a source on loopback that
    serves 80 KiB at 2 KiB/s (2 KiB writes: one part that takes 40 s); once four of them run,
    user B creates a 16-byte copy (the full run then user C too, once B's has completed, and lets
    A's six finish).
    Must hold: B's copy (and C's) reaches `running` or `completed` within 2 s — the old gateway
    yielded a slot only between parts, and kept B's copy `queued` for more than 20 s; A never runs
    more than GATEWAY_WORKERS jobs at once; (full run) A's six imports complete byte-identical."""
    src = SourceServer()
    ctx.servers.append(src)
    gw = ctx.gateway(GATEWAY_WORKERS=4)
    a, tok_a = ctx.user("fairnessa")
    size, rate = 80 * 1024, 2048
    ids = [create_job(tok_a, {"type": "import", "sourceUrl": src.url(f"slow{i}", size, rate, step=2048),
                              "accessLevel": "private", "key": f"f/i{i}"})["id"] for i in range(6)]
    deadline, running = time.monotonic() + 15, 0
    while time.monotonic() < deadline:
        running = sum(1 for i in ids if (get_job(tok_a, i) or {}).get("state") == "running")
        if running >= 4 and sum(src.get(f"slow{i}")["open"] for i in range(6)) >= 4:
            break
        time.sleep(0.1)
    time.sleep(0.5)
    a_states = collections.Counter((get_job(tok_a, i) or {}).get("state") for i in ids)
    a_peak = [a_states.get("running", 0)]
    ctx.fig(f"A's 6 slow one-part imports (80 KiB at 2 KiB/s), workers 4: {dict(a_states)}, "
            f"{sum(src.get(f'slow{i}')['open'] for i in range(6))} source connections open")
    if running < 4:
        raise Problem(f"A's imports did not fill the 4 workers within 15 s ({dict(a_states)})")

    def probe(label: str, seed: int) -> tuple[str, float, str]:
        other, tok_o = ctx.user(label)
        s3_put(f"private/{other}/tiny", seed, 16)
        t0 = time.monotonic()
        job = create_job(tok_o, {"type": "copy", "source": {"accessLevel": "private", "key": "tiny"},
                                 "destination": {"accessLevel": "private", "key": "tiny-copy"}})
        started, state = None, job["state"]
        while time.monotonic() - t0 < pick(20, 8):
            state = (get_job(tok_o, job["id"]) or {}).get("state", state)
            if state in ("running", "completed"):
                started = time.monotonic() - t0
                break
            running_a = sum(1 for i in ids if (get_job(tok_a, i) or {}).get("state") == "running")
            a_peak[0] = max(a_peak[0], running_a)
            time.sleep(0.05)
        end = wait_final(tok_o, job["id"], 30) if started is not None else {"state": state}
        shown = f"{state} after {started:.2f}s, then {end['state']}" if started is not None else \
            f"still {state} after {pick(20, 8)} s"
        return shown, started, end["state"]

    probes = [("B", *probe("fairnessb", 80))]
    if not CFG.quick:
        probes.append(("C", *probe("fairnessc", 81)))
    for label, shown, started, _ in probes:
        ctx.fig(f"{label}'s 16-byte copy: {shown}")
        ctx.check(started is not None and started <= 2.0,
                  f"{label}'s copy reaches running or completed within 2 s ({shown})")
    if CFG.quick:
        for i in ids:
            call("POST", f"/v1/jobs/{i}/cancel", tok_a)
    else:
        t0 = time.monotonic()
        ends = {}
        while time.monotonic() - t0 < 180 and len(ends) < len(ids):
            for i in ids:
                j = get_job(tok_a, i) or {}
                if j.get("state") in FINAL:
                    ends[i] = j["state"]
            a_peak[0] = max(a_peak[0], sum(1 for i in ids if (get_job(tok_a, i) or {}).get("state") == "running"))
            time.sleep(0.5)
        identical = sum(1 for n in range(6) if ends.get(ids[n]) == "completed"
                        and s3_sha256(f"private/{a}/f/i{n}")[0] == digest(7, size))
        ctx.fig(f"A's imports: {dict(collections.Counter(ends.values()))} after {time.monotonic() - t0:.0f}s more, "
                f"{identical}/6 byte-identical")
        ctx.check(identical == 6, f"A's six imports complete byte-identical ({identical})")
    ctx.fig(f"A's running jobs at most {a_peak[0]} at once")
    ctx.check(a_peak[0] <= 4, f"A never runs more than the 4 workers at once ({a_peak[0]})")


SCENARIOS = [
    ("crash", sc_crash),
    ("longpolls", sc_longpolls),
    ("memory", sc_memory),
    ("metrics", sc_metrics),
    ("imports", sc_imports),
    ("tails", sc_tails),
    ("tus", sc_tus),
    ("spool", sc_spool),
    ("bodies", sc_bodies),
    ("expiry", sc_expiry),
    ("quotas", sc_quotas),
    ("readyz", sc_readyz),
    ("smaller", sc_smaller),
    ("keys", sc_keys),
    ("rotation", sc_rotation),
    ("queries", sc_queries),
    ("streams", sc_streams),
    ("completion", sc_completion),
    ("fairness", sc_fairness),
]


# ---------------------------------------------------------------------------------------------
# Running, reporting, cleaning up

class Result:
    def __init__(self, name: str):
        self.name = name
        self.verdict = "SKIP"
        self.line = ""
        self.failed: list[str] = []
        self.reason = ""
        self.peak = 0
        self.seconds = 0.0
        self.figures: list[str] = []


def stack_identity() -> str:
    """When PostgreSQL last started and which SeaweedFS process serves S3: the shared stack may be
    restarted by someone else (the project's own database-restart test stops PostgreSQL, and
    `scripts/stack.sh down` both), which disturbs any scenario running then."""
    try:
        pg = psql("SELECT pg_postmaster_start_time()", stats=True)
    except (Problem, subprocess.TimeoutExpired):
        pg = "unreachable"
    try:
        pid = (Path(os.environ.get("ABUSE_STACK_ROOT") or CFG.root) / ".stack" / "weed.pid").read_text().strip()
        with open(f"/proc/{pid}/stat") as f:
            weed = f"{pid}@{f.read().rsplit(')', 1)[1].split()[19]}"
    except (OSError, IndexError):
        weed = "unreachable"
    return f"PostgreSQL started {pg}, SeaweedFS pid {weed}"


def run_scenario_guarded(name: str, fn) -> Result:
    """Runs a scenario; when PostgreSQL or SeaweedFS was restarted (or down) meanwhile, runs it
    again, up to two more times, and says so. If every attempt was disturbed, the scenario is SKIP."""
    notes = []
    for attempt in range(3):
        before = stack_identity()
        ODD_READS.clear()
        res = run_scenario(name, fn, attempt + 1)
        after = stack_identity()
        if before == after and "unreachable" not in before:
            if notes:
                note = f"{len(notes)} earlier attempt(s) discarded: " + "; ".join(notes)
                res.figures.append(note)
                res.line += " | " + note
            return res
        notes.append(f"attempt {attempt + 1} ({res.verdict}) ran while the stack was restarted by someone else "
                     f"({before} -> {after})")
        if res.failed:
            log(f"[{name}] the discarded attempt's failures: {'; '.join(res.failed)}")
        log(f"[{name}] {notes[-1]}")
        time.sleep(5)
    res.verdict, res.failed = "SKIP", []
    res.reason = "the stack (PostgreSQL or SeaweedFS) was restarted by someone else during each of 3 attempts"
    res.line = f"{name:<10} SKIP: {res.reason}"
    return res


def run_scenario(name: str, fn, attempt: int = 1) -> Result:
    res = Result(name)
    ctx = Ctx(name, attempt)
    sampler = Sampler(ctx)
    sampler.start()
    t0 = time.monotonic()
    log(f"[{name}] start")
    error = None
    try:
        fn(ctx)
    except Skip as e:
        res.reason = str(e)
    except Problem as e:
        error = str(e)
    except Exception as e:   # noqa: BLE001 - any harness error is reported as the scenario's failure
        error = f"{type(e).__name__}: {e}"
        traceback.print_exc(file=sys.stderr)
    res.seconds = time.monotonic() - t0
    time.sleep(0.2)
    sampler.stopped.set()
    sampler.join(5)
    res.peak = sampler.peak
    last = ctx.gateways[-1] if ctx.gateways else None
    alive = last.alive() if last else False
    for gw in ctx.gateways:
        gw.note_death()
    deaths = [f"{gw.port}: {d}" for gw in ctx.gateways for d in gw.deaths]
    if last is not None and alive:
        housekeeping(ctx, last)
    for gw in ctx.gateways:
        gw.stop()
    for srv in ctx.servers:
        srv.stop()
    res.figures = ctx.figures
    if ctx.gateways and sampler.samples == 0 and not res.reason:
        res.reason = "no VmRSS could be read from /proc/PID/status: the memory rule cannot be checked"
    if res.reason and (error is not None or not all(ok for ok, _ in ctx.checks)):
        ctx.figures.append(f"then not measurable: {res.reason}")    # a failure seen before stays a FAIL
    elif res.reason:
        res.verdict = "SKIP"
        res.line = f"{name:<10} SKIP: {res.reason}" + (" | " + " | ".join(ctx.figures) if ctx.figures else "")
        return res
    checks = list(ctx.checks)
    odd5 = {k: v for k, v in ODD_READS.items() if k.startswith("5")}
    if ODD_READS:
        ctx.figures.append(f"job reads answered {dict(ODD_READS)}")
    checks.append((not odd5, f"no 5xx to job reads ({sum(odd5.values())})"))
    if error:
        checks.append((False, f"scenario could not finish: {error}"))
    if ctx.gateways:
        checks.append((res.peak < RSS_LIMIT, f"peak RSS {res.peak / MiB:.1f} MiB < {RSS_LIMIT // MiB} MiB"))
        checks.append((alive, "gateway alive at the end"))
        checks.append((not deaths, f"no gateway died on its own ({', '.join(deaths) or 'none'})"))
    res.failed = [what for ok, what in checks if not ok]
    res.verdict = "FAIL" if res.failed else "PASS"
    if res.failed and ctx.gateways:
        for gw in ctx.gateways:
            tail = gw.log_tail(6)
            if tail:
                log(f"[{name}] gateway {gw.port} log tail: {tail}")
    res.line = (f"{name:<10} peak RSS {res.peak / MiB:.1f} MiB, alive {'yes' if alive else 'NO'}, {res.seconds:.0f}s | "
                + " | ".join(ctx.figures))
    return res


def cleanup_s3() -> None:
    """Removes the objects and open multipart uploads of this run's identities (abuse-RUN-*) from
    the abuse bucket."""
    prefixes = [f"private/abuse-{CFG.run}-", f"protected/abuse-{CFG.run}-", f"public/foreign/{CFG.run}/"]
    for prefix in prefixes:
        try:
            for u in s3_uploads(prefix):
                s3().abort_multipart_upload(Bucket=CFG.bucket, Key=u["Key"], UploadId=u["UploadId"])
            paginator = s3().get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=CFG.bucket, Prefix=prefix):
                keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
                if keys:
                    try:
                        s3().delete_objects(Bucket=CFG.bucket, Delete={"Objects": keys, "Quiet": True})
                    except Exception:   # noqa: BLE001 - a key XML cannot carry (U+FFFE, `keys`): one by one
                        for key in keys:
                            s3().delete_object(Bucket=CFG.bucket, Key=key["Key"])
        except Exception as e:   # noqa: BLE001 - cleanup is best effort
            log(f"cleanup of {prefix} failed: {e}")


def markdown(results: list[Result], started: str, argv: list[str]) -> str:
    out = [f"Run {started}: `scripts/abuse.sh {' '.join(argv)}`".rstrip(), "",
           "| scenario | figures | verdict |", "|---|---|---|"]
    for r in results:
        figs = "; ".join(r.figures) if r.figures else r.reason
        fig = f"peak RSS {r.peak / MiB:.1f} MiB; " + figs if r.verdict != "SKIP" else figs
        verdict = r.verdict + (": " + "; ".join(r.failed) if r.failed else "")
        out.append(f"| {r.name} | {fig.replace('|', '/')} | {verdict.replace('|', '/')} |")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description="Replays abuse by one ordinary account against TransferGateway.")
    ap.add_argument("scenarios", nargs="*", help="scenarios to run (default: all): " + " ".join(n for n, _ in SCENARIOS))
    ap.add_argument("--quick", action="store_true", help="smaller sizes and shorter durations (under ~4 minutes)")
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--markdown", help="also write the results as a Markdown table to this file")
    args = ap.parse_args()
    names = [n for n, _ in SCENARIOS]
    unknown = [s for s in args.scenarios if s not in names]
    if unknown:
        print(f"unknown scenario(s): {' '.join(unknown)}; known: {' '.join(names)}", file=sys.stderr)
        return 2
    chosen = [(n, f) for n, f in SCENARIOS if not args.scenarios or n in args.scenarios]

    global PIDS_FILE
    CFG.tmp = Path(args.tmp)
    CFG.bin = args.bin
    CFG.db_url = args.database_url
    CFG.db_name = urllib.parse.urlsplit(args.database_url).path.lstrip("/")
    CFG.stats_url = args.database_url.rsplit("/", 1)[0] + "/postgres"
    CFG.quick = args.quick
    CFG.run = time.strftime("%m%d%H%M%S") + "".join(random.choices(string.ascii_lowercase, k=3))
    CFG.secret = os.environ["GATEWAY_JWT_SECRET"]
    CFG.s3_endpoint = os.environ["GATEWAY_S3_ENDPOINT"]
    PIDS_FILE = CFG.tmp / "pids"

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)

    try:
        s3().head_bucket(Bucket=CFG.bucket)
    except Exception:   # noqa: BLE001 - missing: create it
        s3().create_bucket(Bucket=CFG.bucket)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    log(f"run {CFG.run}: {len(chosen)} scenario(s){' (quick)' if CFG.quick else ''}, binary {CFG.bin}, "
        f"database {CFG.db_name}, bucket {CFG.bucket}")
    results: list[Result] = []
    t0 = time.monotonic()
    try:
        for name, fn in chosen:
            res = run_scenario_guarded(name, fn)
            results.append(res)
            print(res.line, flush=True)
    except KeyboardInterrupt:
        log("interrupted")
    finally:
        for gw in ALL_GATEWAYS:
            try:
                gw.stop(grace=5)
            except Exception:   # noqa: BLE001
                pass
        t_clean = time.monotonic()
        cleanup_s3()
        log(f"removed this run's objects from the bucket in {time.monotonic() - t_clean:.0f}s")

    print("", flush=True)
    print(f"summary ({time.monotonic() - t0:.0f}s{', quick' if CFG.quick else ''}; rule: peak RSS < "
          f"{RSS_LIMIT // MiB} MiB and the gateway alive at the end, plus each scenario's expectation)")
    for r in results:
        print(f"  {r.name:<10} {r.verdict}" + (f"  ({r.reason})" if r.verdict == "SKIP" else "")
              + ("".join(f"\n      - {f}" for f in r.failed)))
    if args.markdown:
        argv = (["--quick"] if CFG.quick else []) + args.scenarios
        Path(args.markdown).write_text(markdown(results, started, argv))
    if len(results) < len(chosen):
        return 130
    return 1 if any(r.verdict == "FAIL" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
