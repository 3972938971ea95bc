#!/usr/bin/env python3
"""The drift scan at 10,000 pods (issue 32, must show 3): what a scan costs the operator
and the API server, beside the scanner without a cache that lists every pod each time.

One control plane (tests/cluster/cluster.sh, CPU nodes only) with the API server's audit
log for the operator's ServiceAccount alone, NODES more KWOK nodes, the PolicyReport
kind (tests/drift/policyreport-crd.yaml), NAMESPACES namespaces in warn mode with a
RuntimeEnv each, and PODS pods spread over them (every DRIFT_EVERY-th on another image).
lockstep-operator runs with --controllers=runtimeenv and --drift-scan-interval=INTERVAL.

Measured, after every namespace's report names its drifting pods:
  - the scan: lockstep_drift_scan_seconds (per namespace, from the operator's /metrics):
    count, mean and the time of one round over every namespace (the sum of a round);
  - the operator's API requests during ROUNDS steady rounds (the audit log, by verb and
    resource): the claim is O(1) per scan, none for an unchanged namespace;
  - the operator's RSS (VmRSS) before the pods and with them (the slimmed pod cache);
  - the peers, in the same run: `kubectl get pods -A -o json` (one LIST of every pod,
    what a scanner without a cache pays each round), and `lockstep drift -A -o json`
    (the CLI: one list of each kind, then the same scan), each REPEAT times, medians.

    bench/drift.sh                 # 10,000 pods in 20 namespaces on 100 KWOK nodes
    PODS=1000 bench/drift.sh       # a quick look

Environment: PODS (10000), NAMESPACES (20), NODES (100; 110 pods each), DRIFT_EVERY (100),
INTERVAL (20s), ROUNDS (3), REPEAT (5), BUILD (build), SKIP_BUILD=1, KEEP_CLUSTER=1,
RECORD (1: bench/results/drift-<date>.json and the block in docs/benchmarks.md).
"""
import datetime
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = os.environ
PODS = int(ENV.get("PODS", "10000"))
NAMESPACES = int(ENV.get("NAMESPACES", "20"))
NODES = int(ENV.get("NODES", "100"))
DRIFT_EVERY = int(ENV.get("DRIFT_EVERY", "100"))
INTERVAL = ENV.get("INTERVAL", "20s")
ROUNDS = int(ENV.get("ROUNDS", "3"))
REPEAT = int(ENV.get("REPEAT", "5"))
RECORD = ENV.get("RECORD", "1") == "1"
BUILD = ENV.get("BUILD", os.path.join(ROOT, "build"))
SYS_NS = "bench-sys"
SA = "lockstep"
USER = f"system:serviceaccount:{SYS_NS}:{SA}"
IMAGE = "registry.example/runtimes/torch@sha256:" + "a" * 64
OTHER = "registry.example/runtimes/torch@sha256:" + "b" * 64
T0 = time.monotonic()


def log(*a):
    print(f"drift: [{time.monotonic() - T0:.0f}s]", *a, file=sys.stderr, flush=True)


def sh(cmd, check=True, **kw):
    r = subprocess.run(cmd, text=True, capture_output=True, **kw)
    if check and r.returncode != 0:
        raise SystemExit(f"drift: {' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r


def wait_for(what, fn, timeout, every=1.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(every)
    raise SystemExit(f"drift: timed out after {timeout}s waiting for {what}")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class Cluster:
    def __init__(self, work):
        self.dir = os.path.join(work, "cluster")
        self.audit = os.path.join(work, "audit", "audit.log")
        os.makedirs(os.path.dirname(self.audit))
        policy = os.path.join(work, "audit", "policy.yaml")
        with open(policy, "w") as f:
            f.write("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n"
                    f"- level: Metadata\n  users: [{json.dumps(USER)}]\n- level: None\n")
        env = dict(ENV, LOCKSTEP_APISERVER_EXTRA_ARGS=(
            f"--audit-policy-file={policy} --audit-log-path={self.audit} --audit-log-format=json "
            "--audit-log-maxsize=2000 --audit-log-mode=batch"))
        log("starting a cluster in", self.dir)
        sh([os.path.join(ROOT, "tests/cluster/cluster.sh"), "up", "--dir", self.dir, "--nodes", "cpu",
            "--warmup", "0"], env=env)
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.tools = open(os.path.join(self.dir, "tools-bin")).read().strip()
        self.env = dict(ENV, KUBECONFIG=self.kubeconfig)

    def kubectl(self, *args, stdin=None, check=True):
        return sh([os.path.join(self.tools, "kubectl"), *args], check=check, input=stdin, env=self.env)

    def apply(self, objs, verb="apply"):
        for i in range(0, len(objs), 250):
            self.kubectl(verb, "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List",
                                                            "items": objs[i:i + 250]}))

    def down(self):
        if ENV.get("KEEP_CLUSTER") != "1":
            sh([os.path.join(ROOT, "tests/cluster/cluster.sh"), "down", "--dir", self.dir], check=False)


