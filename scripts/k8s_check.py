"""scripts/k8s_check.py — the deployment files for several instances agree with each other and
with the gateway's settings (see k8s-check.sh, which first validates the manifests' schemas).

docker/k8s/:
  - kustomization.yaml lists every manifest beside it, and each one it lists exists;
  - the Deployment runs 3 replicas of `serve` as a non-root user with a read-only root filesystem,
    readiness on /readyz and liveness on /healthz, the spool (GATEWAY_SPOOL_DIR) on an emptyDir
    whose sizeLimit is above GATEWAY_SPOOL_BUDGET, and a memory limit with room above
    GATEWAY_MEMORY_BUDGET (the gateway's peak stays below the budget + 64 MiB);
  - preStop + GATEWAY_SHUTDOWN_GRACE + a margin fit terminationGracePeriodSeconds, the numbers read
    from the manifests (the settings from the ConfigMap and Secret the container loads, then its
    own env, else the gateway's defaults);
  - a Job runs `migrate`; the Service, PodDisruptionBudget and HorizontalPodAutoscaler point at the
    Deployment's pods; no manifest sets GATEWAY_LINK_SECRET (migrate stores the link secret).
docker/compose.scale.yaml: three gateway services and an nginx, a one-shot migrate the gateways
wait for, no GATEWAY_LINK_SECRET, the balancer trusted by address, and docker/nginx-scale.conf
balancing round robin over exactly those gateways without buffering.
Prints one line per check; exits 1 when any failed.
"""

import glob
import os
import re
import shlex
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
K8S = os.path.join(ROOT, "docker", "k8s")
COMPOSE = os.path.join(ROOT, "docker", "compose.scale.yaml")
MiB = 1024 * 1024
# What the gateway uses when a setting is unset (docs/configuration.md).
DEFAULTS = {
    "GATEWAY_SHUTDOWN_GRACE": "10",
    "GATEWAY_MEMORY_BUDGET": str(256 * MiB),
    "GATEWAY_SPOOL_BUDGET": str(10 * 1024 * MiB),
    "GATEWAY_SPOOL_DIR": "./.spool",
}
# Seconds the gateway needs after GATEWAY_SHUTDOWN_GRACE: hand jobs back, close, exit.
STOP_MARGIN = 5
# Above GATEWAY_MEMORY_BUDGET, what the rest of the process takes at its measured peak.
MEMORY_ROOM = 64 * MiB

failures = []
passed = 0


def check(ok, what):
    global passed
    if ok:
        passed += 1
        print(f"ok    {what}")
    else:
        failures.append(what)
        print(f"FAIL  {what}")
    return ok


def quantity(text):
    """A Kubernetes quantity (512Mi, 5Gi, 1G, 500m) in base units."""
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50,
             "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "m": 10**-3, "": 1}
    match = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", str(text))
    if not match or match.group(2) not in units:
        raise ValueError(f"not a quantity: {text!r}")
    return float(match.group(1)) * units[match.group(2)]


def load_manifests():
    manifests = {}
    for path in sorted(glob.glob(os.path.join(K8S, "**", "*.yaml"), recursive=True)):
        if os.path.basename(path) == "kustomization.yaml":
            continue
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc:
                    manifests.setdefault(doc["kind"], []).append((os.path.relpath(path, K8S), doc))
    return manifests


def one(manifests, kind):
    found = manifests.get(kind, [])
    check(len(found) == 1, f"one {kind} under docker/k8s ({len(found)} found)")
    return found[0][1] if found else {}


def check_kustomization():
    with open(os.path.join(K8S, "kustomization.yaml")) as f:
        kustomization = yaml.safe_load(f)
    listed = kustomization.get("resources", [])
    beside = sorted(os.path.basename(p) for p in glob.glob(os.path.join(K8S, "*.yaml"))
                    if os.path.basename(p) != "kustomization.yaml")
    missing = [r for r in listed if not os.path.exists(os.path.join(K8S, r))]
    check(not missing, f"kustomization.yaml lists only files that exist (missing: {missing})")
    unlisted = [p for p in beside if p not in listed]
    check(not unlisted, f"kustomization.yaml lists every manifest in docker/k8s (unlisted: {unlisted})")


def container_settings(manifests, container):
    """The environment a container sees: its ConfigMaps and Secrets, then its own env."""
    settings = {}
    by_name = {(kind, doc["metadata"]["name"]): doc
               for kind in ("ConfigMap", "Secret") for _, doc in manifests.get(kind, [])}
    for source in container.get("envFrom", []):
        for key, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
            if key in source:
                doc = by_name.get((kind, source[key]["name"]))
                check(doc is not None, f"{kind} {source[key]['name']} that the container loads exists")
                if doc:
                    settings.update(doc.get("data") or {})
                    settings.update(doc.get("stringData") or {})
    for var in container.get("env", []):
        if "value" in var:
            settings[var["name"]] = var["value"]
    return settings


