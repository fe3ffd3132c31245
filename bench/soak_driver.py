#!/usr/bin/env python3
"""bench/soak_driver.py — the client side of bench/soak.sh (slow-client soak).

Subcommands (every one prints JSON or markdown; bench/soak.sh runs them in turn):

  run     JOBS upload jobs from as many identities, created over RAMP seconds, each sending its
          SIZE bytes at CHUNK bytes every INTERVAL seconds on one kept-alive connection
          (POST /v1/jobs, then PUT /v1/jobs/{id}/data with Content-Length), plus one fast upload
          by `curl -T FILE` FAST_AT seconds in. One process, one asyncio loop, raw asyncio
          streams: no per-connection threads. Content is deterministic per job and chunk (see
          chunk_bytes), so verify makes the same bytes again instead of the driver hashing them.
          Also measures itself: how late each chunk left against its schedule, the loop's lag,
          and its CPU seconds, so a slow driver shows up as such and not as a slow gateway.
  probe   GET /healthz HZ times a second on one kept-alive connection of its own; once a second
          the gateway's VmRSS/VmHWM, CPU seconds, open files and threads, the machine's busy
          CPU and the CPU of SeaweedFS and PostgreSQL; every few seconds the gateway's budget
          and connection gauges (/metrics) and PostgreSQL's commits. Until SIGTERM; a process of
          its own, so the driver's load does not delay the probe.
  verify  every job's state (GET /v1/jobs/{id} with its owner's token) and every object read
          back from S3 with boto3 (SHA-256 and MD5 of the body against what was sent, and the
          ETag against the MD5: the slow uploads are single-part; the fast one by SHA-256).
          With --delete, the objects are deleted after.
  report  the markdown section of bench/RESULTS.md from the three JSON files.

Tokens are HS256 JWTs minted with pyjwt from GATEWAY_JWT_SECRET (claims sub, exp).
"""
import argparse
import asyncio
import concurrent.futures
import hashlib
import http.client
import json
import os
import random
import resource
import signal
import sys
import time

import jwt


def now():
    return time.time()


def mint(secret, sub, ttl=7200):
    return jwt.encode({"sub": sub, "exp": int(now()) + ttl}, secret, algorithm="HS256")


