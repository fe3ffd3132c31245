#!/usr/bin/env python3
"""The SSRF battery's helper (driven by scripts/ssrf-battery.sh; standard library only).

  ssrf_battery.py net --netns NS --dir DIR --relay HOST:PORT ... --infra HOST:PORT ...
      Runs in the root network namespace. Enters NS only to open its sockets there, then comes
      back, so every listener lives in NS while the relays' outgoing connections start in the
      root namespace. In NS it opens:
        - decoys: TCP listeners on every forbidden address (DECOYS) and ports 80, 443, 8080; each
          accepted connection is an event, and the decoy answers 200 "secret" so that a hole
          would also show as a completed job;
        - a sniffer: AF_PACKET on lo, one event per TCP SYN to anything but the known services
          (--infra, the allowed servers), so a connection attempt to a port no decoy listens on
          is seen as well;
        - the allowed servers (ALLOWED, PUBLIC): /ok.bin (64 KiB, Range, ETag) and
          /redirect?to=URL&code=N; each request is an event;
        - a DNS server on 127.0.0.1:53 (UDP) for the names in DNS (rebind.test alternates);
        - relays: 127.0.0.1:PORT in NS to 127.0.0.1:PORT in the root namespace (PostgreSQL, S3).
      Events go to DIR/events.jsonl; DIR/net.ready appears once everything listens.

  ssrf_battery.py drive --dir DIR --gateway URL --token-file FILE --run-id ID
      Runs inside NS. Creates one import job per attempt, one after the other, waits for its end,
      and counts the events each attempt caused. Prints the table; exit 1 on any failure.
"""
import argparse
import ctypes
import hashlib
import json
import os
import selectors
import socket
import struct
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# The forbidden addresses that get a decoy (all added to lo in the namespace by the script).
DECOYS = [
    "169.254.169.254",      # cloud metadata
    "10.0.0.5",             # private
    "172.16.0.5",           # private
    "192.168.1.5",          # private
    "127.0.0.1",            # loopback (also where 0.0.0.0 and 127.1 land)
    "127.1.2.3",            # loopback, not .1
    "100.64.0.5",           # shared address space (CGNAT)
    "192.0.2.80",           # the allowed host's address: decoys on the ports the allow-list does not name
    "::1",                  # IPv6 loopback (also where :: lands)
    "fd00::5",              # unique local
    "fe80::5",              # link-local (scope lo)
    "fec0::5",              # site-local
    "::a00:5",              # IPv4-compatible ::10.0.0.5
    "64:ff9b::a9fe:a9fe",   # NAT64 of 169.254.169.254
    "2002:a9fe:a9fe::1",    # 6to4 of 169.254.169.254
]
DECOY_PORTS = [80, 443, 8080]

ALLOWED = ("192.0.2.80", 8080)   # allowed.test:8080, in GATEWAY_IMPORT_ALLOW_HOSTS (TEST-NET-1 otherwise)
PUBLIC = ("11.0.0.80", 80)       # public.test: a public-looking address, on no allow-list

# name -> (A answers, AAAA answers); a list of lists alternates per A query.
DNS = {
    "dns-internal.test": (["172.16.0.5"], []),
    "dns-mixed.test": (["11.0.0.80"], ["fd00::5"]),
    "rebind.test": ([["11.0.0.80"], ["169.254.169.254"]], []),
}