def prestop_seconds(container):
    pre_stop = container.get("lifecycle", {}).get("preStop")
    if not pre_stop:
        return 0
    if "sleep" in pre_stop:
        return int(pre_stop["sleep"]["seconds"])
    if "exec" in pre_stop:
        words = pre_stop["exec"]["command"]
        text = " ".join(words)
        match = re.search(r"(?:^|[ /;&])sleep\s+([0-9]+)\b", text)
        if match:
            return int(match.group(1))
        raise ValueError(f"preStop runs {shlex.join(words)}: no `sleep N` to read")
    return 0


def check_deployment(manifests):
    deployment = one(manifests, "Deployment")
    if not deployment:
        return {}
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    labels = spec["template"]["metadata"]["labels"]
    check(spec.get("replicas") == 3, f"the Deployment runs 3 replicas ({spec.get('replicas')})")
    containers = pod["containers"]
    gateway = next((c for c in containers if c.get("args", [None])[0] == "serve"), None)
    if not check(gateway is not None, "a container of the Deployment runs `serve`"):
        return {}
    settings = dict(DEFAULTS)
    settings.update(container_settings(manifests, gateway))

    ports = {p.get("name"): p["containerPort"] for p in gateway.get("ports", [])}
    gateway_port = int(settings.get("GATEWAY_PORT", "8080"))
    check(gateway_port in ports.values(), f"the container exposes GATEWAY_PORT {gateway_port}")
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        got = gateway.get(probe, {}).get("httpGet", {}).get("path")
        check(got == path, f"{probe} is GET {path} ({got})")

    # Stopping: preStop, then SIGTERM and GATEWAY_SHUTDOWN_GRACE, all within the grace period.
    grace_period = int(pod.get("terminationGracePeriodSeconds", 30))
    pre_stop = prestop_seconds(gateway)
    shutdown = int(settings["GATEWAY_SHUTDOWN_GRACE"])
    check(pre_stop > 0, f"preStop waits before SIGTERM ({pre_stop} s)")
    check(pre_stop + shutdown + STOP_MARGIN <= grace_period,
          f"preStop {pre_stop} s + GATEWAY_SHUTDOWN_GRACE {shutdown} s + margin {STOP_MARGIN} s"
          f" = {pre_stop + shutdown + STOP_MARGIN} s <= terminationGracePeriodSeconds {grace_period} s")

    # Memory: the limit holds the budget and the rest of the process.
    budget = int(settings["GATEWAY_MEMORY_BUDGET"])
    limit = gateway.get("resources", {}).get("limits", {}).get("memory")
    request = gateway.get("resources", {}).get("requests", {}).get("memory")
    check(limit is not None and quantity(limit) >= budget + MEMORY_ROOM,
          f"memory limit {limit} >= GATEWAY_MEMORY_BUDGET {budget // MiB} MiB + {MEMORY_ROOM // MiB} MiB")
    check(request is not None and limit is not None and quantity(request) <= quantity(limit),
          f"memory request {request} <= limit {limit}")

    # Non-root, read-only root filesystem, the spool on an emptyDir big enough for its budget.
    pod_security = pod.get("securityContext", {})
    security = gateway.get("securityContext", {})
    check(security.get("runAsNonRoot", pod_security.get("runAsNonRoot")) is True
          and security.get("runAsUser", pod_security.get("runAsUser", 0)) != 0, "the gateway runs as non-root")
    check(security.get("readOnlyRootFilesystem") is True, "the root filesystem is read-only")
    check(security.get("allowPrivilegeEscalation") is False, "no privilege escalation")
    spool_dir = settings["GATEWAY_SPOOL_DIR"]
    mount = next((m for m in gateway.get("volumeMounts", []) if m["mountPath"] == spool_dir), None)
    volume = next((v for v in pod.get("volumes", []) if mount and v["name"] == mount["name"]), None)
    if check(volume is not None and "emptyDir" in volume, f"GATEWAY_SPOOL_DIR {spool_dir} is an emptyDir"):
        size = volume["emptyDir"].get("sizeLimit")
        spool_budget = int(settings["GATEWAY_SPOOL_BUDGET"])
        check(size is not None and quantity(size) > spool_budget,
              f"the spool's sizeLimit {size} > GATEWAY_SPOOL_BUDGET {spool_budget // MiB} MiB")
    check("GATEWAY_LINK_SECRET" not in settings,
          "the Deployment sets no GATEWAY_LINK_SECRET (migrate stores the link secret)")
    return {"name": deployment["metadata"]["name"], "labels": labels, "ports": ports}


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check_others(manifests, deployment):
    job = one(manifests, "Job")
    if job:
        job_containers = job["spec"]["template"]["spec"]["containers"]
        check(any("migrate" in (c.get("args", []) + c.get("command", [])) for c in job_containers),
              "the Job runs `transfer-gateway migrate`")
        job_labels = job["spec"]["template"]["metadata"].get("labels", {})
        check(not deployment or job_labels != deployment["labels"],
              "the Job's pods are not the Deployment's (the Service does not select them)")
    if not deployment:
        return
    service = one(manifests, "Service")
    if service:
        check(selects(service["spec"].get("selector"), deployment["labels"]),
              "the Service selects the Deployment's pods")
        check(service["spec"].get("sessionAffinity", "None") == "None", "the Service has no session affinity")
        targets = [p.get("targetPort") for p in service["spec"]["ports"]]
        check(all(t in deployment["ports"] or t in deployment["ports"].values() for t in targets),
              f"the Service's target ports are the container's ({targets})")
    pdb = one(manifests, "PodDisruptionBudget")
    if pdb:
        check(selects(pdb["spec"]["selector"].get("matchLabels"), deployment["labels"]),
              "the PodDisruptionBudget selects the Deployment's pods")
        check(pdb["spec"].get("maxUnavailable") == 1 or pdb["spec"].get("minAvailable") is not None,
              "the PodDisruptionBudget allows one pod down at a time")
    hpa = one(manifests, "HorizontalPodAutoscaler")
    if hpa:
        target = hpa["spec"]["scaleTargetRef"]
        check(hpa["apiVersion"] == "autoscaling/v2", "the HorizontalPodAutoscaler is autoscaling/v2")
        check(target["kind"] == "Deployment" and target["name"] == deployment["name"],
              "the HorizontalPodAutoscaler scales the Deployment")
        check(any(m.get("resource", {}).get("name") == "cpu" for m in hpa["spec"].get("metrics", [])),
              "the HorizontalPodAutoscaler scales on CPU")
    for kind in ("ConfigMap", "Secret"):
        for path, doc in manifests.get(kind, []):
            keys = set(doc.get("data") or {}) | set(doc.get("stringData") or {})
            check("GATEWAY_LINK_SECRET" not in keys, f"{path} sets no GATEWAY_LINK_SECRET")