def nodes(n):
    return [{"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": f"bench-{i}", "annotations": {"kwok.x-k8s.io/node": "fake"},
                          "labels": {"type": "kwok", "kubernetes.io/hostname": f"bench-{i}",
                                     "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}},
             "status": {"capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
                        "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"}}} for i in range(n)]


def sa_kubeconfig(c, path):
    c.kubectl("create", "namespace", SYS_NS)
    c.kubectl("create", "serviceaccount", SA, "-n", SYS_NS)
    # The chart's RBAC would do; the benchmark grants cluster-admin to count requests, not rights.
    c.kubectl("create", "clusterrolebinding", "bench-lockstep", "--clusterrole=cluster-admin",
              f"--serviceaccount={SYS_NS}:{SA}")
    token = c.kubectl("create", "token", SA, "-n", SYS_NS, "--duration=24h").stdout.strip()
    server = c.kubectl("config", "view", "--raw", "-o", "jsonpath={.clusters[0].cluster.server}").stdout
    ca = c.kubectl("config", "view", "--raw", "-o",
                   "jsonpath={.clusters[0].cluster.certificate-authority-data}").stdout
    with open(path, "w") as f:
        f.write(f"apiVersion: v1\nkind: Config\nclusters: [{{name: local, cluster: {{server: {server}, "
                f"certificate-authority-data: {ca}}}}}]\nusers: [{{name: {SA}, user: {{token: {token}}}}}]\n"
                f"contexts: [{{name: local, context: {{cluster: local, user: {SA}}}}}]\ncurrent-context: local\n")
    os.chmod(path, 0o600)


def audit_counts(path, t0, t1):
    by, seen = {}, set()
    with open(path) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("user", {}).get("username") != USER or e["auditID"] in seen:
                continue
            t = datetime.datetime.strptime(e["requestReceivedTimestamp"][:26].rstrip("Z"),
                                           "%Y-%m-%dT%H:%M:%S.%f").replace(
                tzinfo=datetime.timezone.utc).timestamp()
            if not t0 <= t < t1:
                continue
            seen.add(e["auditID"])
            ref = e.get("objectRef", {})
            key = f"{e['verb']} {ref.get('resource', e.get('requestURI', '?'))}"
            if ref.get("subresource"):
                key += "/" + ref["subresource"]
            by[key] = by.get(key, 0) + 1
    return by