BODY = bytes((i * 7 + i // 251) & 0xFF for i in range(64 * 1024))
ETAG = '"ok-' + hashlib.sha256(BODY).hexdigest()[:16] + '"'

CLONE_NEWNET = 0x40000000


# ---------------------------------------------------------------------------------------------
# Events

class Events:
    def __init__(self, path):
        self.lock = threading.Lock()
        self.file = open(path, "a", buffering=1)

    def add(self, kind, **fields):
        fields.update(kind=kind, t=round(time.time(), 4))
        with self.lock:
            self.file.write(json.dumps(fields) + "\n")
            self.file.flush()


def read_events(directory):
    try:
        with open(os.path.join(directory, "events.jsonl")) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


# ---------------------------------------------------------------------------------------------
# net: everything that listens in the namespace

def setns(fd):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "setns: " + os.strerror(e))


def listener(address, port, kind=socket.SOCK_STREAM):
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    s = socket.socket(family, kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        scope = socket.if_nametoindex("lo") if address.startswith("fe80:") else 0
        s.bind((address, port, 0, scope))
    else:
        s.bind((address, port))
    if kind == socket.SOCK_STREAM:
        s.listen(64)
    return s


def run_decoys(sockets, events):
    """Each accepted connection is an event; the decoy reads the head and answers 'secret'."""
    sel = selectors.DefaultSelector()
    for s, label in sockets:
        sel.register(s, selectors.EVENT_READ, label)

    def answer(conn, label, peer):
        try:
            conn.settimeout(2)
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 8192:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                head += chunk
            events.add("decoy_request", decoy=label, peer=peer, head=head[:300].decode("latin-1"))
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nsecret")
        except OSError:
            pass
        finally:
            conn.close()

    while True:
        for key, _ in sel.select():
            try:
                conn, peer = key.fileobj.accept()
            except OSError:
                continue
            events.add("decoy_accept", decoy=key.data, peer=str(peer[0]) + ":" + str(peer[1]))
            threading.Thread(target=answer, args=(conn, key.data, str(peer[0])), daemon=True).start()


def run_sniffer(sock, known, events):
    """Every TCP SYN seen on lo whose destination is not a known service is an event."""
    PACKET_OUTGOING = 4
    while True:
        data, addr = sock.recvfrom(65535)
        if addr[2] == PACKET_OUTGOING or len(data) < 14:
            continue   # lo shows each packet twice: count the received copy only
        ethertype = struct.unpack("!H", data[12:14])[0]
        ip = data[14:]
        if ethertype == 0x0800 and len(ip) >= 20 and ip[9] == 6:
            ihl = (ip[0] & 0x0F) * 4
            dst = socket.inet_ntop(socket.AF_INET, ip[16:20])
            tcp = ip[ihl:]
        elif ethertype == 0x86DD and len(ip) >= 40 and ip[6] == 6:
            dst = socket.inet_ntop(socket.AF_INET6, ip[24:40])
            tcp = ip[40:]
        else:
            continue
        if len(tcp) < 14:
            continue
        port = struct.unpack("!H", tcp[2:4])[0]
        flags = tcp[13]
        if flags & 0x02 and not flags & 0x10 and (dst, port) not in known:
            events.add("syn", dst=dst, port=port)


class GoodHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    events = None

    def log_message(self, *args):
        pass

    def do_GET(self):
        host = "%s:%d" % self.server.server_address[:2]
        self.events.add("good", server=host, path=self.path, range=self.headers.get("Range"))
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        if url.path == "/redirect" and "to" in query:
            self.send_response(int(query.get("code", ["302"])[0]))
            self.send_header("Location", query["to"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif url.path in ("/ok.bin", "/rebind.bin"):
            self.send_body()
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def send_body(self):
        wanted = self.headers.get("Range", "")
        if_match = self.headers.get("If-Match")
        if if_match and if_match != ETAG:
            self.send_response(412)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if wanted.startswith("bytes=") and "," not in wanted:
            first, _, last = wanted[6:].partition("-")
            start = int(first)
            end = min(int(last) if last else len(BODY) - 1, len(BODY) - 1)
            part = BODY[start:end + 1]
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, len(BODY)))
        else:
            part = BODY
            self.send_response(200)
        self.send_header("ETag", ETAG)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(len(part)))
        self.end_headers()
        self.wfile.write(part)


def run_dns(sock, events):
    counters = {}
    while True:
        packet, peer = sock.recvfrom(2048)
        if len(packet) < 12:
            continue
        ident, _flags, qdcount = struct.unpack("!HHH", packet[:6])
        if qdcount != 1:
            continue
        labels, i = [], 12
        while i < len(packet) and packet[i] != 0:
            n = packet[i]
            labels.append(packet[i + 1:i + 1 + n].decode("ascii", "replace"))
            i += 1 + n
        question_end = i + 5
        if question_end > len(packet):
            continue
        qtype = struct.unpack("!H", packet[i + 1:i + 3])[0]
        name = ".".join(labels).lower()
        answers = []
        rcode = 3   # NXDOMAIN
        if name in DNS:
            rcode = 0
            v4, v6 = DNS[name]
            if qtype == 1:
                if v4 and isinstance(v4[0], list):
                    n = counters.get(name, 0)
                    counters[name] = n + 1
                    v4 = v4[n % len(v4)]
                answers = [(1, socket.inet_pton(socket.AF_INET, a)) for a in v4]
            elif qtype == 28:
                answers = [(28, socket.inet_pton(socket.AF_INET6, a)) for a in v6]
        events.add("dns", name=name, qtype=qtype,
                   answers=[socket.inet_ntop(socket.AF_INET if t == 1 else socket.AF_INET6, d) for t, d in answers])
        reply = struct.pack("!HHHHHH", ident, 0x8400 | 0x0100 | 0x0080 | rcode, 1, len(answers), 0, 0)
        reply += packet[12:question_end]
        for rtype, rdata in answers:
            reply += struct.pack("!HHHIH", 0xC00C, rtype, 1, 0, len(rdata)) + rdata
        sock.sendto(reply, peer)


def run_relay(listening, target):
    def pipe(a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        finally:
            try:
                b.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    while True:
        inner, _ = listening.accept()
        try:
            outer = socket.create_connection(target)   # this thread lives in the root namespace
        except OSError:
            inner.close()
            continue
        for a, b in ((inner, outer), (outer, inner)):
            threading.Thread(target=pipe, args=(a, b), daemon=True).start()


def hostport(text):
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


def cmd_net(args):
    events = Events(os.path.join(args.dir, "events.jsonl"))
    root_fd = os.open("/proc/self/ns/net", os.O_RDONLY)
    ns_fd = os.open("/run/netns/" + args.netns, os.O_RDONLY)

    setns(ns_fd)   # --- inside the test namespace: open every socket ---
    decoys = [(listener(a, p), "[%s]:%d" % (a, p) if ":" in a else "%s:%d" % (a, p))
              for a in DECOYS for p in DECOY_PORTS if (a, p) != ALLOWED]
    known = {ALLOWED, PUBLIC} | {hostport(x) for x in args.infra} | {hostport(x) for x in args.relay}
    sniffer = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    sniffer.bind(("lo", 0))
    GoodHandler.events = events
    good = [ThreadingHTTPServer(ALLOWED, GoodHandler), ThreadingHTTPServer(PUBLIC, GoodHandler)]
    dns = listener("127.0.0.1", 53, socket.SOCK_DGRAM)
    relays = [(listener(*hostport(r)), hostport(r)) for r in args.relay]
    setns(root_fd)  # --- back in the root namespace: threads started from here live there ---
    os.close(ns_fd)

    threads = [threading.Thread(target=run_decoys, args=(decoys, events)),
               threading.Thread(target=run_sniffer, args=(sniffer, known, events)),
               threading.Thread(target=run_dns, args=(dns, events))]
    threads += [threading.Thread(target=s.serve_forever) for s in good]
    threads += [threading.Thread(target=run_relay, args=r) for r in relays]
    for t in threads:
        t.daemon = True
        t.start()
    with open(os.path.join(args.dir, "net.ready"), "w") as f:
        f.write("%d decoy listeners\n" % len(decoys))
    while True:
        time.sleep(3600)


# ---------------------------------------------------------------------------------------------
# drive: the attempts

def redirect(to, code=302, via="http://allowed.test:8080"):
    return via + "/redirect?" + urllib.parse.urlencode({"to": to, "code": code})


# A refused address fails the job when the fetcher meets it (a redirect, a rebound name), or
# refuses the job at creation (400 forbidden_address) when its own host is refused already.
FORBIDDEN = {"forbidden_address"}
BAD_URL = {"invalid_url"}

# (label, URL, acceptable refusal codes, whether the allowed first hop must have been reached)
ATTEMPTS = [
    ("metadata 169.254.169.254", "http://169.254.169.254/latest/meta-data/iam/security-credentials/", FORBIDDEN, False),
    ("metadata over https", "https://169.254.169.254/latest/meta-data/", FORBIDDEN, False),
    ("metadata on the allowed port number", "http://169.254.169.254:8080/", FORBIDDEN, False),
    ("private 10.x", "http://10.0.0.5/", FORBIDDEN, False),
    ("private 172.16.x", "http://172.16.0.5/", FORBIDDEN, False),
    ("private 192.168.x", "http://192.168.1.5/", FORBIDDEN, False),
    ("loopback 127.0.0.1", "http://127.0.0.1/", FORBIDDEN, False),
    ("loopback 127.1.2.3", "http://127.1.2.3/", FORBIDDEN, False),
    ("loopback short form 127.1", "http://127.1/", FORBIDDEN, False),
    ("this host 0.0.0.0", "http://0.0.0.0/", FORBIDDEN, False),
    ("this host 0", "http://0/", FORBIDDEN, False),
    ("localhost", "http://localhost/", FORBIDDEN, False),
    ("shared 100.64.x (CGNAT)", "http://100.64.0.5/", FORBIDDEN, False),
    ("IPv6 loopback ::1", "http://[::1]/", FORBIDDEN, False),
    ("IPv6 unspecified ::", "http://[::]/", FORBIDDEN, False),
    ("IPv4-mapped 10.0.0.5", "http://[::ffff:10.0.0.5]/", FORBIDDEN, False),
    ("IPv4-mapped metadata", "http://[::ffff:169.254.169.254]/", FORBIDDEN, False),
    ("IPv4-mapped metadata, hex", "http://[::ffff:a9fe:a9fe]/", FORBIDDEN, False),
    ("IPv4-mapped loopback, hex", "http://[::ffff:7f00:1]/", FORBIDDEN, False),
    ("IPv4-compatible ::10.0.0.5", "http://[::10.0.0.5]/", FORBIDDEN, False),
    ("NAT64 of metadata", "http://[64:ff9b::a9fe:a9fe]/", FORBIDDEN, False),
    ("6to4 of metadata", "http://[2002:a9fe:a9fe::1]/", FORBIDDEN, False),
    ("IPv6 unique local fd00::", "http://[fd00::5]/", FORBIDDEN, False),
    ("IPv6 link-local with zone", "http://[fe80::5%25lo]/", FORBIDDEN | BAD_URL, False),
    ("IPv6 site-local fec0::", "http://[fec0::5]/", FORBIDDEN, False),
    ("decimal metadata", "http://2852039166/", FORBIDDEN, False),
    ("decimal 10.0.0.5", "http://167772165/", FORBIDDEN, False),
    ("octal metadata", "http://0251.0376.0251.0376/", FORBIDDEN, False),
    ("hex metadata", "http://0xa9fea9fe/", FORBIDDEN, False),
    ("dotted hex metadata", "http://0xA9.0xFE.0xA9.0xFE/", FORBIDDEN, False),
    ("two-part metadata 169.254.43518", "http://169.254.43518/", FORBIDDEN, False),
    ("hosts file: name -> metadata", "http://metadata.test/", FORBIDDEN, False),
    ("hosts file: name -> 10.x, allowed port number", "http://internal.test:8080/", FORBIDDEN, False),
    ("hosts file: name -> ::1", "http://v6loop.test/", FORBIDDEN, False),
    ("hosts file: name -> public and 10.x", "http://mixed.test/", FORBIDDEN, False),
    ("DNS: name -> 172.16.x", "http://dns-internal.test/", FORBIDDEN, False),
    ("DNS: A public, AAAA fd00::", "http://dns-mixed.test/", FORBIDDEN, False),
    ("allowed host by address, not name", "http://192.0.2.80:8080/ok.bin", FORBIDDEN, False),
    ("allowed name on another port", "http://allowed.test/", FORBIDDEN, False),
    ("user info: allowed@10.x", "http://allowed.test:8080@10.0.0.5/", BAD_URL, False),
    ("fragment trick 10.x#@allowed", "http://10.0.0.5#@allowed.test:8080/", FORBIDDEN, False),
    ("302 allowed -> metadata", redirect("http://169.254.169.254/latest/meta-data/"), FORBIDDEN, True),
    ("302 allowed -> 10.x", redirect("http://10.0.0.5/"), FORBIDDEN, True),
    ("302 allowed -> 172.16.x", redirect("http://172.16.0.5/"), FORBIDDEN, True),
    ("302 allowed -> 192.168.x", redirect("http://192.168.1.5/"), FORBIDDEN, True),
    ("302 allowed -> 127.0.0.1", redirect("http://127.0.0.1/"), FORBIDDEN, True),
    ("302 allowed -> 0.0.0.0", redirect("http://0.0.0.0/"), FORBIDDEN, True),
    ("302 allowed -> [::1]", redirect("http://[::1]/"), FORBIDDEN, True),
    ("302 allowed -> IPv4-mapped metadata", redirect("http://[::ffff:169.254.169.254]/"), FORBIDDEN, True),
    ("302 allowed -> decimal metadata", redirect("http://2852039166/"), FORBIDDEN, True),
    ("302 allowed -> octal metadata", redirect("http://0251.0376.0251.0376/"), FORBIDDEN, True),
    ("302 allowed -> hex metadata", redirect("http://0xa9fea9fe/"), FORBIDDEN, True),
    ("302 allowed -> hosts-file name", redirect("http://metadata.test/"), FORBIDDEN, True),
    ("302 allowed -> DNS name", redirect("http://dns-internal.test/"), FORBIDDEN, True),
    ("302 allowed -> same name, other port", redirect("http://allowed.test/"), FORBIDDEN, True),
    ("302 allowed -> 10.x on the allowed port number", redirect("http://10.0.0.5:8080/"), FORBIDDEN, True),
    ("301 allowed -> fd00::", redirect("http://[fd00::5]/", 301), FORBIDDEN, True),
    ("303 allowed -> 192.168.x", redirect("http://192.168.1.5/", 303), FORBIDDEN, True),
    ("307 allowed -> 10.x", redirect("http://10.0.0.5/", 307), FORBIDDEN, True),
    ("308 allowed -> metadata", redirect("http://169.254.169.254/", 308), FORBIDDEN, True),
    ("302 allowed -> //metadata (scheme-relative)", redirect("//169.254.169.254/"), FORBIDDEN, True),
    ("302 allowed -> public -> metadata", redirect(redirect("http://169.254.169.254/", via="http://public.test")),
     FORBIDDEN, True),
    ("302 public (not listed) -> 10.x", redirect("http://10.0.0.5/", via="http://public.test"), FORBIDDEN, True),
    ("302 allowed -> gopher://127.0.0.1:80", redirect("gopher://127.0.0.1:80/_GET%20/"), BAD_URL, True),
    ("302 allowed -> file:///etc/passwd", redirect("file:///etc/passwd"), BAD_URL, True),
]

# Rebinding: the first A answer is public, the next 169.254.169.254. The connection is pinned to
# the address checked, so either the second lookup is refused or the bytes come from the public one.
REBIND = ("DNS rebinding public -> metadata", "http://rebind.test/rebind.bin")

# Positive controls: imports the guard must let through (the battery cannot pass if imports are broken).
CONTROLS = [
    ("control: allow-listed host", "http://allowed.test:8080/ok.bin"),
    ("control: public address, no exemption", "http://public.test/ok.bin"),
    ("control: 302 allowed -> public", redirect("http://public.test/ok.bin")),
]


class Gateway:
    def __init__(self, base, token):
        self.base, self.token = base.rstrip("/"), token

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=70) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def run_import(self, url, key, deadline_s=30):
        status, raw = self.call("POST", "/v1/jobs", {"type": "import", "sourceUrl": url,
                                                       "accessLevel": "private", "key": key})
        answer = json.loads(raw or b"{}")
        if status != 201:
            return {"state": "rejected %d" % status, "code": answer.get("code"), "job": answer}
        job, end = answer, time.time() + deadline_s
        while job.get("state") not in ("completed", "failed", "canceled") and time.time() < end:
            status, raw = self.call("GET", "/v1/jobs/%s?wait=10" % job["id"])
            if status == 200:
                job = json.loads(raw)
        return {"state": job.get("state"), "code": (job.get("error") or {}).get("code"), "job": job}

    def object_digest(self, key):
        status, raw = self.call("POST", "/v1/presign", {"operation": "get", "accessLevel": "private", "key": key})
        if status != 200:
            return None
        with urllib.request.urlopen(json.loads(raw)["url"], timeout=30) as r:
            return hashlib.sha256(r.read()).hexdigest()

    def delete_object(self, key):
        status, raw = self.call("POST", "/v1/presign", {"operation": "delete", "accessLevel": "private", "key": key})
        if status == 200:
            try:
                urllib.request.urlopen(urllib.request.Request(json.loads(raw)["url"], method="DELETE"), timeout=30).read()
            except urllib.error.URLError:
                pass


def counts(events):
    c = {"accept": 0, "syn": 0, "good": 0}
    for e in events:
        if e["kind"] == "decoy_accept":
            c["accept"] += 1
        elif e["kind"] == "syn":
            c["syn"] += 1
        elif e["kind"] == "good":
            c["good"] += 1
    return c


def cmd_drive(args):
    gw = Gateway(args.gateway, open(args.token_file).read().strip())
    rows, failures = [], []
    started = time.time()

    def attempt(kind, label, url, check):
        key = "ssrf-%s/%02d" % (args.run_id, len(rows) + 1)
        before = len(read_events(args.dir))
        t0 = time.time()
        result = gw.run_import(url, key)
        time.sleep(0.05)   # let the sniffer and decoys write what they saw
        new = read_events(args.dir)[before:]
        c = counts(new)
        problems = check(result, c, key)
        row = dict(kind=kind, label=label, url=url, state=result["state"], code=result["code"] or "-",
                   accepts=c["accept"], syns=c["syn"], good=c["good"], seconds=round(time.time() - t0, 2),
                   ok=not problems, problems=problems,
                   contacted=sorted({e.get("decoy") or "%s:%s" % (e.get("dst"), e.get("port"))
                                     for e in new if e["kind"] in ("decoy_accept", "syn")}))
        rows.append(row)
        if problems:
            failures.append(row)

    def is_refused(r, codes):
        return r["state"] in ("failed", "rejected 400") and r["code"] in codes

    for label, url, codes, first_hop in ATTEMPTS:
        def check(r, c, key, codes=codes, first_hop=first_hop):
            p = []
            if not is_refused(r, codes):
                p.append("not refused as %s" % "/".join(sorted(codes)))
            if c["accept"] or c["syn"]:
                p.append("DECOY CONTACTED")
            if first_hop and c["good"] < 1:
                p.append("the allowed first hop was never reached")
            if not first_hop and c["good"]:
                p.append("an allowed server was reached")
            return p
        attempt("attack", label, url, check)

    def check_rebind(r, c, key):
        p = []
        if c["accept"] or c["syn"]:
            p.append("DECOY CONTACTED")
        if r["state"] == "completed":
            if gw.object_digest(key) != hashlib.sha256(BODY).hexdigest():
                p.append("completed with other bytes than the public server's")
        elif not is_refused(r, FORBIDDEN):
            p.append("neither refused nor served by the public address")
        return p
    attempt("rebind", REBIND[0], REBIND[1], check_rebind)

    for label, url in CONTROLS:
        def check_control(r, c, key):
            p = []
            if r["state"] != "completed":
                p.append("the control import did not complete")
            elif gw.object_digest(key) != hashlib.sha256(BODY).hexdigest():
                p.append("the imported object differs from the source")
            if c["accept"] or c["syn"]:
                p.append("DECOY CONTACTED")
            return p
        attempt("control", label, url, check_control)

    for row in rows:
        if row["state"] == "completed":
            gw.delete_object("ssrf-%s/%02d" % (args.run_id, rows.index(row) + 1))

    time.sleep(1.0)   # anything late (a retry, a second connection) still counts
    everything = read_events(args.dir)
    total = counts(everything)
    dns_queries = sum(1 for e in everything if e["kind"] == "dns")

    # The table (Markdown, so it can go into RELIABILITY.md as it is).
    print("| # | attempt | URL | job state | error code | decoy accepts | other SYNs | allowed-server requests | result |")
    print("|---:|---|---|---|---|---:|---:|---:|---|")
    for i, r in enumerate(rows, 1):
        url = r["url"] if len(r["url"]) <= 90 else r["url"][:87] + "..."
        print("| %d | %s | `%s` | %s | %s | %d | %d | %d | %s |" % (
            i, r["label"], url, r["state"], r["code"], r["accepts"], r["syns"], r["good"],
            "ok" if r["ok"] else "**FAIL: " + "; ".join(r["problems"]) + "**"))
    attacks = [r for r in rows if r["kind"] != "control"]
    refused = sum(1 for r in attacks if r["state"] in ("failed", "rejected 400"))
    print()
    print("attacks: %d, refused: %d; controls: %d, completed: %d; decoy listeners' accepts over the whole run: %d; "
          "SYNs to anything but the known services: %d; DNS queries answered: %d; %.1f s" % (
              len(attacks), refused, len(rows) - len(attacks),
              sum(1 for r in rows if r["kind"] == "control" and r["state"] == "completed"),
              total["accept"], total["syn"], dns_queries, time.time() - started))
    if total["accept"] or total["syn"]:
        failures.append({"label": "whole run", "problems": ["decoy contacted"]})
        for e in everything:
            if e["kind"] in ("decoy_accept", "decoy_request", "syn"):
                print("CONTACT: " + json.dumps(e))
    for r in failures:
        print("FAILED: %s: %s (%s)" % (r["label"], "; ".join(r["problems"]), r.get("url", "")), file=sys.stderr)
    with open(os.path.join(args.dir, "results.json"), "w") as f:
        json.dump({"rows": rows, "total": total}, f, indent=1)
    return 1 if failures else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    n = sub.add_parser("net")
    n.add_argument("--netns", required=True)
    n.add_argument("--dir", required=True)
    n.add_argument("--relay", action="append", default=[], help="HOST:PORT relayed from NS to the root namespace")
    n.add_argument("--infra", action="append", default=[], help="HOST:PORT of another known service in NS")
    d = sub.add_parser("drive")
    d.add_argument("--dir", required=True)
    d.add_argument("--gateway", required=True)
    d.add_argument("--token-file", required=True)
    d.add_argument("--run-id", required=True)
    args = p.parse_args()
    sys.exit(cmd_net(args) if args.command == "net" else cmd_drive(args))


if __name__ == "__main__":
    main()