def check_compose():
    with open(COMPOSE) as f:
        compose = yaml.safe_load(f)
    services = compose.get("services", {})
    gateways = sorted(name for name in services if re.fullmatch(r"gateway-[0-9]+", name))
    check(len(gateways) == 3, f"compose.scale.yaml has three gateway services ({gateways})")
    nginx = services.get("nginx", {})
    check(str(nginx.get("image", "")).startswith("nginx"), "compose.scale.yaml has an nginx service")
    migrate = services.get("migrate", {})
    migrate_words = " ".join(map(str, (migrate.get("entrypoint") or []) + (migrate.get("command") or [])))
    check(re.search(r"transfer-gateway migrate\b", migrate_words) is not None or migrate.get("command") == ["migrate"],
          "compose.scale.yaml has a one-shot migrate service running `transfer-gateway migrate`")
    image = migrate.get("image")
    balancer_ip = nginx.get("networks", {}).get("default", {}).get("ipv4_address")
    for name in gateways:
        service = services[name]
        env = service.get("environment", {})
        check(service.get("image") == image and service.get("command") == ["serve"],
              f"{name} runs `serve` from the migrate service's image {image}")
        condition = service.get("depends_on", {}).get("migrate", {}).get("condition")
        check(condition == "service_completed_successfully", f"{name} starts after migrate completed")
        check("GATEWAY_LINK_SECRET" not in env, f"{name} sets no GATEWAY_LINK_SECRET")
        check(balancer_ip is not None and env.get("GATEWAY_TRUSTED_PROXIES") == balancer_ip,
              f"{name} trusts the balancer's address ({env.get('GATEWAY_TRUSTED_PROXIES')})")
        check("ports" not in service, f"{name} is reached only through nginx")
        address = (service.get("networks") or {}).get("default", {}).get("ipv4_address")
        check(address is not None, f"{name} has a fixed address, where nginx finds it after a restart ({address})")

    config = next((v.split(":")[0] for v in nginx.get("volumes", []) if v.split(":")[1] == "/etc/nginx/nginx.conf"), None)
    config_path = os.path.join(os.path.dirname(COMPOSE), config) if config else None
    if not check(config_path is not None and os.path.exists(config_path), f"nginx's config {config} exists"):
        return
    with open(config_path) as f:
        text = re.sub(r"#.*", "", f.read())
    upstream = re.search(r"upstream\s+\S+\s*\{([^}]*)\}", text)
    servers = re.findall(r"^\s*server\s+([^:\s;]+)", upstream.group(1), re.M) if upstream else []
    check(sorted(servers) == gateways, f"nginx's upstream is the three gateways ({servers})")
    check(not re.search(r"^\s*(ip_hash|hash|sticky|least_conn|random)\b", upstream.group(1) if upstream else "", re.M),
          "nginx balances round robin, without stickiness")
    for directive in ("proxy_request_buffering off", "proxy_buffering off", "client_max_body_size 0",
                      "proxy_http_version 1.1", "proxy_set_header X-Forwarded-For",
                      "proxy_set_header X-Forwarded-Proto", "proxy_set_header Host $http_host"):
        check(re.search(r"\b" + re.escape(directive) + r"\b", text) is not None, f"nginx: {directive}")


def main():
    manifests = load_manifests()
    check_kustomization()
    deployment = check_deployment(manifests)
    check_others(manifests, deployment)
    check_compose()
    if failures:
        print(f"k8s-check: {len(failures)} of {passed + len(failures)} checks failed", file=sys.stderr)
        sys.exit(1)
    print(f"k8s-check: all {passed} checks passed")


if __name__ == "__main__":
    main()
