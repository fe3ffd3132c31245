#!/usr/bin/env python3
"""scripts/scale_check.py — docker/compose.scale.yaml's shape on loopback, under a mixed workload.

Run it through scripts/scale-check.sh, which brings the local stack up, makes the database
`gateway_scale`, copies the binaries aside and calls this file. It runs `transfer-gateway migrate`
once (the link secret is generated into PostgreSQL; GATEWAY_LINK_SECRET is never set), three
`transfer-gateway serve` on 127.0.0.1:18101-18103 with identical settings and spools of their own,
and Debian's nginx on 127.0.0.1:18100 with a config derived from docker/nginx-scale.conf (the
upstream's addresses, the listen address, log and temp paths changed; nothing else). Every
request a client makes goes through nginx, so consecutive requests reach different instances;
the X-Request-Id of each answer names the instance that gave it (its prefix is per process).

The workload, each item checked byte-identical (SHA-256) at the end: tus uploads (many small
PATCHes), upload jobs (PUT then PATCH from Upload-Offset), client uploads with transfer-client,
presigned PUT/GET straight to S3, ranged downloads through a download job's dataUrl, event
streams that see their job complete while its bytes go through other requests, and long polls
woken by a change made through another request.

  1. the workload with all three up: no error of any kind;
  2. the workload again, and two of the three instances SIGKILLed once transfers are in flight
     (started again a few seconds later): every item still byte-identical (the clients retry on
     connection errors, 502, 503 and 409 upload_in_progress as a real client does), then no S3
     multipart upload left open under this run's prefix;
  3. a rolling restart (SIGTERM, wait for the exit, start, wait for /readyz, the next one) under
     a steady workload: every answer a client sees (nginx's access log included, so
     transfer-client's too) is a success or a 503 with Retry-After.
A gateway 5xx other than a 503 with Retry-After fails every phase and is printed with its
request, instance, body and the instance's log lines for it.
"""
from __future__ import annotations

import argparse
import base64
import collections
import concurrent.futures as cf
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
import uuid
from pathlib import Path

import boto3
import requests
from botocore.config import Config as BotoConfig

MiB = 1 << 20
NGINX_PORT = 18100
GATEWAY_PORTS = (18101, 18102, 18103)
BASE = f"http://127.0.0.1:{NGINX_PORT}"
FINAL = {"completed", "failed", "canceled"}


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)


class Failed(Exception):
    """An item could not be carried out (the reason is printed)."""


# ---------------------------------------------------------------------------------------------
# Processes: the gateways and nginx.

