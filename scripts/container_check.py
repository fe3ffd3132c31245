"""scripts/container_check.py — docker/Dockerfile built and run without Docker (see container-check.sh).

Base images cannot be pulled here, so the Dockerfile is read and carried out as Docker would:
  - the build stage's `swift build` step runs in the checkout, its `/out` redirected to a work
    directory (the same flags, so the same binary);
  - the runtime stage's `FROM debian:bookworm-slim` becomes a Debian bookworm root filesystem made
    by mmdebstrap (minbase), and its RUN, COPY --from=build, ENV, WORKDIR and USER instructions are
    applied in order inside it (RUN through chroot, with the ENV set so far);
  - the gateway starts as docker/compose.yaml starts it (its entrypoint, else the image's
    ENTRYPOINT + CMD), as the image's USER, in the image's WORKDIR, with the image's ENV, then the
    compose file's environment (defaults of its ${VAR:-default} forms), then the local stack's
    database, S3 and JWT settings in place of the compose file's, in its own mount and PID
    namespaces (unshare) with /proc and /dev mounted and the host's network (so the stack on
    loopback is reachable).
Then: the HEALTHCHECK command succeeds inside the root filesystem, /healthz and /readyz answer 200,
the process runs as the image's user, a page on a dev origin passes CORS, a token minted by the image's binary is accepted, a presigned
PUT stores an object, an upload job spools through the image's spool directory, and a copy job
completes with the copy byte-identical to the original. Exits non-zero on any failure.
"""

import json
import os
import pwd
import re
import shlex
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCKERFILE = os.path.join(ROOT, "docker", "Dockerfile")
COMPOSE = os.path.join(ROOT, "docker", "compose.yaml")
STACK_SETTINGS = ("GATEWAY_DATABASE_", "GATEWAY_S3_", "GATEWAY_JWT_")
DEBIAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MIRRORS = [
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
]
PORT = int(os.environ.get("CONTAINER_PORT", "18098"))
MiB = 1024 * 1024


def log(message):
    print(f"[container] {message}", file=sys.stderr, flush=True)


def fail(message):
    log("FAILED: " + message)
    sys.exit(1)


# ---- the Dockerfile ----

def instructions(path):
    """(keyword, argument) pairs, line continuations joined and comments dropped."""
    lines, current = [], ""
    with open(path) as source:
        for raw in source:
            line = raw.rstrip("\n")
            if line.lstrip().startswith("#") or not line.strip():
                continue
            if line.endswith("\\"):
                current += line[:-1] + " "
                continue
            lines.append(current + line)
            current = ""
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip()) for line in lines]


def stages(path):
    """The stages, each a list of instructions after its FROM: {'from': image, 'name': alias, 'steps': [...]}."""
    found, args = [], {}
    for keyword, argument in instructions(path):
        if keyword == "ARG" and not found:
            name, _, default = argument.partition("=")
            args[name] = default
        elif keyword == "FROM":
            words = argument.split()
            image = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), ""), words[0])
            found.append({"from": image, "name": words[2] if len(words) > 2 else None, "steps": []})
        else:
            found[-1]["steps"].append((keyword, argument))
    return found


def env_pairs(argument, env):
    """ENV k=v k2=v2 (values may be quoted and refer to earlier variables)."""
    pairs = {}
    for word in shlex.split(argument):
        name, _, value = word.partition("=")
        pairs[name] = re.sub(r"\$\{?(\w+)\}?", lambda m: {**env, **pairs}.get(m.group(1), ""), value)
    return pairs


def compose_gateway(image, stack):
    """The compose file's gateway service on top of the image: entrypoint and environment."""
    with open(COMPOSE) as source:
        service = yaml.safe_load(source)["services"]["gateway"]
    environment = {name: re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", str(value))
                   for name, value in service.get("environment", {}).items()}
    environment = {name: value for name, value in environment.items() if not name.startswith(STACK_SETTINGS)}
    argv = service.get("entrypoint", image["entrypoint"] + image["cmd"])
    return argv, {**image["env"], **environment, **stack, "GATEWAY_PORT": str(PORT)}


# ---- building ----

def build_binary(build_stage, out):
    runs = [argument for keyword, argument in build_stage["steps"] if keyword == "RUN" and "swift build" in argument]
    if len(runs) != 1:
        fail("the build stage has no single `swift build` RUN")
    command = runs[0].replace("/out", out)
    log("build stage: " + runs[0].split("&&")[0].strip())
    subprocess.run(["bash", "-c", command], cwd=ROOT, check=True, stdin=subprocess.DEVNULL)