def scrape(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for name in ("lockstep_drift_scan_seconds_sum", "lockstep_drift_scan_seconds_count"):
        m = re.search(rf"^{name}(?:{{[^}}]*}})? ([0-9.e+-]+)$", text, re.M)
        out[name] = float(m.group(1)) if m else 0.0
    return out


def timed(fn, n):
    times = []
    for _ in range(n):
        t = time.monotonic()
        fn()
        times.append(time.monotonic() - t)
    return statistics.median(times), times


def main():
    if ENV.get("SKIP_BUILD") != "1":
        log("building lockstep-operator and lockstep")
        sh(["cmake", "--build", BUILD, "--target", "lockstep-operator", "lockstep"])
    operator = os.path.join(BUILD, "cmd/lockstep-operator")
    cli = os.path.join(BUILD, "cmd/lockstep/lockstep")
    work = tempfile.mkdtemp(prefix="lockstep-drift-bench-")
    c = Cluster(work)
    proc = None
    try:
        c.apply(nodes(NODES))
        c.kubectl("apply", "-f", os.path.join(ROOT, "crds"))
        c.kubectl("apply", "-f", os.path.join(ROOT, "tests/drift/policyreport-crd.yaml"))
        c.kubectl("wait", "--for", "condition=Established", "crd/runtimeenvs.lockstep.dev",
                  "crd/policyreports.wgpolicyk8s.io", "--timeout=60s")
        kubeconfig = os.path.join(work, "operator.kubeconfig")
        sa_kubeconfig(c, kubeconfig)
        metrics = free_port()
        proc = subprocess.Popen(
            [operator, "--kubeconfig", kubeconfig, "--namespace", SYS_NS, "--bind-address", "127.0.0.1",
             "--webhook-port", str(free_port()), "--metrics-port", str(metrics), "--metrics-secure=false",
             "--health-port", str(free_port()), "--webhook-ip", "127.0.0.1", "--controllers=runtimeenv",
             f"--drift-scan-interval={INTERVAL}", "--log-format=json"],
            stdout=open(os.path.join(work, "operator.log"), "w"), stderr=subprocess.STDOUT)
        lock = "numpy==1.26.4 --hash=sha256:" + "a" * 64 + "\n"
        names = [f"drift-{i:02d}" for i in range(NAMESPACES)]
        c.apply([{"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"name": n, "labels": {"lockstep.dev/enforce": "warn"}}} for n in names])
        c.apply([{"apiVersion": "lockstep.dev/v1alpha1", "kind": "RuntimeEnv",
                  "metadata": {"name": "torch", "namespace": n},
                  "spec": {"image": IMAGE, "lock": {"inline": lock}}} for n in names])
        for n in names:
            c.kubectl("wait", "--for=condition=Ready", "rte/torch", "-n", n, "--timeout=120s")
        closure = c.kubectl("get", "rte/torch", "-n", names[0], "-o",
                            "jsonpath={.status.closureHash}").stdout.strip()
        wait_for("the operator's metrics", lambda: scrape(metrics)["lockstep_drift_scan_seconds_count"] > 0, 120)
        rss_before = rss_kib(proc.pid)
        log(f"creating {PODS} pods in {NAMESPACES} namespaces")
        pods, drifting = [], {n: 0 for n in names}
        for i in range(PODS):
            n = names[i % NAMESPACES]
            bad = i % DRIFT_EVERY == DRIFT_EVERY - 1
            drifting[n] += bad
            pods.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": f"serve-{i:05d}", "namespace": n,
                                      "labels": {"lockstep.dev/runtime-env": "torch", "app": "serve"},
                                      "annotations": {"lockstep.dev/closure-hash": closure}},
                         "spec": {"containers": [{"name": "main", "image": OTHER if bad else IMAGE}]}})
        t = time.monotonic()
        c.apply(pods, verb="create")
        log(f"pods created in {time.monotonic() - t:.0f}s")

        def reported():
            out = c.kubectl("get", "policyreports", "-A", "-o", "json").stdout
            fails = {r["metadata"]["namespace"]: (r["summary"]["fail"], r["summary"]["pass"])
                     for r in json.loads(out)["items"]}
            per = PODS // NAMESPACES
            return all(fails.get(n, (-1, -1))[0] == drifting[n] and sum(fails.get(n, (0, 0))) >= per
                       for n in names)
        wait_for("every namespace's report", reported, 900, every=5)
        log("reports complete; steady rounds")
        time.sleep(seconds(INTERVAL))
        m0, w0 = scrape(metrics), time.time()
        time.sleep(ROUNDS * seconds(INTERVAL))
        m1, w1 = scrape(metrics), time.time()
        rss_with = rss_kib(proc.pid)
        time.sleep(3)  # the audit log's batch
        requests = audit_counts(c.audit, w0, w1)
        scans = m1["lockstep_drift_scan_seconds_count"] - m0["lockstep_drift_scan_seconds_count"]
        scan_s = m1["lockstep_drift_scan_seconds_sum"] - m0["lockstep_drift_scan_seconds_sum"]
        list_med, list_all = timed(lambda: c.kubectl("get", "pods", "-A", "-o", "json"), REPEAT)
        cli_med, cli_all = timed(lambda: sh([cli, "drift", "-A", "-o", "json", "--kubeconfig", c.kubeconfig],
                                            check=False), REPEAT)
        round_s = scan_s / max(scans, 1) * NAMESPACES
        result = {
            "date": datetime.date.today().isoformat(),
            "machine": {"cpus": os.cpu_count(), "kernel": platform.release(),
                        "load": os.getloadavg()},
            "size": {"pods": PODS, "namespaces": NAMESPACES, "nodes": NODES, "drifting": sum(drifting.values()),
                     "interval": INTERVAL, "rounds": ROUNDS},
            "lockstep": {"scans": scans, "scan_mean_ms": 1000 * scan_s / max(scans, 1),
                         "round_ms": 1000 * round_s,
                         "requests_steady": requests, "requests_per_round": sum(requests.values()) / ROUNDS,
                         "rss_mib_before": rss_before / 1024, "rss_mib_with_pods": rss_with / 1024},
            "peers": {"kubectl_list_all_pods_median_s": list_med, "kubectl_runs_s": list_all,
                      "lockstep_drift_cli_median_s": cli_med, "cli_runs_s": cli_all},
            "ratios": {"operator_round_over_list": round_s / list_med,
                       "operator_round_over_cli": round_s / cli_med},
        }
        print(json.dumps(result, indent=2))
        if RECORD:
            path = os.path.join(ROOT, "bench/results", f"drift-{result['date']}.json")
            with open(path, "w") as f:
                json.dump(result, f, indent=2)
                f.write("\n")
            log("wrote", path)
    finally:
        if proc and proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=20)
        c.down()


def seconds(d):
    m = re.fullmatch(r"(\d+)(ms|s|m)", d)
    return int(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(2)]


if __name__ == "__main__":
    main()