class Gateway:
    def __init__(self, ctx: "Context", index: int):
        self.ctx = ctx
        self.name = f"gw{index + 1}"
        self.port = GATEWAY_PORTS[index]
        self.spool = ctx.tmp / f"spool-{index + 1}"
        self.logfile = ctx.tmp / f"{self.name}.log"
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> None:
        self.spool.mkdir(exist_ok=True)
        env = dict(self.ctx.gateway_env)
        env.update(GATEWAY_PORT=str(self.port), GATEWAY_SPOOL_DIR=str(self.spool))
        self.starts += 1
        with open(self.logfile, "ab") as out:
            out.write(f'{{"scale-check":"start {self.starts}"}}\n'.encode())
            out.flush()
            self.proc = subprocess.Popen([self.ctx.bin, "serve"], env=env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=out, start_new_session=True)
        with open(self.ctx.tmp / "pids", "a") as f:
            f.write(f"{self.proc.pid}\n")

    def wait_ready(self, timeout: float = 60) -> float:
        """Waits for 200 from /readyz on the instance itself; learns its X-Request-Id prefix."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                raise Failed(f"{self.name} exited with {self.proc.returncode} while starting (log {self.logfile})")
            try:
                r = requests.get(f"http://127.0.0.1:{self.port}/readyz", timeout=3)
                rid = r.headers.get("X-Request-Id", "")
                if rid:
                    self.ctx.prefixes[rid.rsplit("-", 1)[0]] = f"{self.name}#{self.starts}"
                if r.status_code == 200:
                    return time.monotonic() - t0
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise Failed(f"{self.name} not ready after {timeout:.0f} s (log {self.logfile})")

    def start_ready(self, attempts: int = 3) -> float:
        """Starts the instance and waits for /readyz; an instance that exits while starting (on
        this shared machine PostgreSQL's connect can time out under load) is started again, as an
        orchestrator would, and counted."""
        for attempt in range(1, attempts + 1):
            self.start()
            try:
                return self.wait_ready()
            except Failed as e:
                if self.proc.poll() is None or attempt == attempts:
                    raise
                tail = self.logfile.read_text(errors="replace").strip().splitlines()[-1:]
                log(f"{e}; started again ({tail})")
                self.ctx.restarts.append(f"{self.name}: {tail[0][:200] if tail else ''}")
        raise AssertionError("unreachable")

    def wait_in_rotation(self, timeout: float = 30) -> float:
        """Waits until nginx sends this instance requests again (an answer through nginx carries
        the X-Request-Id prefix of its current process): nginx skips a gateway for fail_timeout
        after max_fails errors, and stopping the next one before that could leave none."""
        t0, me = time.monotonic(), f"{self.name}#{self.starts}"
        s = requests.Session()
        while time.monotonic() - t0 < timeout:
            try:
                r = s.get(f"{BASE}/healthz", timeout=3)
                rid = r.headers.get("X-Request-Id", "")
                if self.ctx.prefixes.get(rid.rsplit("-", 1)[0]) == me:
                    return time.monotonic() - t0
            except requests.RequestException:
                s = requests.Session()
            time.sleep(0.05)
        raise Failed(f"nginx sent {self.name} no request within {timeout:.0f} s of it being ready")

    def signal(self, sig: int) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait_exit(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Nginx:
    def __init__(self, ctx: "Context"):
        self.ctx = ctx
        self.dir = ctx.tmp / "nginx"
        self.access = self.dir / "access.log"
        self.errors = self.dir / "error.log"
        self.proc: subprocess.Popen | None = None

    def config(self) -> str:
        """docker/nginx-scale.conf with loopback addresses and paths of our own; each change must
        find its line, so a reworded source file fails here instead of testing something else."""
        text = (self.ctx.root / "docker/nginx-scale.conf").read_text()
        changes = [
            (r"server gateway-(\d+):8080", lambda m: f"server 127.0.0.1:{GATEWAY_PORTS[int(m.group(1)) - 1]}"),
            (r"listen 8080;", lambda m: f"listen 127.0.0.1:{NGINX_PORT};"),
            (r"error_log /dev/stderr warn;", lambda m: f"error_log {self.errors} warn;\npid {self.dir}/nginx.pid;\n"
                                                       "daemon off;\nworker_processes_placeholder"),
            (r"worker_processes auto;\n", lambda m: ""),
            (r"access_log /dev/stdout gateway;",
             lambda m: "log_format scale '$msec $request_method $uri $status ra=$sent_http_retry_after "
                       "rid=$sent_http_x_request_id up=$upstream_addr us=$upstream_status';\n"
                       f"    access_log {self.access} scale;"),
            (r"http \{\n", lambda m: "http {\n" + "".join(
                f"    {name}_temp_path {self.dir}/{name};\n"
                for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))),
        ]
        for pattern, repl in changes:
            text, n = re.subn(pattern, repl, text)
            if n == 0:
                raise Failed(f"docker/nginx-scale.conf: no line matches {pattern!r}; update scale_check.py")
        user = "user root;\n" if os.geteuid() == 0 else ""
        return text.replace("worker_processes_placeholder", user + "worker_processes 2;")

    def start(self) -> None:
        self.dir.mkdir(exist_ok=True)
        conf = self.dir / "nginx.conf"
        conf.write_text(self.config())
        out = open(self.dir / "stderr.log", "wb")
        self.proc = subprocess.Popen(["nginx", "-p", str(self.dir), "-c", str(conf), "-e", str(self.errors)],
                                     stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
        with open(self.ctx.tmp / "pids", "a") as f:
            f.write(f"{self.proc.pid}\n")
        for _ in range(100):
            if self.proc.poll() is not None:
                raise Failed(f"nginx exited: {(self.dir / 'stderr.log').read_text()} {self.errors.read_text() if self.errors.exists() else ''}")
            try:
                requests.get(f"{BASE}/healthz", timeout=2)
                return
            except requests.RequestException:
                time.sleep(0.1)
        raise Failed("nginx does not answer")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def size(self) -> int:
        return self.access.stat().st_size if self.access.exists() else 0

    def lines(self, start: int, end: int) -> list[str]:
        with open(self.access, "rb") as f:
            f.seek(start)
            return f.read(end - start).decode(errors="replace").splitlines()


# ---------------------------------------------------------------------------------------------
# Answers: every one a client sees is recorded with the instance that gave it.

class Recorder:
    def __init__(self, ctx: "Context"):
        self.ctx = ctx
        self.lock = threading.Lock()
        self.phase = ""
        self.answers: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.errors: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.bad: dict[str, list] = collections.defaultdict(list)   # gateway 5xx, with details
        self.notes: dict[str, list] = collections.defaultdict(list)

    def instance(self, r: requests.Response | None) -> str:
        rid = r.headers.get("X-Request-Id", "") if r is not None else ""
        if not rid:
            return "nginx"
        return self.ctx.prefixes.get(rid.rsplit("-", 1)[0], "?" + rid)

    def answer(self, what: str, r: requests.Response) -> str:
        inst = self.instance(r)
        kind = self.classify(r)
        with self.lock:
            self.answers[self.phase][kind] += 1
            if not kind.startswith("ok"):
                self.errors[self.phase][f"{what}: {kind}"] += 1
            if r.status_code >= 500 and inst != "nginx" and not (r.status_code == 503 and r.headers.get("Retry-After")):
                body = r.text[:400]
                self.bad[self.phase].append(
                    f"{r.request.method} {r.request.url.split('?')[0]} -> {r.status_code} from {inst} "
                    f"(X-Request-Id {r.headers.get('X-Request-Id')}): {body}")
        return inst

    def note(self, what: str) -> None:
        with self.lock:
            self.errors[self.phase]["upload job: every byte committed after a break, empty PATCH sent (not an error)"] += 1
            self.notes[self.phase].append(what)

    def connection_error(self, what: str, error: Exception) -> None:
        with self.lock:
            self.answers[self.phase]["connection error"] += 1
            self.errors[self.phase][f"{what}: connection error ({type(error).__name__})"] += 1

    @staticmethod
    def classify(r: requests.Response) -> str:
        s = r.status_code
        if s < 400:
            return f"ok {s}"
        code = ""
        if "json" in r.headers.get("Content-Type", ""):
            try:
                code = " " + str(r.json().get("code", ""))
            except ValueError:
                pass
        origin = "gateway" if r.headers.get("X-Request-Id") else "nginx"
        ra = " Retry-After" if r.headers.get("Retry-After") else ""
        return f"{s}{code} ({origin}){ra}"


# ---------------------------------------------------------------------------------------------
# A client that retries as a real one does.

class Retry(Exception):
    """A transient failure: the item re-reads where it stands and goes on."""

    def __init__(self, wait: float):
        self.wait = wait


class Client:
    def __init__(self, ctx: "Context", token: str):
        self.ctx = ctx
        self.token = token
        self.local = threading.local()

    def session(self) -> requests.Session:
        s = getattr(self.local, "s", None)
        if s is None:
            s = self.local.s = requests.Session()
        return s

    def call(self, what: str, method: str, url: str, *, auth: bool = True, ok=(200, 201, 204), stream=False,
             timeout: float = 60, **kw) -> requests.Response:
        """One request through nginx. Success: the response. Transient (connection error, 502/504,
        503 or 429 with Retry-After, 409 upload_in_progress): Retry. Anything else: Failed."""
        if not url.startswith("http"):
            url = BASE + url
        headers = kw.pop("headers", {})
        if auth:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            r = self.session().request(method, url, headers=headers, stream=stream, timeout=timeout, **kw)
        except requests.RequestException as e:
            self.ctx.rec.connection_error(what, e)
            self.local.s = None
            raise Retry(0.3)
        if not stream or r.status_code not in ok:
            r.content  # noqa: B018 — read the body so the connection is reused
        self.ctx.rec.answer(what, r)
        if r.status_code in ok:
            return r
        ra = r.headers.get("Retry-After")
        code = ""
        try:
            code = r.json().get("code", "") if "json" in r.headers.get("Content-Type", "") else ""
        except ValueError:
            pass
        if r.status_code in (502, 504) and not r.headers.get("X-Request-Id"):
            raise Retry(0.3)
        if r.status_code in (503, 429) and ra:
            raise Retry(min(float(ra), 10))
        if r.status_code == 409 and code in ("upload_in_progress", "offset_mismatch"):
            raise Retry(min(float(ra or 1), 10))
        raise Failed(f"{what}: {method} {url.split('?')[0]} answered {r.status_code} {r.text[:300]}")


def retrying(fn, deadline: float, what: str):
    """Calls fn until it returns, sleeping as each Retry says; Failed past the deadline."""
    while True:
        try:
            return fn()
        except Retry as r:
            if time.monotonic() + r.wait > deadline:
                raise Failed(f"{what}: still failing at the deadline")
            time.sleep(r.wait)


# ---------------------------------------------------------------------------------------------
# The items. Each returns a dict: kind, bytes, ok, detail; raises Failed on a failure.

def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def s3_sha(ctx: "Context", object_key: str) -> tuple[str, int]:
    h, size = hashlib.sha256(), 0
    body = ctx.s3.get_object(Bucket=ctx.bucket, Key=object_key)["Body"]
    for piece in iter(lambda: body.read(MiB), b""):
        h.update(piece)
        size += len(piece)
    return h.hexdigest(), size


def tus_upload(ctx: "Context", cl: Client, key: str, data: bytes, chunk: int, deadline: float) -> dict:
    meta = ",".join(f"{k} {base64.b64encode(v.encode()).decode()}" for k, v in
                    (("key", key), ("accessLevel", "private"), ("filetype", "application/octet-stream")))
    idem = str(uuid.uuid4())
    tus = {"Tus-Resumable": "1.0.0"}
    r = retrying(lambda: cl.call("tus create", "POST", "/v1/tus/", ok=(201,), headers={
        **tus, "Upload-Length": str(len(data)), "Upload-Metadata": meta, "Idempotency-Key": idem}), deadline, "tus create")
    loc = r.headers["Location"]
    url = loc if loc.startswith("http") else BASE + loc
    offset, instances = 0, set()

    def head() -> int:
        h = cl.call("tus HEAD", "HEAD", url, ok=(200, 204), headers=dict(tus))
        return int(h.headers["Upload-Offset"])

    broken = False
    while offset < len(data):
        try:
            p = cl.call("tus PATCH", "PATCH", url, ok=(204,), data=data[offset:offset + chunk], headers={
                **tus, "Upload-Offset": str(offset), "Content-Type": "application/offset+octet-stream"})
            instances.add(ctx.rec.instance(p))
            offset = int(p.headers["Upload-Offset"])
        except Retry as e:
            broken = True
            time.sleep(e.wait)
            if time.monotonic() > deadline:
                raise Failed(f"tus {key}: not whole at the deadline (offset {offset})")
            offset = retrying(head, deadline, "tus HEAD")
    job_id = url.rstrip("/").rsplit("/", 1)[1]
    # A tus client is done once HEAD says Upload-Offset = Upload-Length; the gateway must then
    # complete the object on its own (within a lease and some, here 10 + 20 s).
    try:
        job = wait_final(ctx, cl, job_id, min(deadline, time.monotonic() + 30) if broken else deadline)
    except Failed:
        now = retrying(lambda: cl.call("job GET", "GET", f"/v1/jobs/{job_id}"), deadline, "job GET").json()
        raise Failed(
            f"GATEWAY BUG? tus upload {job_id} ({key}, {len(data)} bytes): after a PATCH was cut by the kill, HEAD "
            f"answered Upload-Offset = Upload-Length, so a tus client has nothing left to send, yet the job is still "
            f"{now['state']} (bytesCommitted {now['bytesCommitted']}, updatedAt {now['updatedAt']}) 30 s later: no "
            f"instance completes an upload whose request died after committing every byte")
    return {"kind": "tus", "bytes": len(data), "object": job["objectKey"], "sha": sha(data),
            "detail": f"PATCHes on {len(instances)} instances"}


def wait_final(ctx: "Context", cl: Client, job_id: str, deadline: float) -> dict:
    while True:
        job = retrying(lambda: cl.call("job GET", "GET", f"/v1/jobs/{job_id}?wait=10", ok=(200, 304)),
                       deadline, "job GET")
        if job.status_code == 200:
            body = job.json()
            if body["state"] in FINAL:
                if body["state"] != "completed":
                    raise Failed(f"job {job_id} ended {body['state']}: {body.get('error')}")
                return body
        if time.monotonic() > deadline:
            raise Failed(f"job {job_id} not completed at the deadline")


def create_upload_job(cl: Client, key: str, size: int, deadline: float) -> dict:
    idem = str(uuid.uuid4())
    body = {"type": "upload", "accessLevel": "private", "key": key, "size": size}
    return retrying(lambda: cl.call("job create", "POST", "/v1/jobs", ok=(200, 201), json=body,
                                    headers={"Idempotency-Key": idem}), deadline, "job create").json()


def send_upload_job(ctx: "Context", cl: Client, job_id: str, data: bytes, pieces: list[int], deadline: float,
                    pause: float = 0) -> set:
    """PUT the first piece, PATCH the others from Upload-Offset; after any failure, read the job's
    bytesCommitted and go on from there (PUT again only when it is 0)."""
    instances, offset, i, state, broken = set(), 0, 0, "pending", False
    bounds = [sum(pieces[:k + 1]) for k in range(len(pieces))]
    # After a break with every byte committed, the job may still wait for its completion: as
    # docs/api-guide.md says (and transfer-client does), a PATCH with an empty body at that
    # offset completes the object.
    while offset < len(data) or i == 0 or (broken and state not in FINAL):
        end = next((b for b in bounds if b > offset), len(data))
        if offset == len(data) and i > 0:
            ctx.rec.note(f"upload job {job_id}: every byte committed after a break, not completed: empty PATCH")
        try:
            if offset == 0:
                r = cl.call("job PUT", "PUT", f"/v1/jobs/{job_id}/data", ok=(200,), data=data[:end],
                            headers={"Content-Type": "application/octet-stream"})
            else:
                r = cl.call("job PATCH", "PATCH", f"/v1/jobs/{job_id}/data", ok=(200,), data=data[offset:end],
                            headers={"Content-Type": "application/offset+octet-stream", "Upload-Offset": str(offset)})
            instances.add(ctx.rec.instance(r))
            answer = r.json()
            offset, state = answer["bytesCommitted"], answer["state"]
            if state == "completed":
                offset = len(data)
            i += 1
            if pause and offset < len(data):
                time.sleep(pause)
        except Retry as e:
            broken = True
            time.sleep(e.wait)
            if time.monotonic() > deadline:
                raise Failed(f"upload job {job_id}: not whole at the deadline (offset {offset})")
            job = retrying(lambda: cl.call("job GET", "GET", f"/v1/jobs/{job_id}"), deadline, "job GET").json()
            offset, state = job["bytesCommitted"], job["state"]
            if state == "completed":
                offset = len(data)
            elif state in FINAL:
                raise Failed(f"upload job {job_id} ended {state}: {job.get('error')}")
            i = max(i, 1)
    return instances


def upload_job(ctx: "Context", cl: Client, key: str, data: bytes, deadline: float) -> dict:
    job = create_upload_job(cl, key, len(data), deadline)
    n = len(data)
    instances = send_upload_job(ctx, cl, job["id"], data, [n * 2 // 5, n * 3 // 10, n - n * 2 // 5 - n * 3 // 10], deadline)
    final = wait_final(ctx, cl, job["id"], deadline)
    return {"kind": "upload job", "bytes": n, "object": final["objectKey"], "sha": sha(data),
            "detail": f"PUT/PATCH on {len(instances)} instances"}


def sse_job(ctx: "Context", cl: Client, key: str, data: bytes, deadline: float) -> dict:
    """An upload job followed on its event stream (the eventsUrl, no header) while its bytes are
    sent in pieces by other requests; the stream must see it completed."""
    job = create_upload_job(cl, key, len(data), deadline)
    seen = {"states": [], "instances": [], "connected": threading.Event(), "done": False, "error": None,
            "reconnects": 0}

    def follow():
        last_id = None
        url = job["eventsUrl"]
        while time.monotonic() < deadline and not seen["done"]:
            headers = {"Accept": "text/event-stream"}
            if last_id:
                headers["Last-Event-ID"] = last_id
            try:
                r = cl.call("events", "GET", url, auth=False, ok=(200, 204), stream=True, timeout=30, headers=headers)
            except Retry as e:
                time.sleep(e.wait)
                continue
            except Failed as e:
                seen["error"] = str(e)
                return
            seen["instances"].append(ctx.rec.instance(r))
            if r.status_code == 204:
                seen["done"] = True   # the job is final: the stream is over
                return
            try:
                event = {}
                for raw in r.iter_lines(decode_unicode=True):
                    if raw is None:
                        continue
                    if raw == "":
                        if event.get("event") == "job":
                            state = json.loads(event["data"])["state"]
                            seen["states"].append(state)
                            seen["connected"].set()
                            if state in FINAL:
                                seen["done"] = True
                        event = {}
                        continue
                    if raw.startswith(":"):
                        continue
                    field, _, value = raw.partition(":")
                    event[field] = value[1:] if value.startswith(" ") else value
                    if field == "id":
                        last_id = event["id"]
            except requests.RequestException:
                pass
            finally:
                r.close()
            if not seen["done"]:
                seen["reconnects"] += 1
                with ctx.rec.lock:
                    ctx.rec.errors[ctx.rec.phase]["events: stream ended early, reconnected (not an error)"] += 1

    t = threading.Thread(target=follow, daemon=True)
    t.start()
    if not seen["connected"].wait(20):
        raise Failed(f"event stream of {job['id']}: no first event in 20 s ({seen['error']})")
    n = len(data)
    instances = send_upload_job(ctx, cl, job["id"], data, [n // 3, n // 3, n - 2 * (n // 3)], deadline, pause=0.3)
    t.join(max(1, deadline - time.monotonic()))
    if "completed" not in seen["states"] and not seen["done"]:
        raise Failed(f"event stream of {job['id']} did not see it complete: {seen['states'][-5:]} {seen['error']}")
    final = wait_final(ctx, cl, job["id"], deadline)
    cross = bool(instances - set(seen["instances"][:1]))
    with ctx.rec.lock:
        ctx.cross["events"] += int(cross)
        ctx.cross["events total"] += 1
    return {"kind": "event stream", "bytes": n, "object": final["objectKey"], "sha": sha(data),
            "detail": f"stream on {seen['instances'][:1]}, bytes via {sorted(instances)}, "
                      f"{len(seen['states'])} events, {seen['reconnects']} reconnects"}


def long_poll(ctx: "Context", cl: Client, key: str, data: bytes, deadline: float) -> dict:
    """A long poll (?wait=30, If-None-Match) on a pending upload job, woken by its PUT."""
    job = create_upload_job(cl, key, len(data), deadline)
    first = retrying(lambda: cl.call("job GET", "GET", f"/v1/jobs/{job['id']}"), deadline, "job GET")
    etag = first.headers["ETag"]
    result = {"woken": None, "instance": None, "error": None, "polls": 0, "since": None}
    started = threading.Event()

    def poll():
        nonlocal etag
        while time.monotonic() < deadline:
            try:
                result["polls"] += 1
                result["since"] = time.monotonic()
                started.set()
                r = cl.call("long poll", "GET", f"/v1/jobs/{job['id']}?wait=30", ok=(200, 304), timeout=45,
                            headers={"If-None-Match": etag})
            except Retry as e:
                time.sleep(e.wait)
                continue
            except Failed as e:
                result["error"] = str(e)
                return
            if r.status_code == 200 and r.headers.get("ETag") != etag:
                result["woken"] = time.monotonic()
                result["instance"] = ctx.rec.instance(r)
                result["state"] = r.json()["state"]
                return
            # 304, or an answer given early by a stopping instance: wait again

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    started.wait(10)
    time.sleep(1.0)
    t_put = time.monotonic()
    instances = send_upload_job(ctx, cl, job["id"], data, [len(data)], deadline)
    t.join(max(1, deadline - time.monotonic()))
    if result["woken"] is None:
        raise Failed(f"long poll on {job['id']} never woken ({result['error']})")
    final = wait_final(ctx, cl, job["id"], deadline)
    cross = result["instance"] not in instances
    with ctx.rec.lock:
        ctx.cross["long polls"] += int(cross)
        ctx.cross["long polls total"] += 1
    return {"kind": "long poll", "bytes": len(data), "object": final["objectKey"], "sha": sha(data),
            "detail": f"woken on {result['instance']} after {result['woken'] - result['since']:.1f} s of waiting, "
                      f"{result['woken'] - t_put:.1f} s after the PUT began via {sorted(instances)}"}


def presign_roundtrip(ctx: "Context", cl: Client, key: str, data: bytes, deadline: float) -> dict:
    """PUT and GET straight to S3 on URLs presigned through nginx."""
    put = retrying(lambda: cl.call("presign", "POST", "/v1/presign", ok=(200,), json={
        "operation": "put", "accessLevel": "private", "key": key, "contentType": "application/octet-stream"}),
        deadline, "presign").json()
    r = requests.put(put["url"], data=data, headers=put.get("headers") or {}, timeout=60)
    if r.status_code != 200:
        raise Failed(f"presigned PUT answered {r.status_code} {r.text[:200]}")
    get = retrying(lambda: cl.call("presign", "POST", "/v1/presign", ok=(200,), json={
        "operation": "get", "accessLevel": "private", "key": key}), deadline, "presign").json()
    r = requests.get(get["url"], headers=get.get("headers") or {}, timeout=60)
    if r.status_code != 200 or sha(r.content) != sha(data):
        raise Failed(f"presigned GET answered {r.status_code}, {len(r.content)} bytes, sha {sha(r.content)[:12]}")
    return {"kind": "presign", "bytes": len(data), "object": put["objectKey"], "sha": sha(data), "detail": ""}


def ranged_download(ctx: "Context", cl: Client, key: str, data: bytes, deadline: float) -> dict:
    """The object written by a presigned PUT, read back in several Range requests on the dataUrl of
    a download job, reassembled."""
    presign_roundtrip(ctx, cl, key, data, deadline)
    idem = str(uuid.uuid4())
    job = retrying(lambda: cl.call("download create", "POST", "/v1/jobs", ok=(200, 201), headers={"Idempotency-Key": idem},
                                   json={"type": "download", "source": {"accessLevel": "private", "key": key},
                                         "filename": key.rsplit("/", 1)[-1]}), deadline, "download create").json()
    n, parts = len(data), 5
    bounds = [(k * n // parts, (k + 1) * n // parts - 1) for k in range(parts)]
    pieces, instances = {}, set()
    for a, b in bounds:
        r = retrying(lambda: cl.call("range GET", "GET", job["dataUrl"], auth=False, ok=(206,),
                                     headers={"Range": f"bytes={a}-{b}"}), deadline, "range GET")
        if len(r.content) != b - a + 1:
            raise Failed(f"range {a}-{b} of {job['id']}: {len(r.content)} bytes")
        pieces[a] = r.content
        instances.add(ctx.rec.instance(r))
    whole = b"".join(pieces[a] for a, _ in bounds)
    if sha(whole) != sha(data):
        raise Failed(f"ranged download of {job['id']}: SHA-256 differs")
    return {"kind": "ranged download", "bytes": n, "object": None, "sha": sha(data),
            "detail": f"{parts} ranges on {len(instances)} instances"}


def client_upload(ctx: "Context", key: str, size: int, deadline: float) -> dict:
    """transfer-client upload of a file (a client upload: parts straight to S3) through nginx."""
    state = ctx.tmp / f"client-state-{uuid.uuid4().hex[:8]}"
    path = ctx.tmp / f"client-{uuid.uuid4().hex[:8]}.bin"
    data = os.urandom(size)
    path.write_bytes(data)
    cmd = [ctx.client_bin, "--gateway", BASE, "--token-file", str(ctx.token_files["client"]), "--state", str(state),
           "--part-size", str(5 * MiB), "--retry-limit", "10", "--json", "upload", str(path), f"private/{key}"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=max(5, deadline - time.monotonic()),
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise Failed(f"transfer-client upload {key}: not done at the deadline")
    finally:
        path.unlink(missing_ok=True)
    events = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    done = [e for e in events if e.get("event") == "completed"]
    if p.returncode != 0 or not done:
        failed = [e for e in events if e.get("event") == "failed"]
        hint = ""
        if failed and "completing" in failed[0].get("message", ""):
            hint = (" — GATEWAY BUG? the instance that took this upload's completion (POST /v1/uploads/{id}/complete) "
                    "was killed; the upload stays 'completing' until the janitor finds it idle for GATEWAY_UPLOAD_TTL "
                    "(90 s here, 24 h by default), every retry of complete answers 409 upload_not_open with no "
                    "Retry-After, and transfer-client takes that as final")
        raise Failed(f"transfer-client upload {key}: exit {p.returncode}: {failed[0] if failed else p.stdout[-400:]} "
                     f"{p.stderr[-300:]}{hint}")
    subprocess.run(["rm", "-rf", str(state)])
    return {"kind": "client upload", "bytes": size, "object": done[0]["objectKey"], "sha": sha(data),
            "detail": f"etag {done[0].get('etag')}"}


# ---------------------------------------------------------------------------------------------

class Context:
    def __init__(self, args):
        self.root = Path(__file__).resolve().parent.parent
        self.tmp = Path(args.tmp)
        self.bin = args.bin
        self.client_bin = args.client_bin
        self.long = args.long
        self.run = f"scale-{int(time.time())}-{os.getpid()}"
        self.prefixes: dict[str, str] = {}
        self.rec = Recorder(self)
        self.cross = collections.Counter()
        self.bucket = os.environ["GATEWAY_S3_BUCKET"]
        self.s3 = boto3.client("s3", endpoint_url=os.environ["GATEWAY_S3_ENDPOINT"],
                               aws_access_key_id=os.environ["GATEWAY_S3_ACCESS_KEY_ID"],
                               aws_secret_access_key=os.environ["GATEWAY_S3_SECRET_ACCESS_KEY"],
                               region_name=os.environ.get("GATEWAY_S3_REGION", "us-east-1"),
                               config=BotoConfig(s3={"addressing_style": "path"}, retries={"max_attempts": 5}))
        env = {k: v for k, v in os.environ.items() if k != "GATEWAY_LINK_SECRET"}
        env.update(GATEWAY_DATABASE_URL=args.database_url, GATEWAY_HOST="127.0.0.1",
                   GATEWAY_TRUSTED_PROXIES="127.0.0.1/32", GATEWAY_SHUTDOWN_GRACE="5",
                   GATEWAY_LEASE_SECONDS="10", GATEWAY_UPLOAD_TTL="90",
                   GATEWAY_LOG_LEVEL=os.environ.get("SCALE_LOG_LEVEL", "info"))
        self.gateway_env = env
        self.gateways = [Gateway(self, i) for i in range(3)]
        self.nginx = Nginx(self)
        self.restarts: list[str] = []     # instances that exited while starting, started again
        self.clients: dict[str, Client] = {}
        self.token_files: dict[str, Path] = {}
        self.seq = 0
        self.seq_lock = threading.Lock()

    def identity(self, kind: str) -> str:
        return f"{self.run}-{kind}"

    def make_tokens(self) -> None:
        for kind in ("tus", "job", "client", "obj", "sse", "poll"):
            token = subprocess.run([self.bin, "token", "--sub", self.identity(kind), "--ttl", "3600"], env=self.gateway_env,
                                   capture_output=True, text=True, check=True).stdout.strip()
            self.clients[kind] = Client(self, token)
            self.token_files[kind] = self.tmp / f"token-{kind}"
            self.token_files[kind].write_text(token + "\n")

    def key(self, name: str) -> str:
        with self.seq_lock:
            self.seq += 1
            return f"{self.rec.phase.replace(' ', '')}/{self.seq:03d}-{name}.bin"


def workload(ctx: Context, scale: int = 1):
    """The mixed workload: a list of (label, callable(deadline)). Sizes are small on purpose."""
    items = []
    c = ctx.clients
    for i in range(6 * scale):
        size = random.randint(1 * MiB, 5 * MiB)
        items.append(("tus", lambda d, size=size: tus_upload(ctx, c["tus"], ctx.key("tus"), os.urandom(size), 512 * 1024, d)))
    for i in range(4 * scale):
        size = random.randint(3 * MiB, 7 * MiB)
        items.append(("upload job", lambda d, size=size: upload_job(ctx, c["job"], ctx.key("job"), os.urandom(size), d)))
    for i in range(2 * scale):
        items.append(("client upload", lambda d: client_upload(ctx, ctx.key("client"), 20 * MiB + random.randint(0, MiB), d)))
    for i in range(3 * scale):
        size = random.randint(MiB // 2, 2 * MiB)
        items.append(("presign", lambda d, size=size: presign_roundtrip(ctx, c["obj"], ctx.key("presign"), os.urandom(size), d)))
    for i in range(3 * scale):
        size = random.randint(2 * MiB, 4 * MiB)
        items.append(("ranged download", lambda d, size=size: ranged_download(ctx, c["obj"], ctx.key("dl"), os.urandom(size), d)))
    for i in range(2 * scale):
        size = random.randint(2 * MiB, 4 * MiB)
        items.append(("event stream", lambda d, size=size: sse_job(ctx, c["sse"], ctx.key("sse"), os.urandom(size), d)))
    for i in range(3 * scale):
        size = random.randint(MiB // 2, 2 * MiB)
        items.append(("long poll", lambda d, size=size: long_poll(ctx, c["poll"], ctx.key("poll"), os.urandom(size), d)))
    # client uploads first: they are the longest
    items.sort(key=lambda it: it[0] != "client upload")
    return items


def run_items(ctx: Context, items, deadline: float, workers: int, progress: dict | None = None) -> list:
    results = []
    lock = threading.Lock()

    def one(label, fn):
        if progress is not None:
            with lock:
                progress["started"] += 1
                progress["kinds"][label] += 1
        try:
            r = fn(deadline)
            r["ok"] = True
        except Exception as e:  # noqa: BLE001 — every failure is reported with its item
            r = {"kind": label, "ok": False, "bytes": 0, "detail": f"{type(e).__name__}: {e}"}
            if not isinstance(e, Failed):
                r["detail"] += "\n" + traceback.format_exc()
        if progress is not None:
            with lock:
                progress["finished"] += 1
                progress["kinds"][label] -= 1
                if not progress["kinds"][label]:
                    del progress["kinds"][label]
        return r

    with cf.ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(one, label, fn) for label, fn in items]
        for f in futures:
            results.append(f.result())
    return results


def verify(ctx: Context, results: list) -> list[str]:
    """Every uploaded object read back from S3 and compared with what was sent."""
    problems = []
    for r in results:
        if not r["ok"]:
            problems.append(f"{r['kind']}: {r['detail']}")
            continue
        if r.get("object"):
            got, size = s3_sha(ctx, r["object"])
            if got != r["sha"]:
                problems.append(f"{r['kind']} {r['object']}: in S3 {size} bytes, SHA-256 {got[:16]}…; "
                                f"sent {r['bytes']} bytes, SHA-256 {r['sha'][:16]}…")
    return problems


def summarize(ctx: Context, phase: str, results: list, seconds: float, extra: str = "") -> None:
    kinds = collections.Counter(r["kind"] for r in results)
    ok = sum(1 for r in results if r["ok"])
    total = sum(r["bytes"] for r in results if r["ok"])
    print(f"== {phase}: {ok}/{len(results)} items identical, {total / MiB:.1f} MiB, {seconds:.1f} s {extra}")
    print("   items: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    answers = ctx.rec.answers[phase]
    print("   answers: " + ", ".join(f"{k} ×{v}" for k, v in sorted(answers.items())))
    errs = ctx.rec.errors[phase]
    print("   errors seen by kind: " + (", ".join(f"{k} ×{v}" for k, v in sorted(errs.items())) or "none"))
    for r in results:
        if "detail" in r and r["ok"] and r["kind"] in ("event stream", "long poll"):
            print(f"   {r['kind']}: {r['detail']}")
    sys.stdout.flush()


def nginx_statuses(ctx: Context, start: int, end: int) -> tuple[collections.Counter, list[str]]:
    """Statuses in nginx's access log between two offsets; the lines that are not a success or
    a 503 with Retry-After."""
    counts, bad = collections.Counter(), []
    for line in ctx.nginx.lines(start, end):
        parts = line.split()
        if len(parts) < 6:
            continue
        status, ra = int(parts[3]), parts[4]
        counts[status] += 1
        if status >= 400 and not (status == 503 and ra != "ra=-" and ra != "ra="):
            bad.append(line)
    return counts, bad


def gateway_lines(ctx: Context, request_id: str) -> list[str]:
    out = []
    for g in ctx.gateways:
        if g.logfile.exists():
            out += [f"{g.name}: {l}" for l in g.logfile.read_text(errors="replace").splitlines() if request_id in l]
    return out


def report_bad(ctx: Context, phase: str) -> bool:
    bad = ctx.rec.bad[phase]
    for b in bad[:10]:
        print(f"   GATEWAY ERROR: {b}")
        m = re.search(r"X-Request-Id (\S+)\)", b)
        if m:
            for l in gateway_lines(ctx, m.group(1))[:5]:
                print(f"      {l[:600]}")
    return bool(bad)


def open_multipart(ctx: Context) -> list:
    ups = ctx.s3.list_multipart_uploads(Bucket=ctx.bucket, Prefix=f"private/{ctx.run}").get("Uploads", [])
    return [(u["Key"], u["UploadId"][:12]) for u in ups]


def phase_one(ctx: Context) -> bool:
    phase = ctx.rec.phase = "phase 1"
    log(f"{phase}: the workload with all three instances up")
    t0, n0 = time.monotonic(), ctx.nginx.size()
    results = run_items(ctx, workload(ctx, ctx.long), time.monotonic() + 120 * ctx.long, 8)
    problems = verify(ctx, results)
    seconds = time.monotonic() - t0
    counts, bad = nginx_statuses(ctx, n0, ctx.nginx.size())
    summarize(ctx, phase, results, seconds, f"(nginx: {dict(sorted(counts.items()))})")
    # Only a 503 with Retry-After (the shared S3 or PostgreSQL slow or away; honoured) may appear.
    unexpected = [f"{k} ×{v}" for k, v in ctx.rec.errors[phase].items() if not re.search(r"\(gateway\) Retry-After", k)]
    bad = [l for l in bad if not re.search(r" 503 ra=\d", l)]
    failed = bool(problems) or report_bad(ctx, phase) or bool(unexpected) or bool(bad)
    for u in unexpected:
        print(f"   FAILED: unexpected answer {u}")
    for p in problems:
        print(f"   FAILED: {p}")
    for l in bad[:10]:
        print(f"   nginx: {l}")
    if ctx.cross["long polls"] + ctx.cross["events"] == 0:
        print("   FAILED: no long poll or event stream was woken across instances")
        failed = True
    return not failed


def phase_two(ctx: Context) -> bool:
    phase = ctx.rec.phase = "phase 2"
    log(f"{phase}: the workload again, two instances SIGKILLed mid-run")
    t0 = time.monotonic()
    progress = {"started": 0, "finished": 0, "kinds": collections.Counter()}
    items = workload(ctx, ctx.long)
    killed_at = {}

    def killer():
        # Once transfers are in flight: several items started, some data answers given.
        while time.monotonic() - t0 < 30:
            data = sum(v for k, v in ctx.rec.answers[phase].items() if k.startswith("ok"))
            if progress["started"] - progress["finished"] >= 6 and data >= 30 and time.monotonic() - t0 >= 1.5:
                break
            time.sleep(0.1)
        victims = random.sample(ctx.gateways, 2)
        killed_at["open"] = len(open_multipart(ctx))
        killed_at["kinds"] = dict(progress["kinds"])
        for g in victims:
            g.signal(signal.SIGKILL)
        for g in victims:
            g.wait_exit(10)
        killed_at["t"] = time.monotonic() - t0
        killed_at["who"] = [g.name for g in victims]
        killed_at["in flight"] = progress["started"] - progress["finished"]
        log(f"{phase}: SIGKILL {killed_at['who']} at {killed_at['t']:.1f} s, {killed_at['in flight']} items in flight "
            f"{killed_at['kinds']}, {killed_at['open']} multipart uploads open under the run's prefix")
        time.sleep(4)
        for g in victims:
            g.start_ready()
        killed_at["back"] = time.monotonic() - t0
        log(f"{phase}: {killed_at['who']} ready again at {killed_at['back']:.1f} s")

    k = threading.Thread(target=killer, daemon=True)
    k.start()
    results = run_items(ctx, items, time.monotonic() + 150 * ctx.long, 8, progress)
    t_work = time.monotonic() - t0
    k.join(60)
    problems = verify(ctx, results)
    # No S3 multipart upload left open under this run's prefix (aborts and the janitor get time).
    t1 = time.monotonic()
    left = open_multipart(ctx)
    while left and time.monotonic() - t1 < 120:
        time.sleep(2)
        left = open_multipart(ctx)
    seconds = time.monotonic() - t0
    summarize(ctx, phase, results, seconds,
              f"(workload {t_work:.1f} s; killed {killed_at.get('who')} at {killed_at.get('t', -1):.1f} s with "
              f"{killed_at.get('in flight')} items in flight {killed_at.get('kinds')}, ready again at "
              f"{killed_at.get('back', -1):.1f} s)")
    print(f"   S3 multipart uploads open under private/{ctx.run}*: {killed_at.get('open')} at the kill, "
          f"{len(left)} at the end ({time.monotonic() - t1:.0f} s after the workload)" + (f": {left[:5]}" if left else ""))
    failed = bool(problems) or report_bad(ctx, phase) or bool(left) or "t" not in killed_at
    for p in problems:
        print(f"   FAILED: {p}")
    # Only what a kill explains may appear: connection errors, nginx 502/504, 503/429 with
    # Retry-After, 409 upload_in_progress / offset_mismatch (a request cut mid-body).
    allowed = re.compile(r"connection error|\(nginx\)|Retry-After|upload_in_progress|offset_mismatch|not an error")
    for k_, v in ctx.rec.errors[phase].items():
        if not allowed.search(k_):
            print(f"   FAILED: unexpected answer {k_} ×{v}")
            failed = True
    return not failed


def phase_three(ctx: Context) -> bool:
    phase = ctx.rec.phase = "phase 3"
    log(f"{phase}: rolling restart under a steady workload")
    t0, n0 = time.monotonic(), ctx.nginx.size()
    stop = threading.Event()
    results: list = []
    lock = threading.Lock()
    c = ctx.clients

    def steady(worker: int):
        kinds = ["tus", "upload job", "ranged download", "long poll", "event stream", "presign"]
        i = worker
        while not stop.is_set():
            kind = kinds[i % len(kinds)]
            i += 1
            deadline = time.monotonic() + 90
            try:
                if kind == "tus":
                    r = tus_upload(ctx, c["tus"], ctx.key("tus"), os.urandom(random.randint(MiB, 3 * MiB)), 256 * 1024, deadline)
                elif kind == "upload job":
                    r = upload_job(ctx, c["job"], ctx.key("job"), os.urandom(random.randint(2 * MiB, 6 * MiB)), deadline)
                elif kind == "ranged download":
                    r = ranged_download(ctx, c["obj"], ctx.key("dl"), os.urandom(random.randint(MiB, 3 * MiB)), deadline)
                elif kind == "long poll":
                    r = long_poll(ctx, c["poll"], ctx.key("poll"), os.urandom(random.randint(MiB // 2, MiB)), deadline)
                elif kind == "event stream":
                    r = sse_job(ctx, c["sse"], ctx.key("sse"), os.urandom(random.randint(MiB, 3 * MiB)), deadline)
                else:
                    r = presign_roundtrip(ctx, c["obj"], ctx.key("presign"), os.urandom(random.randint(MiB // 2, MiB)), deadline)
                r["ok"] = True
            except Exception as e:  # noqa: BLE001
                r = {"kind": kind, "ok": False, "bytes": 0, "detail": f"{type(e).__name__}: {e}"}
            with lock:
                results.append(r)

    def clients():
        n = 0
        while not stop.is_set():
            # transfer-client sends files under 16 MiB as an upload job, larger ones as a client
            # upload (parts straight to S3): both, in turn.
            n += 1
            size = (18 if n % 2 else 12) * MiB + random.randint(0, MiB)
            try:
                r = client_upload(ctx, ctx.key("client"), size, time.monotonic() + 90)
                r["ok"] = True
            except Exception as e:  # noqa: BLE001
                r = {"kind": "client upload", "ok": False, "bytes": 0, "detail": f"{type(e).__name__}: {e}"}
            with lock:
                results.append(r)

    threads = [threading.Thread(target=steady, args=(w,), daemon=True) for w in range(5)]
    threads.append(threading.Thread(target=clients, daemon=True))
    for t in threads:
        t.start()
    time.sleep(4)
    roll = []
    for g in ctx.gateways:
        t_stop = time.monotonic()
        g.signal(signal.SIGTERM)
        rc = g.wait_exit(30)
        exited = time.monotonic() - t_stop
        if rc is None:
            print(f"   FAILED: {g.name} did not exit 30 s after SIGTERM")
            g.stop()
        ready = g.start_ready()
        back = g.wait_in_rotation()
        roll.append(f"{g.name} exit {rc} after {exited:.1f} s, ready {ready:.1f} s later, in nginx's rotation {back:.1f} s after that")
        log(f"{phase}: {roll[-1]}")
        time.sleep(3)   # the load goes on over three instances before the next stop
    time.sleep(ctx.long - 1)
    stop.set()
    for t in threads:
        t.join(120)
    problems = verify(ctx, results)
    seconds = time.monotonic() - t0
    counts, bad = nginx_statuses(ctx, n0, ctx.nginx.size())
    summarize(ctx, phase, results, seconds, f"(nginx: {dict(sorted(counts.items()))})")
    print("   roll: " + "; ".join(roll))
    failed = bool(problems) or report_bad(ctx, phase)
    for p in problems:
        print(f"   FAILED: {p}")
    allowed = re.compile(r"\b503 \S+ \(gateway\) Retry-After|not an error")
    for k_, v in ctx.rec.errors[phase].items():
        if not allowed.search(k_):
            print(f"   FAILED: an answer other than success or 503 with Retry-After: {k_} ×{v}")
            failed = True
    for l in bad[:10]:
        print(f"   FAILED (nginx log): {l}")
    failed = failed or bool(bad) or any("exit None" in r or not re.search(r"exit 0 ", r) for r in roll)
    return not failed


def cleanup_objects(ctx: Context) -> None:
    paginator = ctx.s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=ctx.bucket, Prefix=f"private/{ctx.run}"):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            ctx.s3.delete_objects(Bucket=ctx.bucket, Delete={"Objects": keys, "Quiet": True})


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--client-bin", required=True)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--long", type=int, default=1, help="multiplies the workload (1: the quick run)")
    ap.add_argument("--phases", default="1,2,3")
    args = ap.parse_args()
    ctx = Context(args)
    phases = {int(p) for p in args.phases.split(",")}
    ok = True
    started = time.monotonic()
    try:
        log("migrate")
        subprocess.run([ctx.bin, "migrate"], env=ctx.gateway_env, check=True, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL)
        ctx.make_tokens()
        for g in ctx.gateways:
            g.start_ready()
        ctx.nginx.start()
        log(f"three gateways on {GATEWAY_PORTS} behind nginx on {NGINX_PORT}; objects under private/{ctx.run}*")
        for n, fn in ((1, phase_one), (2, phase_two), (3, phase_three)):
            if n in phases:
                passed = fn(ctx)
                print(f"   {'PASS' if passed else 'FAIL'}")
                ok = ok and passed
    except Failed as e:
        print(f"FAILED: {e}")
        ok = False
    finally:
        for g in ctx.gateways:
            g.signal(signal.SIGTERM)
        for g in ctx.gateways:
            if g.proc and g.wait_exit(15) is None:
                g.stop()
        ctx.nginx.stop()
        try:
            cleanup_objects(ctx)
        except Exception as e:  # noqa: BLE001
            log(f"could not delete this run's objects: {e}")
    if ctx.restarts:
        print(f"instances that exited while starting and were started again: {ctx.restarts}")
    print(f"scale-check {'passed' if ok else 'FAILED'} in {time.monotonic() - started:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