def build_rootfs(runtime, out, rootfs):
    if runtime["from"] != "debian:bookworm-slim":
        fail(f"the runtime stage is FROM {runtime['from']}; this check builds debian:bookworm-slim only")
    env, image = {"PATH": DEBIAN_PATH}, {"workdir": "/", "user": "root", "entrypoint": [], "cmd": [], "healthcheck": None}
    hooks = []
    for keyword, argument in runtime["steps"]:
        if keyword == "RUN":
            assignments = " ".join(f"{name}={shlex.quote(value)}" for name, value in env.items())
            hooks.append(f'chroot "$1" /usr/bin/env -i {assignments} /bin/sh -c {shlex.quote(argument)}')
        elif keyword == "COPY":
            words = argument.split()
            if words[0] != "--from=build" or words[1].rstrip("/") != "/out" or len(words) != 3:
                fail(f"COPY {argument}: this check knows COPY --from=build /out/ DEST only")
            hooks.append(f'mkdir -p "$1"{shlex.quote(words[2])} && cp -a {shlex.quote(out)}/. "$1"{shlex.quote(words[2])}')
        elif keyword == "ENV":
            env.update(env_pairs(argument, env))
        elif keyword == "WORKDIR":
            image["workdir"] = argument
        elif keyword == "USER":
            image["user"] = argument
        elif keyword in ("ENTRYPOINT", "CMD"):
            image[keyword.lower()] = json.loads(argument)
        elif keyword == "HEALTHCHECK":
            image["healthcheck"] = argument.split(" CMD ", 1)[1]
        elif keyword in ("EXPOSE", "STOPSIGNAL", "LABEL"):
            pass
        else:
            fail(f"{keyword} in the runtime stage: this check does not know it")
    command = ["mmdebstrap", "--variant=minbase", "--quiet"]
    command += [f"--customize-hook={hook}" for hook in hooks]
    command += ["bookworm", rootfs] + MIRRORS
    log(f"runtime stage: bookworm minbase + {len(hooks)} steps (mmdebstrap)")
    with open(os.path.join(os.path.dirname(rootfs), "build.log"), "wb") as output:
        if subprocess.run(command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT).returncode != 0:
            fail(f"the runtime stage did not build; see {output.name}")
    image["env"] = env
    return image


# ---- running ----

def user_in(rootfs, name):
    with open(os.path.join(rootfs, "etc", "passwd")) as passwd:
        for line in passwd:
            fields = line.rstrip("\n").split(":")
            if fields[0] == name:
                return int(fields[2]), int(fields[3]), fields[5]
    fail(f"the image has no user {name}")


def in_rootfs(rootfs, image, env, argv, detach=False):
    """argv inside the root filesystem as the image's user, in fresh mount and PID namespaces."""
    uid, gid, home = user_in(rootfs, image["user"])
    assignments = " ".join(shlex.quote(f"{k}={v}") for k, v in {**env, "HOME": home}.items())
    inner = (f"mount -t proc proc {shlex.quote(rootfs)}/proc && mount --rbind /dev {shlex.quote(rootfs)}/dev && "
             f"exec chroot --userspec={uid}:{gid} {shlex.quote(rootfs)} /usr/bin/env -i {assignments} "
             f"/bin/sh -c {shlex.quote('cd ' + shlex.quote(image['workdir']) + ' && exec ' + shlex.join(argv))}")
    command = ["unshare", "--mount", "--pid", "--fork", "--kill-child=SIGKILL", "sh", "-c", inner]
    if detach:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=open(os.path.join(os.path.dirname(rootfs), "gateway.log"), "wb"))
    return subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True)


def http(method, url, body=None, token=None, headers=None):
    request = urllib.request.Request(url, data=body, method=method, headers=dict(headers or {}))
    if token:
        request.add_header("Authorization", "Bearer " + token)
    if isinstance(body, bytes) and method == "POST":
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (urllib.error.URLError, ConnectionError):
        return 0, b""