def pct(values, p):
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def log(msg):
    print(f"[soak] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Content: deterministic per job and cheap to make, so the driver's CPU goes to the sockets. Chunk
# k of job n is 16 bytes naming (run, n, k) and then a slice of a 1 MiB random pool picked by n
# and k: every chunk of every job differs, a lost, repeated or reordered chunk changes the
# object's digest, and verify makes the same bytes again to hash them.

POOL_SIZE = 1 << 20


def content_pool(run_id):
    return random.Random(f"soak-pool:{run_id}").randbytes(POOL_SIZE)


def chunk_bytes(pool, tag, n, k, length):
    head = tag + n.to_bytes(4, "big") + k.to_bytes(4, "big")
    body = max(0, length - len(head))
    off = (n * 7919 + k * 104729) % (POOL_SIZE - body + 1)
    return (head + pool[off:off + body])[:length]


def job_digests(pool, tag, n, size, chunk):
    sha, md5 = hashlib.sha256(), hashlib.md5()
    k, done = 0, 0
    while done < size:
        data = chunk_bytes(pool, tag, n, k, min(chunk, size - done))
        sha.update(data)
        md5.update(data)
        done += len(data)
        k += 1
    return sha.hexdigest(), md5.hexdigest()


def run_tag(run_id):
    return hashlib.sha256(run_id.encode()).digest()[:8]


# ---------------------------------------------------------------------------------------------
# HTTP/1.1 on raw asyncio streams


async def read_response(reader):
    """(status, headers with lower-case names, body); 1xx answers are skipped."""
    while True:
        line = await reader.readline()
        if not line:
            raise ConnectionError("connection closed before an answer")
        parts = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise ConnectionError(f"bad status line {line[:80]!r}")
        status = int(parts[1])
        headers = {}
        while True:
            h = await reader.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            name, _, value = h.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if 100 <= status < 200:
            continue
        if "content-length" in headers:
            body = await reader.readexactly(int(headers["content-length"]))
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            body = bytearray()
            while True:
                size = int((await reader.readline()).split(b";")[0].strip(), 16)
                if size == 0:
                    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                body += await reader.readexactly(size)
                await reader.readexactly(2)
            body = bytes(body)
        else:
            body = await reader.read()
        return status, headers, body


def head(method, path, host, token=None, extra=()):
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    lines.extend(extra)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def problem_code(body):
    try:
        doc = json.loads(body)
        return doc.get("code") or doc.get("state")
    except Exception:
        return body[:80].decode("latin-1", "replace")


# ---------------------------------------------------------------------------------------------
# run


class Run:
    def __init__(self, args):
        self.args = args
        self.host = f"{args.host}:{args.port}"
        self.secret = os.environ["GATEWAY_JWT_SECRET"]
        self.t0 = None
        self.jobs = []
        self.late = []          # seconds each chunk left after its due time
        self.loop_lag = []
        self.active = 0
        self.answered = 0
        self.done = False
        self.counts = {}
        self.pool = content_pool(args.run_id)
        self.tag = run_tag(args.run_id)

    def count(self, key):
        self.counts[key] = self.counts.get(key, 0) + 1

    async def connect(self):
        return await asyncio.open_connection(self.args.host, self.args.port)

    async def create(self, reader, writer, token, payload, r):
        """POST /v1/jobs, again after Retry-After while it is 429 or 503; (job or None, headers)."""
        body = json.dumps(payload, separators=(",", ":")).encode()
        req = head("POST", "/v1/jobs", self.host, token,
                   ("Content-Type: application/json", f"Content-Length: {len(body)}")) + body
        for attempt in range(1, 20):
            t = now()
            writer.write(req)
            await writer.drain()
            status, headers, resp = await asyncio.wait_for(read_response(reader), 60)
            r["create_ms"] = round((now() - t) * 1000, 2)
            r["create_status"] = status
            r["create_attempts"] = attempt
            if status == 429 or status == 503:
                self.count(f"create {status}")
                await asyncio.sleep(float(headers.get("retry-after", "1")))
                continue
            if status != 201:
                r["create_code"] = problem_code(resp)
                return None, headers
            return json.loads(resp), headers
        return None, {}

    async def upload(self, n, due):
        a = self.args
        sub = f"{a.identity_prefix}{n:04d}"
        r = {"n": n, "identity": sub, "key": f"private/{sub}/soak/{n}.bin"}
        self.jobs.append(r)
        token = mint(self.secret, sub)
        await asyncio.sleep(max(0, due - now()))
        writer = None
        try:
            r["t_create"] = round(now() - self.t0, 3)
            reader, writer = await self.connect()
            job, headers = await self.create(reader, writer, token, {
                "type": "upload", "accessLevel": "private", "key": f"soak/{n}.bin", "size": a.size}, r)
            if job is None:
                self.count("create failed")
                return
            r["id"] = job["id"]
            if headers.get("connection", "").lower() == "close":
                writer.close()
                reader, writer = await self.connect()
            pool, tag = self.pool, self.tag
            writer.write(head("PUT", f"/v1/jobs/{job['id']}/data", self.host, token,
                              ("Content-Type: application/octet-stream", f"Content-Length: {a.size}")))
            answer = asyncio.ensure_future(read_response(reader))
            answered_at = []
            answer.add_done_callback(lambda _: answered_at.append(now()))
            self.active += 1
            start = now()
            r["t_put"] = round(start - self.t0, 3)
            sent, max_late, k = 0, 0.0, 0
            try:
                while sent < a.size and not answer.done() and not writer.transport.is_closing():
                    chunk_due = start + k * a.interval
                    wait = chunk_due - now()
                    if wait > 0:
                        await asyncio.sleep(wait)
                        if answer.done() or writer.transport.is_closing():
                            break
                    late = now() - chunk_due
                    self.late.append(late)
                    max_late = max(max_late, late)
                    data = chunk_bytes(pool, tag, n, k, min(a.chunk, a.size - sent))
                    writer.write(data)
                    sent += len(data)
                    k += 1
                    if writer.transport.get_write_buffer_size() > 4 * a.chunk:
                        # The gateway is not reading: wait until it does, or answers.
                        r["stalled"] = r.get("stalled", 0) + 1
                        drain = asyncio.ensure_future(writer.drain())
                        await asyncio.wait([drain, answer], return_when=asyncio.FIRST_COMPLETED)
                        if not drain.done():
                            drain.cancel()
                        elif drain.exception() is not None:
                            raise drain.exception()
            except (ConnectionError, OSError) as e:
                r["send_error"] = f"{type(e).__name__}: {e}"
            r["sent"] = sent
            r["max_late_ms"] = round(max_late * 1000, 1)
            r["t_last"] = round(now() - self.t0, 3)
            try:
                status, headers, resp = await asyncio.wait_for(answer, a.answer_timeout)
            except asyncio.TimeoutError:
                r["put_status"] = None
                r["put_error"] = f"no answer within {a.answer_timeout} s of the last byte"
                self.count("put no answer")
                return
            r["t_answer"] = round(answered_at[0] - self.t0, 3)
            r["put_status"] = status
            r["upload_offset"] = headers.get("upload-offset")
            if sent < a.size:
                r["early_answer"] = True
            try:
                doc = json.loads(resp)
            except Exception:
                doc = {}
            r["state"] = doc.get("state")
            if status != 200:
                r["put_code"] = problem_code(resp)
                r["put_detail"] = doc.get("detail")
            self.count(f"put {status} {r.get('state') or r.get('put_code')}")
        except Exception as e:  # noqa: BLE001 - every failure is recorded, none is raised
            r["error"] = f"{type(e).__name__}: {e}"
            self.count(f"error {type(e).__name__}")
        finally:
            if "t_put" in r:
                self.active -= 1
            self.answered += 1
            if writer is not None:
                writer.close()

    async def fast(self):
        a = self.args
        r = {"size": os.path.getsize(a.fast_file), "identity": f"{a.identity_prefix}fast"}
        await asyncio.sleep(max(0, self.t0 + a.fast_at - now()))
        token = mint(self.secret, r["identity"])
        try:
            reader, writer = await self.connect()
            job, _ = await self.create(reader, writer, token, {
                "type": "upload", "accessLevel": "private", "key": "soak/fast.bin", "size": r["size"]}, r)
            writer.close()
            if job is None:
                return r
            r["id"] = job["id"]
            r["key"] = f"private/{r['identity']}/soak/fast.bin"
            out = os.path.join(a.workdir, "fast-answer.json")
            t = now()
            r["t_start"] = round(t - self.t0, 3)
            proc = await asyncio.create_subprocess_exec(
                "curl", "-sS", "-o", out, "-w", "%{http_code} %{time_total}", "-X", "PUT", "-T", a.fast_file,
                "-H", f"Authorization: Bearer {token}", f"http://{self.host}/v1/jobs/{job['id']}/data",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            stdout, stderr = await proc.communicate()
            r["wall_s"] = round(now() - t, 3)
            r["t_end"] = round(now() - self.t0, 3)
            r["curl_exit"] = proc.returncode
            r["curl_stderr"] = stderr.decode(errors="replace").strip()[-300:]
            fields = stdout.decode().split()
            r["status"] = int(fields[0]) if fields else None
            r["curl_time_s"] = float(fields[1]) if len(fields) > 1 else None
            try:
                doc = json.load(open(out))
                r["state"] = doc.get("state")
                r["answer"] = {k: doc.get(k) for k in ("state", "code", "detail", "bytesCommitted", "partsCompleted", "etag")}
            except Exception as e:  # noqa: BLE001
                r["answer_error"] = str(e)
            r["mb_s"] = round(r["size"] / r["wall_s"] / 1e6, 1) if r.get("wall_s") else None
        except Exception as e:  # noqa: BLE001
            r["error"] = f"{type(e).__name__}: {e}"
        return r

    async def lag_monitor(self):
        while not self.done:
            t = now()
            await asyncio.sleep(0.1)
            self.loop_lag.append(now() - t - 0.1)

    async def progress(self):
        while not self.done:
            await asyncio.sleep(10)
            log(f"t={now() - self.t0:5.1f}s streaming {self.active}, finished {self.answered}/{self.args.jobs}, "
                f"loop lag max(10s) {max(self.loop_lag[-100:] or [0]) * 1000:.0f} ms, {self.counts}")

    async def main(self):
        a = self.args
        self.t0 = now() + 0.5
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        tasks = [asyncio.ensure_future(self.upload(n, self.t0 + a.ramp * n / a.jobs)) for n in range(a.jobs)]
        fast = asyncio.ensure_future(self.fast()) if a.fast_file else None
        monitors = [asyncio.ensure_future(self.lag_monitor()), asyncio.ensure_future(self.progress())]
        await asyncio.gather(*tasks)
        fast_result = await fast if fast else None
        self.done = True
        for m in monitors:
            m.cancel()
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.jobs.sort(key=lambda r: r["n"])
        return {
            "run_id": a.run_id, "t0": self.t0, "t_end": now(), "jobs_planned": a.jobs, "size": a.size,
            "chunk": a.chunk, "interval": a.interval, "ramp": a.ramp, "fast_at": a.fast_at,
            "driver": {
                "cpu_s": round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 2),
                "curl_cpu_s": round(children.ru_utime + children.ru_stime, 2),
                "peak_rss_mib": round(cpu1.ru_maxrss / 1024, 1),
                "wall_s": round(now() - self.t0, 1),
                "chunks": len(self.late),
                "late_ms": {k: round(v * 1000, 1) for k, v in
                            (("p50", pct(self.late, 50)), ("p99", pct(self.late, 99)), ("max", max(self.late or [0])))},
                "loop_lag_ms": {k: round(v * 1000, 1) for k, v in
                                (("p50", pct(self.loop_lag, 50)), ("p99", pct(self.loop_lag, 99)),
                                 ("max", max(self.loop_lag or [0])))},
            },
            "counts": self.counts,
            "fast": fast_result,
            "jobs": self.jobs,
        }


def cmd_run(args):
    os.makedirs(args.workdir, exist_ok=True)
    result = asyncio.run(Run(args).main())
    with open(args.out, "w") as f:
        json.dump(result, f)
    log(f"driver: {result['counts']}; CPU {result['driver']['cpu_s']} s; chunk lateness {result['driver']['late_ms']} ms")


# ---------------------------------------------------------------------------------------------
# probe


def proc_cpu(pid, clk):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / clk


def proc_sample(pid, clk):
    status = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            status[k] = v.strip()
    return {
        "rss_kib": int(status["VmRSS"].split()[0]),
        "hwm_kib": int(status["VmHWM"].split()[0]),
        "threads": int(status["Threads"]),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "cpu_s": round(proc_cpu(pid, clk), 2),
    }


def tree_cpu(root, clk):
    """CPU seconds of a process and its children (PostgreSQL's postmaster and backends)."""
    total = 0.0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(name) == root or int(fields[1]) == root:
            total += (int(fields[11]) + int(fields[12])) / clk
    return round(total, 2)


def machine_cpu():
    """(busy, total) jiffies of all cores."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return sum(v) - v[3] - v[4], sum(v)


async def probe_main(args):
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    clk = os.sysconf("SC_CLK_TCK")
    samples, probes, scrapes = [], [], []
    host = f"{args.host}:{args.port}"

    async def every(seconds, work):
        t = now()
        while not stop.is_set():
            if await work() is False:
                return
            t += seconds
            try:
                await asyncio.wait_for(stop.wait(), max(0, t - now()))
            except asyncio.TimeoutError:
                pass

    async def sample():
        try:
            s = proc_sample(args.pid, clk)
        except (FileNotFoundError, ProcessLookupError):
            samples.append({"t": now(), "gone": True})
            return False
        s["t"] = now()
        s["machine"] = machine_cpu()
        try:
            if args.weed_pid:
                s["weed_cpu_s"] = round(proc_cpu(args.weed_pid, clk), 2)
            if args.pg_pid:
                s["pg_cpu_s"] = tree_cpu(args.pg_pid, clk)
        except OSError:
            pass
        samples.append(s)

    async def scrape():
        # the gateway's own gauges (/metrics, a connection of its own) and PostgreSQL's commits
        m = {"t": now()}
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(args.host, args.port), 5)
            writer.write(head("GET", "/metrics", host, extra=("Connection: close",)))
            _, _, body = await asyncio.wait_for(read_response(reader), 10)
            writer.close()
            for line in body.decode(errors="replace").splitlines():
                name, _, value = line.partition(" ")
                if name in ("gateway_memory_budget_used_bytes", "gateway_spool_used_bytes", "gateway_http_open_connections"):
                    m[name] = float(value)
        except Exception as e:  # noqa: BLE001
            m["error"] = f"{type(e).__name__}: {e}"
        if args.pg_url:
            proc = await asyncio.create_subprocess_exec(
                "psql", args.pg_url, "-qAtc", "select xact_commit from pg_stat_database where datname = current_database()",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
            out, _ = await proc.communicate()
            if out.strip().isdigit():
                m["pg_commits"] = int(out)
        scrapes.append(m)

    async def healthz():
        reader = writer = None
        req = head("GET", "/healthz", host)
        interval = 1 / args.hz
        t = now()
        while not stop.is_set():
            p = {"t": now()}
            try:
                if writer is None:
                    reader, writer = await asyncio.wait_for(asyncio.open_connection(args.host, args.port), 10)
                    p["connected"] = True
                start = now()
                writer.write(req)
                await writer.drain()
                status, headers, _ = await asyncio.wait_for(read_response(reader), 10)
                p["ms"] = round((now() - start) * 1000, 3)
                p["status"] = status
                if headers.get("connection", "").lower() == "close":
                    writer.close()
                    writer = None
            except Exception as e:  # noqa: BLE001
                p["status"] = None
                p["error"] = f"{type(e).__name__}: {e}"
                p["ms"] = round((now() - p["t"]) * 1000, 3)
                if writer is not None:
                    writer.close()
                writer = None
            probes.append(p)
            t += interval
            if t < now():
                t = now()  # a slow answer delays the next probe; no burst to catch up
            try:
                await asyncio.wait_for(stop.wait(), max(0, t - now()))
            except asyncio.TimeoutError:
                pass

    await asyncio.gather(every(1, sample), every(args.scrape_every, scrape), healthz())
    with open(args.out, "w") as f:
        json.dump({"samples": samples, "probes": probes, "scrapes": scrapes}, f)


def cmd_probe(args):
    asyncio.run(probe_main(args))


# ---------------------------------------------------------------------------------------------
# verify


def cmd_verify(args):
    import boto3
    from botocore.config import Config

    run = json.load(open(args.run))
    content, tag = content_pool(run["run_id"]), run_tag(run["run_id"])
    secret = os.environ["GATEWAY_JWT_SECRET"]
    s3 = boto3.client("s3", endpoint_url=os.environ["GATEWAY_S3_ENDPOINT"],
                      region_name=os.environ.get("GATEWAY_S3_REGION", "us-east-1"),
                      aws_access_key_id=os.environ["GATEWAY_S3_ACCESS_KEY_ID"],
                      aws_secret_access_key=os.environ["GATEWAY_S3_SECRET_ACCESS_KEY"],
                      config=Config(max_pool_connections=args.threads, retries={"max_attempts": 3}))
    bucket = os.environ["GATEWAY_S3_BUCKET"]

    def job_state(identity, job_id):
        conn = http.client.HTTPConnection(args.host, args.port, timeout=30)
        try:
            conn.request("GET", f"/v1/jobs/{job_id}", headers={"Authorization": f"Bearer {mint(secret, identity)}"})
            resp = conn.getresponse()
            doc = json.loads(resp.read())
            return resp.status, doc.get("state"), (doc.get("error") or {}), doc.get("bytesCommitted")
        finally:
            conn.close()

    def read_object(key):
        try:
            obj = s3.get_object(Bucket=bucket, Key=key)
        except s3.exceptions.NoSuchKey:
            return None
        sha, md5, size = hashlib.sha256(), hashlib.md5(), 0
        for block in obj["Body"].iter_chunks(1 << 20):
            sha.update(block)
            md5.update(block)
            size += len(block)
        return {"sha256": sha.hexdigest(), "md5": md5.hexdigest(), "size": size, "etag": obj["ETag"].strip('"')}

    def check(r):
        out = {"n": r["n"]}
        if not r.get("id"):
            out["result"] = "no job"
            return out
        status, state, error, committed = job_state(r["identity"], r["id"])
        out.update(job_http=status, state=state, bytes_committed=committed)
        if error:
            out["job_error"] = error
        obj = read_object(r["key"])
        if obj is None:
            out["object"] = "missing"
        elif r.get("sent") != run["size"]:
            out["object"] = "not sent in full"
        else:
            sha, md5 = job_digests(content, tag, r["n"], run["size"], run["chunk"])
            same = obj["size"] == run["size"] and obj["sha256"] == sha and obj["md5"] == md5 and obj["etag"] == md5
            out["object"] = "identical" if same else "differs"
        if out["object"] == "differs":
            out["got"] = obj
            out["want"] = {"sha256": sha, "md5": md5, "size": run["size"]}
        return out

    t = now()
    with concurrent.futures.ThreadPoolExecutor(args.threads) as threads:
        checks = list(threads.map(check, run["jobs"]))
    fast = run.get("fast") or {}
    fast_check = {}
    if fast.get("id"):
        status, state, error, committed = job_state(fast["identity"], fast["id"])
        fast_check = {"job_http": status, "state": state, "bytes_committed": committed, "job_error": error or None}
        obj = read_object(fast["key"])
        sha = hashlib.sha256()
        with open(args.fast_file, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                sha.update(block)
        if obj is None:
            fast_check["object"] = "missing"
        else:
            fast_check["object"] = "identical" if obj["sha256"] == sha.hexdigest() and obj["size"] == fast["size"] else "differs"
            fast_check["etag"] = obj["etag"]
    states, objects = {}, {}
    for c in checks:
        states[c.get("state") or c.get("result")] = states.get(c.get("state") or c.get("result"), 0) + 1
        objects[c.get("object") or c.get("result")] = objects.get(c.get("object") or c.get("result"), 0) + 1
    result = {"seconds": round(now() - t, 1), "states": states, "objects": objects, "fast": fast_check,
              "problems": [c for c in checks if c.get("state") != "completed" or c.get("object") != "identical"]}
    if args.delete:
        keys = [r["key"] for r in run["jobs"]] + ([fast["key"]] if fast.get("key") else [])
        for i in range(0, len(keys), 1000):
            s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[i:i + 1000]], "Quiet": True})
    with open(args.out, "w") as f:
        json.dump(result, f)
    log(f"verify: states {states}, objects {objects}, fast {fast_check.get('state')}/{fast_check.get('object')} "
        f"({result['seconds']} s)")


# ---------------------------------------------------------------------------------------------
# report


def args_scrape(scr):
    gaps = [b["t"] - a["t"] for a, b in zip(scr, scr[1:])]
    return f"{pct(gaps, 50):.0f}" if gaps else "-"


def cmd_report(args):
    run = json.load(open(args.run))
    probe = json.load(open(args.probe))
    verify = json.load(open(args.verify))
    t0 = run["t0"]
    jobs = run["jobs"]
    samples = [s for s in probe["samples"] if "rss_kib" in s]
    # the run: from the first creation to the last answer (probe samples outside it are left out)
    t_end = max([r.get("t_answer") or r.get("t_last") or 0 for r in jobs] +
                [(run.get("fast") or {}).get("t_end") or 0])
    during = [s for s in samples if 0 <= s["t"] - t0 <= t_end + 0.5]
    rss = [s["rss_kib"] / 1024 for s in during]
    mib = lambda v: f"{v:.1f}"  # noqa: E731
    at10 = [s for s in during if s["t"] - t0 >= 10]
    growth = (at10[-1]["rss_kib"] - at10[0]["rss_kib"]) / 1024 if len(at10) > 1 else None
    growth_text = "-" if growth is None else f"{growth:+.1f}"
    first_done = min([r["t_last"] for r in jobs if r.get("sent") == run["size"]] or [t_end])
    all_in = max([r["t_put"] for r in jobs if "t_put" in r] or [0]) + 1
    steady = [s for s in during if all_in <= s["t"] - t0 <= first_done]
    steady_text = (f"{(steady[-1]['rss_kib'] - steady[0]['rss_kib']) / 1024:+.1f} MiB from {steady[0]['t'] - t0:.0f} s "
                   f"to {steady[-1]['t'] - t0:.0f} s (every upload streaming, before the first body ended), " if len(steady) > 1 else "")
    curve = " · ".join(f"{int(round(s['t'] - t0))} s {mib(s['rss_kib'] / 1024)}"
                       for i, s in enumerate(during) if i % args.every == 0 or i == len(during) - 1)
    probes = [p for p in probe["probes"] if 0 <= p["t"] - t0 <= t_end]
    ok = [p["ms"] for p in probes if p.get("status") == 200]
    bad = [p for p in probes if p.get("status") != 200]
    f = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    ms = lambda v: "-" if v is None else (f"{v / 1000:.1f} s" if v >= 1000 else f"{v:.0f} ms")  # noqa: E731

    statuses = {}
    for r in jobs:
        key = (f"{r['put_status']} {r.get('state') or r.get('put_code') or ''}".strip() if r.get("put_status")
               else r.get("error") or r.get("put_error") or f"create {r.get('create_status')} {r.get('create_code', '')}")
        statuses[key] = statuses.get(key, 0) + 1
    finish = [(r["t_answer"] - r["t_last"]) * 1000 for r in jobs if r.get("t_answer") and r.get("sent") == run["size"]]
    early = [r for r in jobs if r.get("early_answer")]
    create_ms = [r["create_ms"] for r in jobs if "create_ms" in r]
    retried = sum(1 for r in jobs if r.get("create_attempts", 1) > 1)
    first, last = min(r.get("t_create", 0) for r in jobs), max(r.get("t_create", 0) for r in jobs)
    # uploads streaming at once: PUT begun, no answer yet
    edges = sorted([(r["t_put"], 1) for r in jobs if "t_put" in r] +
                   [(r.get("t_answer") or r.get("t_last"), -1) for r in jobs if "t_put" in r])
    streaming, most = 0, 0
    for _, step in edges:
        streaming += step
        most = max(most, streaming)
    fast, fv = run.get("fast") or {}, verify.get("fast") or {}
    at_fast = sum(1 for r in jobs if "t_put" in r and r["t_put"] <= (fast.get("t_start") or 0) < (r.get("t_answer") or 1e9))
    d = run["driver"]
    before = [s["rss_kib"] / 1024 for s in samples if s["t"] < t0]
    lines = [
        f"- uploads: **{len(jobs)}** jobs from {len(jobs)} identities, created {first:.1f}–{last:.1f} s in "
        f"(POST /v1/jobs p50 {f(pct(create_ms, 50))} ms, p99 {f(pct(create_ms, 99))} ms, max {f(max(create_ms or [0]))} ms; "
        f"{retried} retried after 429/503), each `PUT /v1/jobs/{{id}}/data` with `Content-Length: {run['size']}` "
        f"sending {run['chunk'] // 1024} KiB every {run['interval']:g} s on its own kept-alive connection; "
        f"at most **{most}** PUT bodies open at once",
        "- PUT answers: **" + "**, **".join(f"{v} × {k}" for k, v in sorted(statuses.items(), key=lambda kv: -kv[1])) + "**",
    ]
    if early:
        waits = [r["t_answer"] - r["t_put"] for r in early]
        sent = [r["sent"] for r in early]
        codes = sorted({f"{r.get('put_status')} {r.get('put_code') or r.get('state')}" for r in early})
        lines.append(f"- answered before the body was sent: {len(early)} ({', '.join(codes)}), "
                     f"{min(waits):.1f}–{max(waits):.1f} s after the PUT began (median {pct(waits, 50):.1f} s), "
                     f"after {min(sent) // 1024}" + (f"–{max(sent) // 1024}" if max(sent) != min(sent) else "")
                     + " KiB of the body; nothing committed")
    fast_answer = fast.get("state") or (fast.get("answer") or {}).get("code") or fast.get("error")
    lines += [
        f"- answer after the last byte (full bodies): p50 **{ms(pct(finish, 50))}**, p99 **{ms(pct(finish, 99))}**, "
        f"max **{ms(max(finish or [0]))}**; the last answer {max([r.get('t_answer') or 0 for r in jobs]):.0f} s in",
        f"- verified after the run: job states **{', '.join(f'{v} {k}' for k, v in verify['states'].items())}**; "
        f"objects (S3 GET, SHA-256 and MD5 of the body = what was sent, ETag = MD5) "
        f"**{', '.join(f'{v} {k}' for k, v in verify['objects'].items())}**",
        f"- fast upload: {fast.get('size', 0) >> 20} MiB by `curl -T`, started {fast.get('t_start', '-')} s in "
        f"with {at_fast} slow uploads streaming: HTTP {fast.get('status')} {fast_answer}, **{fast.get('wall_s')} s** wall"
        + (f" ({fast.get('mb_s')} MB/s)" if fast.get("status") == 200 else "")
        + f"; verified: job {fv.get('state')}, object {fv.get('object')}",
        f"- gateway RSS (VmRSS each second, {len(rss)} samples over the run): before {mib(pct(before, 50) or 0)} MiB; "
        f"during: min **{mib(min(rss))}**, median **{mib(pct(rss, 50))}**, max **{mib(max(rss))}** MiB; "
        f"growth {steady_text}**{growth_text} MiB** from 10 s in to the end; VmHWM {mib(during[-1]['hwm_kib'] / 1024)} MiB; "
        f"after the run {mib(samples[-1]['rss_kib'] / 1024)} MiB; open files max {max(s['fds'] for s in during)}; "
        f"gateway CPU {during[-1]['cpu_s'] - during[0]['cpu_s']:.1f} s",
        f"- RSS curve (t s MiB, every {args.every} s): {curve}",
        f"- /healthz, 10 a second on its own kept-alive connection ({len(probes)} probes): p50 "
        f"**{f(pct(ok, 50))}** ms, p99 **{f(pct(ok, 99))}** ms, max **{f(max(ok or [0]))}** ms; non-200 **{len(bad)}**",
        f"- driver (Python asyncio, one process): {d['cpu_s']} CPU s over {d['wall_s']} s, peak RSS {d['peak_rss_mib']} MiB; "
        f"chunks left p50 {d['late_ms']['p50']} ms, p99 {d['late_ms']['p99']} ms, max {d['late_ms']['max']} ms after "
        f"their time ({d['chunks']} chunks); loop lag p99 {d['loop_lag_ms']['p99']} ms, max {d['loop_lag_ms']['max']} ms",
    ]
    # the machine: both cores, and who used them
    if len(during) > 1 and "machine" in during[0]:
        busy = [(b["machine"][0] - a_["machine"][0]) / max(1, b["machine"][1] - a_["machine"][1]) * 100
                for a_, b in zip(during, during[1:])]
        span = during[-1]["t"] - during[0]["t"]
        who = [f"gateway {during[-1]['cpu_s'] - during[0]['cpu_s']:.1f}"]
        for k, label in (("weed_cpu_s", "SeaweedFS"), ("pg_cpu_s", "PostgreSQL")):
            if k in during[0] and k in during[-1]:
                who.append(f"{label} {during[-1][k] - during[0][k]:.1f}")
        who.append(f"driver {d['cpu_s']:.1f}")
        lines.append(f"- machine CPU (2 cores, /proc/stat each second): busy median {pct(busy, 50):.0f} %, "
                     f"{sum(1 for b in busy if b >= 95)} of {len(busy)} s at 95 % or more; CPU seconds over the "
                     f"{span:.0f} s: {', '.join(who)}")
    scr = [m for m in probe.get("scrapes", []) if 0 <= m["t"] - t0 <= t_end + 0.5]
    if scr:
        def peak(name):
            v = [m[name] for m in scr if name in m]
            return max(v) if v else None
        parts = []
        if peak("gateway_memory_budget_used_bytes") is not None:
            parts.append(f"memory budget held max {peak('gateway_memory_budget_used_bytes') / 2**20:.0f} MiB")
        if peak("gateway_spool_used_bytes") is not None:
            parts.append(f"spool held max {peak('gateway_spool_used_bytes') / 2**20:.0f} MiB")
        if peak("gateway_http_open_connections") is not None:
            parts.append(f"open HTTP connections max {peak('gateway_http_open_connections'):.0f}")
        commits = [(m["t"], m["pg_commits"]) for m in scr if "pg_commits" in m]
        if len(commits) > 1:
            rates = [(c2 - c1) / (t2 - t1) for (t1, c1), (t2, c2) in zip(commits, commits[1:]) if t2 > t1]
            parts.append(f"PostgreSQL commits in the gateway's database {(commits[-1][1] - commits[0][1]) / (commits[-1][0] - commits[0][0]):.0f}/s "
                         f"on average, {max(rates):.0f}/s at most (sampled every {args_scrape(scr)} s)")
        lines.append("- gateway gauges (/metrics every few seconds): " + "; ".join(parts))
    if args.pg_note:
        lines.append(f"- PostgreSQL, the gateway's database after the run: {args.pg_note}")
    if args.gateway_log_summary:
        lines.append(f"- gateway stderr (level warn): {args.gateway_log_summary}")
    print("\n".join(lines))


# ---------------------------------------------------------------------------------------------


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(q):
        q.add_argument("--host", default="127.0.0.1")
        q.add_argument("--port", type=int, required=True)

    q = sub.add_parser("run")
    common(q)
    q.add_argument("--jobs", type=int, default=2000)
    q.add_argument("--size", type=int, default=983040)
    q.add_argument("--chunk", type=int, default=16384)
    q.add_argument("--interval", type=float, default=1.0)
    q.add_argument("--ramp", type=float, default=15.0)
    q.add_argument("--fast-file")
    q.add_argument("--fast-at", type=float, default=30.0)
    q.add_argument("--answer-timeout", type=float, default=120.0)
    q.add_argument("--identity-prefix", default="soak-")
    q.add_argument("--run-id", default=str(int(now())))
    q.add_argument("--workdir", default=".")
    q.add_argument("--out", required=True)
    q.set_defaults(func=cmd_run)

    q = sub.add_parser("probe")
    common(q)
    q.add_argument("--pid", type=int, required=True)
    q.add_argument("--hz", type=float, default=10)
    q.add_argument("--weed-pid", type=int)
    q.add_argument("--pg-pid", type=int)
    q.add_argument("--pg-url", help="the gateway's database: its commits are sampled")
    q.add_argument("--scrape-every", type=float, default=2)
    q.add_argument("--out", required=True)
    q.set_defaults(func=cmd_probe)

    q = sub.add_parser("verify")
    common(q)
    q.add_argument("--run", required=True)
    q.add_argument("--fast-file")
    q.add_argument("--threads", type=int, default=16)
    q.add_argument("--delete", action="store_true")
    q.add_argument("--out", required=True)
    q.set_defaults(func=cmd_verify)

    q = sub.add_parser("report")
    q.add_argument("--run", required=True)
    q.add_argument("--probe", required=True)
    q.add_argument("--verify", required=True)
    q.add_argument("--every", type=int, default=5)
    q.add_argument("--gateway-log-summary", default="")
    q.add_argument("--pg-note", default="")
    q.set_defaults(func=cmd_report)

    args = p.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