def until(what, condition, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    fail("timed out waiting for " + what)


def listener(port):
    """The pid (on the host) of the process listening on the port, from ss."""
    output = subprocess.run(["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True).stdout
    match = re.search(r"pid=(\d+)", output)
    return int(match.group(1)) if match else None


def uid_of(pid):
    with open(f"/proc/{pid}/status") as status:
        return int(next(line for line in status if line.startswith("Uid:")).split()[1])


def stop(gateway, pid, log_path):
    """SIGTERM to the gateway itself, PID 1 of its namespace, as `docker stop` sends it (unshare
    ignores SIGTERM while it waits); it must stop gracefully within the compose file's 30 s."""
    if pid:
        os.kill(pid, 15)
    try:
        gateway.wait(timeout=30)
    except subprocess.TimeoutExpired:
        gateway.kill()  # unshare's --kill-child passes SIGKILL on
        gateway.wait()
        fail("the gateway did not stop within 30 s of SIGTERM")
    with open(log_path, "rb") as logged:
        if pid and b'"msg":"stopped"' not in logged.read():
            fail("the gateway did not stop gracefully on SIGTERM")


def check(rootfs, image, stack):
    base = f"http://127.0.0.1:{PORT}"
    argv, env = compose_gateway(image, stack)
    missing = in_rootfs(rootfs, image, env, ["sh", "-c", "ldd /app/transfer-gateway | grep 'not found' || true"])
    if missing.stdout.strip():
        fail("shared libraries missing in the image: " + missing.stdout.strip())
    if listener(PORT):
        fail(f"port {PORT} is taken; set CONTAINER_PORT")
    gateway = in_rootfs(rootfs, image, env, argv, detach=True)
    pid = None
    try:
        until("/healthz", lambda: gateway.poll() is None and http("GET", base + "/healthz")[0] == 200 or gateway.poll() is not None, 60)
        if gateway.poll() is not None:
            fail("the gateway exited at start; see gateway.log")
        uid, _, _ = user_in(rootfs, image["user"])
        pid = listener(PORT)
        if pid is None or uid_of(pid) != uid:
            fail(f"the gateway does not run as {image['user']} (uid {uid})")
        health = in_rootfs(rootfs, image, env, ["/bin/sh", "-c", image["healthcheck"]])
        if health.returncode != 0:
            fail("the HEALTHCHECK command failed: " + health.stderr)
        until("/readyz", lambda: http("GET", base + "/readyz")[0] == 200, 30)
        origin = "http://localhost:5173"
        preflight = urllib.request.Request(base + "/v1/presign", method="OPTIONS", headers={
            "Origin": origin, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type,traceparent"})
        with urllib.request.urlopen(preflight, timeout=10) as answer:
            if answer.headers.get("Access-Control-Allow-Origin") != origin:
                fail("a page on " + origin + " is refused by the compose file's CORS settings")
        log(f"running as {image['user']}; HEALTHCHECK, /healthz and /readyz pass; a page on a dev origin passes CORS")

        minted = in_rootfs(rootfs, image, env, ["transfer-gateway", "token", "--sub", "container-check", "--ttl", "600"])
        token = minted.stdout.strip()
        if minted.returncode != 0 or not token:
            fail("`transfer-gateway token` failed in the image: " + minted.stderr)
        original = os.urandom(7 * MiB + 11)
        status, body = http("POST", base + "/v1/presign", json.dumps(
            {"operation": "put", "accessLevel": "private", "key": "container/source.bin"}).encode(), token)
        if status != 200:
            fail(f"presign answered {status}: {body[:200]!r}")
        presigned = json.loads(body)
        status, _ = http("PUT", presigned["url"], original, headers=presigned.get("headers"))
        if status != 200:
            fail(f"the presigned PUT answered {status}")
        log("presign: a presigned PUT stored 7 MiB")

        status, body = http("POST", base + "/v1/jobs", json.dumps(
            {"type": "upload", "accessLevel": "private", "key": "container/spooled.bin", "size": 6 * MiB}).encode(), token)
        job = json.loads(body)
        spooled = os.urandom(6 * MiB)
        status, body = http("PUT", f"{base}/v1/jobs/{job['id']}/data", spooled, token, {"Content-Type": "application/octet-stream"})
        if status != 200:
            fail(f"the upload job's data answered {status}: {body[:200]!r}")
        log("upload job: 6 MiB through the image's spool directory")

        status, body = http("POST", base + "/v1/jobs", json.dumps({
            "type": "copy", "source": {"accessLevel": "private", "key": "container/source.bin"},
            "destination": {"accessLevel": "private", "key": "container/copy.bin"}}).encode(), token)
        if status != 201:
            fail(f"the copy job was refused: {status} {body[:200]!r}")
        job_id = json.loads(body)["id"]
        final = until("the copy job to end", lambda: (lambda j: j if j["state"] in ("completed", "failed", "canceled") else None)(
            json.loads(http("GET", f"{base}/v1/jobs/{job_id}?wait=10", token=token)[1])))
        if final["state"] != "completed":
            fail(f"the copy job ended {final['state']}: {final.get('error')}")
        status, body = http("POST", base + "/v1/presign", json.dumps(
            {"operation": "get", "accessLevel": "private", "key": "container/copy.bin"}).encode(), token)
        status, copied = http("GET", json.loads(body)["url"])
        if status != 200 or copied != original:
            fail("the copy differs from its source")
        log(f"copy job: completed in {final['partsTotal']} parts, byte-identical")
    finally:
        stop(gateway, pid or listener(PORT), os.path.join(os.path.dirname(rootfs), "gateway.log"))
    log("SIGTERM: the gateway stopped gracefully")


def main():
    settings = {name: value for name, value in os.environ.items() if name.startswith(STACK_SETTINGS)}
    work = tempfile.mkdtemp(prefix="tg-container-")
    out, rootfs = os.path.join(work, "out"), os.path.join(work, "rootfs")
    os.makedirs(out)
    dockerfile = stages(DOCKERFILE)
    if len(dockerfile) != 2 or dockerfile[0]["name"] != "build":
        fail("docker/Dockerfile is expected to have a build stage and a runtime stage")
    build_binary(dockerfile[0], out)
    image = build_rootfs(dockerfile[1], out, rootfs)
    check(rootfs, image, settings)
    log("passed")
    # The namespaces died with the gateway, and their mounts with them; delete only this file system.
    if subprocess.run(["findmnt", "-rn", "-R", rootfs], capture_output=True).stdout:
        fail(f"{rootfs} still has mounts; left in place")
    subprocess.run(["rm", "-rf", "--one-file-system", work], check=True)


if __name__ == "__main__":
    main()
