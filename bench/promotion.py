#!/usr/bin/env python3
"""Promotion at scale, side by side with Argo Rollouts' controller (issue 33, part 1).

One control plane (tests/cluster/cluster.sh: a real kube-apiserver, etcd, the
controller-manager and scheduler, KWOK nodes), one Prometheus scraping one
simulated model server (tests/cluster/prometheus.sh, lockstep-test-exporter),
and the two controllers taking turns on it, each at its defaults:

  argo      Argo Rollouts' rollouts-controller (bench/peers/argo-rollouts/build.sh:
            the pinned module from the Go module proxy), QPS 40, burst 80, 10
            rollout workers, leader election; a Rollout per model (setWeight steps,
            an inline analysis after each, an AnalysisTemplate with the Prometheus
            provider), CRDs and ClusterRole read from the module at run time.
  lockstep  lockstep-operator as the chart runs it (leader election, admission mode
            policy, self-managed certificates, 2 workers); a ModelRelease per model
            version with a prod stage only (canary steps, a Prometheus analysis each,
            through an AnalysisProvider).

Per controller, in a namespace of its own (deleted and waited for afterwards):
  1. the controller starts; MODELS models get release v1 (no analysis) and reach
     REPLICAS Ready pods;
  2. CANARIES models get v2 at once: 3 steps (weights STEP_WEIGHTS), each analysed
     by the same query (the error ratio of the release's pods); every FAIL_EVERY-th
     serves ERROR_RATIO errors (the exporter) and must roll back;
  3. SOAK seconds of repeated releases on the canary models (0: none), RSS sampled;
  4. QUIESCENT more models at one release each (1 replica, no GPU), then SETTLE
     seconds: RSS with MODELS + QUIESCENT objects. Argo's come to rest by its own
     path (a Rollout with no steps). Lockstep's, with QUIESCENT_PATH=recognized (the
     default), as an existing fleet's would after its release objects were
     re-applied: each model's Model records prod's content (the status Lockstep
     wrote for the first of them, names changed, written by the harness), the
     release with that content is recognised as prod and the operator's prod
     healing makes its Deployment and Service (Lockstep at rest without 10,000
     canaries: at ~0.5 models/s on 2 workers those alone took hours);
     QUIESCENT_PATH=promoted: a canary each.

Measured, the same way for both (nothing read from a controller's own metrics):
  - API requests: the API server's audit log (only the two controllers' service
    accounts are logged, at Metadata level): requests per minute from the
    controller's start to the end of step 2, by verb and resource. The API
    server's apiserver_request_total has no user-agent label (its cardinality),
    so its per-client split comes from the audit log; the total delta of
    apiserver_request_total over the same window is recorded beside it.
  - CPU seconds (utime+stime, /proc) and peak RSS (VmHWM) of the controller
    process at the end of step 2; RSS (VmRSS) after step 4.
  - Step latency: from the analysis measurement that ended a step (its response
    leaving the timing proxy in front of Prometheus, which both controllers
    query) to the next weight's pods Ready (a pod watch: Ready and not
    terminating). Rollback latency: from the first failing measurement to
    REPLICAS Ready pods of the previous release and none of the failing one.

    bench/promotion.sh                     # full size (below): hours on 2 cores with 10,000 objects
    QUIESCENT=300 bench/promotion.sh       # the recorded run (docs/benchmarks.md), ~40 min
    bench/promotion.sh --smoke             # CI's benchmark smoke: 100 nodes, 20 models, 5 canaries

Environment (full size / smoke): NODES (1000 / 100), MODELS (200 / 20),
CANARIES (50 / 5), REPLICAS (4), QUIESCENT (9800 / 10: objects in step 4 on top
of MODELS), QUIESCENT_PATH (recognized), QUIESCENT_DEADLINE (0: wait up to TIMEOUT;
else the RSS is taken then, with the models at rest by then, counted), SOAK (0 / 0 seconds), SOAK_KEEP (2: Lockstep's superseded
releases kept per model in the soak, older ones deleted; Argo keeps revisionHistoryLimit 2), SETTLE (60 / 2), CONTROLLERS ("argo lockstep"),
TOGETHER (0 / 1: both controllers at once, each in its namespace), PERF (1: perf
record of lockstep-operator until the canaries end, in the work dir; KEEP_WORK=1),
FAIL_EVERY (5), ERROR_RATIO (0.3), ARGO_CAPACITY (default: the Rollout's own maxSurge and
maxUnavailable, 25 % each, so a 4-pod Rollout may be one pod short while it moves; surge:
maxSurge 1, maxUnavailable 0, Lockstep's default capacity rule, never fewer than REPLICAS
Ready: the same work pod for pod), SCRAPE (2s / 1s), WINDOW (10s / 3s),
INITIAL_DELAY (12s / 4s), INTERVAL (2s / 1s), COUNT (3 / 2), WARMUP (3s / 1s),
TIMEOUT (1800 / 240 s per wait), BUILD (build), OPERATOR (another lockstep-operator
binary, for a before/after), LOCKSTEP_ARGS (extra operator flags: a diagnosis, not
the defaults), BENCH_CLUSTER_DIR (a cluster dir
of one's own; it is started with the audit log and taken down at the end unless
KEEP_CLUSTER=1), SKIP_BUILD=1, RECORD (1 / 0: write bench/results and
docs/benchmarks.md). The smoke fails (exit 1) when a canary does not end as
planned (promoted, or rolled back for the failing ones) or a measure is missing.
"""
import concurrent.futures
import datetime
import hashlib
import http.client
import http.server
import json
import os
import platform
import re
import shlex
import socketserver
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMOKE = "--smoke" in sys.argv[1:]
ENV = os.environ


def knob(name, full, smoke, conv=str):
    return conv(ENV.get(name, smoke if SMOKE else full))


NODES = knob("NODES", "1000", "100", int)
MODELS = knob("MODELS", "200", "20", int)
CANARIES = knob("CANARIES", "50", "5", int)
REPLICAS = knob("REPLICAS", "4", "4", int)
QUIESCENT = knob("QUIESCENT", "9800", "10", int)
SOAK = knob("SOAK", "0", "0", int)
SOAK_KEEP = knob("SOAK_KEEP", "2", "2", int)
SETTLE = knob("SETTLE", "60", "2", int)
# How Lockstep's quiescent models come to rest: "recognized" (the Model of each
# records prod's content, as an existing fleet's would, and a release object with
# that content is recognised as prod, its Deployment and Service made by the
# operator's healing; docs/benchmarks.md) or "promoted" (each one's own canary).
QUIESCENT_PATH = knob("QUIESCENT_PATH", "recognized", "recognized")
QUIESCENT_DEADLINE = knob("QUIESCENT_DEADLINE", "0", "0", int)
CONTROLLERS = knob("CONTROLLERS", "argo lockstep", "argo lockstep").split()
FAIL_EVERY = knob("FAIL_EVERY", "5", "5", int)
ERROR_RATIO = knob("ERROR_RATIO", "0.3", "0.3", float)
SCRAPE = knob("SCRAPE", "2s", "1s")
WINDOW = knob("WINDOW", "10s", "3s")
INITIAL_DELAY = knob("INITIAL_DELAY", "12s", "4s")
INTERVAL = knob("INTERVAL", "2s", "1s")
COUNT = knob("COUNT", "3", "2", int)
WARMUP = knob("WARMUP", "3s", "1s")
TIMEOUT = knob("TIMEOUT", "1800", "240", int)
RECORD = knob("RECORD", "1", "0") == "1"
TOGETHER = knob("TOGETHER", "0", "1") == "1"
ARGO_CAPACITY = ENV.get("ARGO_CAPACITY", "default")
if ARGO_CAPACITY not in ("default", "surge"):
    sys.exit(f"promotion: ARGO_CAPACITY must be default or surge, not {ARGO_CAPACITY!r}")
PERF = ENV.get("PERF") == "1"
MAX_ERROR = 0.05
STEP_WEIGHTS = [25, 50, 100]
BUILD = ENV.get("BUILD", os.path.join(ROOT, "build"))
OPERATOR = ENV.get("OPERATOR", os.path.join(BUILD, "cmd/lockstep-operator"))
LOCKSTEP_ARGS = ENV.get("LOCKSTEP_ARGS", "")
SYS_NS = "bench-sys"
IMAGE = "registry.example/runtimes/torch@sha256:" + "a" * 64
AUDIT_USERS = {"argo": f"system:serviceaccount:{SYS_NS}:argo-rollouts",
               "lockstep": f"system:serviceaccount:{SYS_NS}:lockstep"}


T0 = time.monotonic()


def log(*a):
    print(f"promotion: [{time.monotonic() - T0:.0f}s]", *a, file=sys.stderr, flush=True)


def sh(cmd, check=True, **kw):
    r = subprocess.run(cmd, text=True, capture_output=True, **kw)
    if check and r.returncode != 0:
        raise SystemExit(f"promotion: {' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r


def seconds(d):
    m = re.fullmatch(r"(\d+)(ms|s|m)", d)
    return int(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(2)]


def pct(xs, p):
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100 * len(xs) + 0.5)) - 1))
    return xs[k]


def target_pods(weight):
    """Canary pods at a weight: Argo's basic-canary rule (Lockstep's replica math) for REPLICAS."""
    if weight >= 100:
        return REPLICAS
    return max(1, min(REPLICAS - 1, round(REPLICAS * weight / 100)))


def proc_stat(pid):
    """(CPU seconds, VmRSS MiB, VmHWM MiB) of one process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        rss = hwm = None
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) / 1024
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) / 1024
        return cpu, rss, hwm
    except (OSError, ValueError, IndexError):
        return None, None, None


# ---- the cluster and its tools ------------------------------------------------------------


class Cluster:
    def __init__(self, work):
        self.dir = ENV.get("BENCH_CLUSTER_DIR") or os.path.join(work, "cluster")
        self.audit = os.path.join(self.dir + "-audit", "audit.log")
        os.makedirs(os.path.dirname(self.audit), exist_ok=True)
        policy = os.path.join(os.path.dirname(self.audit), "policy.yaml")
        with open(policy, "w") as f:
            f.write("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n"
                    f"- level: Metadata\n  users: {json.dumps(sorted(AUDIT_USERS.values()))}\n"
                    "- level: None\n")
        script = os.path.join(ROOT, "tests/cluster/cluster.sh")
        if sh([script, "status", "--dir", self.dir], check=False).returncode == 0:
            raise SystemExit(f"promotion: a cluster is already up in {self.dir}; the benchmark starts its own "
                             "(with the audit log): take it down or name another BENCH_CLUSTER_DIR")
        log("starting a cluster in", self.dir)
        env = dict(ENV, LOCKSTEP_APISERVER_EXTRA_ARGS=(
            f"--audit-policy-file={policy} --audit-log-path={self.audit} --audit-log-format=json "
            "--audit-log-maxsize=2000 --audit-log-mode=batch "
            # A Service per Lockstep model: tests/cluster/cluster.sh's /24 is full at ~250.
            "--service-cluster-ip-range=10.0.0.0/16"))
        sh([script, "up", "--dir", self.dir, "--warmup", WARMUP], env=env)
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.tools = open(os.path.join(self.dir, "tools-bin")).read().strip()
        self.env = dict(ENV, KUBECONFIG=self.kubeconfig)

    def kubectl(self, *args, stdin=None, check=True):
        return sh([os.path.join(self.tools, "kubectl"), *args], check=check, input=stdin, env=self.env)

    def apply(self, objs, server_side=False):
        """Applies objects in chunks (one kubectl per 200)."""
        for i in range(0, len(objs), 200):
            extra = ["--server-side", "--force-conflicts"] if server_side else []
            self.kubectl("apply", *extra, "-f", "-",
                         stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs[i:i + 200]}))

    def bulk(self, method, items, threads=8):
        """`method` ("POST" or "PATCH") of (path, body) pairs, `threads` at once, through a
        kubectl proxy on the loopback: kubectl apply creates some 4 objects a second on a
        loaded machine, too slow for 10,000. A conflict or a server error is retried."""
        port = free_port()
        proxy = subprocess.Popen([os.path.join(self.tools, "kubectl"), "proxy", f"--port={port}",
                                  "--address=127.0.0.1"], env=self.env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        try:
            def up():
                try:
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                    c.request("GET", "/version")
                    return c.getresponse().status == 200
                except OSError:
                    return False
            wait_for("kubectl proxy", up, 30)
            local = threading.local()

            def send(item):
                path, body = item
                data = json.dumps(body).encode()
                ctype = "application/merge-patch+json" if method == "PATCH" else "application/json"
                last = "no answer"
                for _ in range(10):
                    if getattr(local, "conn", None) is None:
                        local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                    try:
                        local.conn.request(method, path, body=data, headers={"Content-Type": ctype})
                        r = local.conn.getresponse()
                        r.read()
                    except (OSError, http.client.HTTPException) as e:
                        local.conn, last = None, str(e)
                        time.sleep(1)
                        continue
                    if r.status in (200, 201) or (method == "POST" and r.status == 409):
                        return
                    last = f"HTTP {r.status}"
                    time.sleep(1)
                raise SystemExit(f"promotion: {method} {path}: {last}")
            with concurrent.futures.ThreadPoolExecutor(threads) as pool:
                list(pool.map(send, items))
        finally:
            proxy.terminate()
            proxy.wait()

    def create(self, objs):
        """Creates namespaced objects of the bench's kinds through bulk()."""
        plural = {"Rollout": "rollouts", "ModelRelease": "modelreleases", "Model": "models"}
        self.bulk("POST", [(f"/apis/{o['apiVersion']}/namespaces/{o['metadata']['namespace']}/"
                            f"{plural[o['kind']]}", o) for o in objs])

    def down(self):
        if ENV.get("KEEP_CLUSTER") != "1":
            sh([os.path.join(ROOT, "tests/cluster/cluster.sh"), "down", "--dir", self.dir], check=False)
            if ENV.get("KEEP_WORK") != "1":  # kept: the audit log, for a diagnosis
                sh(["rm", "-rf", os.path.dirname(self.audit)], check=False)

    def request_total(self):
        """Sum of apiserver_request_total over every label set."""
        text = self.kubectl("get", "--raw", "/metrics").stdout
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("apiserver_request_total{"))


def gpu_nodes(n):
    """KWOK GPU nodes (8 GPUs, driver 570: compatible with the bench's CUDA 12 runtime)."""
    return [{"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": f"bench-gpu-{i}", "annotations": {"kwok.x-k8s.io/node": "fake"},
                          "labels": {"type": "kwok", "kubernetes.io/hostname": f"bench-gpu-{i}",
                                     "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                                     "lockstep.dev/test-pool": "bench-gpu",
                                     "nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "8",
                                     "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                                     "nvidia.com/cuda.driver.major": "570",
                                     "nvidia.com/cuda.driver.minor": "124",
                                     "nvidia.com/cuda.driver.rev": "06",
                                     "nvidia.com/cuda.runtime.major": "12",
                                     "nvidia.com/cuda.runtime.minor": "8"}},
             "status": {"capacity": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"},
                        "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110",
                                        "nvidia.com/gpu": "8"}}} for i in range(n)]


def wait_for(what, fn, timeout, every=0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(every)
    raise SystemExit(f"promotion: timed out after {timeout}s waiting for {what}")


# ---- what both controllers are measured by ------------------------------------------------


class PodWatch:
    """A watch of every serving pod (label lockstep.dev/release): a line per change, stamped on arrival.

    serving(ns, release) is the number of pods Ready and not terminating now; the event log
    replays it at any time for the latencies."""

    def __init__(self, cluster, logpath):
        cols = ("E:.type,NS:.object.metadata.namespace,NAME:.object.metadata.name,"
                r"REL:.object.metadata.labels.lockstep\.dev/release,"
                'READY:.object.status.conditions[?(@.type=="Ready")].status,'
                "DEL:.object.metadata.deletionTimestamp")
        self.cmd = [os.path.join(cluster.tools, "kubectl"), "get", "pods", "-A", "-l", "lockstep.dev/release",
                    "--watch", "--output-watch-events", "--no-headers", "-o", "custom-columns=" + cols]
        self.env, self.logpath = cluster.env, logpath
        self.lock = threading.Lock()
        self.stopped = False
        self.proc = None
        self.pods = {}      # (ns, pod) -> (release, serving)
        self.count = {}     # (ns, release) -> serving pods now
        self.events = []    # (t, ns, release, serving count after the change)
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        # The API server ends a watch after a while (kubectl then exits 0): watch again. The
        # new watch lists every pod first (ADDED); a pod that went meanwhile is dropped then.
        while not self.stopped:
            self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=open(self.logpath, "a"),
                                         text=True, env=self.env)
            self._read(self.proc.stdout)
            self.proc.wait()

    def _read(self, stream):
        seen, listing, last = set(), True, time.time()
        for line in stream:
            t = time.time()
            f = line.split()
            if len(f) < 6:
                continue
            ev, ns, pod, rel, ready, dele = f[:6]
            if listing and ev != "ADDED" or t - last > 1.0:
                if listing:  # the first list is over: drop what it did not name
                    self._forget([k for k in self.pods if k not in seen], t)
                listing = False
            last = t
            if listing:
                seen.add((ns, pod))
            serving = ev != "DELETED" and ready == "True" and dele == "<none>"
            with self.lock:
                old = self.pods.get((ns, pod))
                if ev == "DELETED":
                    self.pods.pop((ns, pod), None)
                else:
                    self.pods[(ns, pod)] = (rel, serving)
                changed = {}
                if old and old[1]:
                    changed[old[0]] = -1
                if serving:
                    changed[rel] = changed.get(rel, 0) + 1
                self._apply(ns, changed, t)

    def _apply(self, ns, changed, t):
        for r, d in changed.items():
            if d:
                c = self.count.get((ns, r), 0) + d
                self.count[(ns, r)] = c
                self.events.append((t, ns, r, c))

    def _forget(self, keys, t):
        with self.lock:
            for ns, pod in keys:
                rel, serving = self.pods.pop((ns, pod))
                if serving:
                    self._apply(ns, {rel: -1}, t)

    def serving(self, ns, release):
        with self.lock:
            return self.count.get((ns, release), 0)

    def first(self, ns, pred, after):
        """First time >= after at which pred(count function) holds, replaying the log."""
        with self.lock:
            evs = list(self.events)
        counts = {}
        for t, n, r, c in evs:
            if n != ns:
                continue
            counts[r] = c
            if t >= after and pred(lambda rel: counts.get(rel, 0)):
                return t
        return None

    def stop(self):
        self.stopped = True
        if self.proc:
            self.proc.terminate()


class PromProxy:
    """A timing proxy in front of Prometheus: both controllers' analyses query through it.

    Every /api/v1/query is logged with the time its response left (ms), the release its
    query names, and its value (None: an empty vector, NaN or an error: a measurement error
    for both controllers)."""

    def __init__(self, upstream):
        u = urllib.parse.urlparse(upstream)
        self.host, self.port_up = u.hostname, u.port
        self.lock = threading.Lock()
        self.log = []   # (t_done, namespace, release, value)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _forward(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                c = http.client.HTTPConnection(proxy.host, proxy.port_up, timeout=30)
                hdrs = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "accept")}
                c.request(self.command, self.path, body=body, headers=hdrs)
                r = c.getresponse()
                data = r.read()
                self.send_response(r.status)
                self.send_header("Content-Type", r.getheader("Content-Type") or "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                t = time.time()
                if self.path.startswith("/api/v1/query"):
                    q = urllib.parse.urlparse(self.path).query
                    if body:
                        q += "&" + body.decode("utf-8", "replace")
                    text = " ".join(urllib.parse.parse_qs(q).get("query", [""]))
                    rel = re.search(r'release="([^"]+)"', text)
                    ns = re.search(r'namespace="([^"]+)"', text)
                    val = None
                    try:
                        res = json.loads(data)["data"]["result"]
                        if res:
                            v = float(res[0]["value"][1])
                            val = None if v != v else v
                    except (ValueError, KeyError, IndexError, TypeError):
                        pass
                    with proxy.lock:
                        proxy.log.append((t, ns.group(1) if ns else "", rel.group(1) if rel else "", val))

            do_GET = _forward
            do_POST = _forward

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def measurements(self, ns, release):
        with self.lock:
            return [(t, v) for t, n, r, v in self.log if n == ns and r == release]


# ---- the two controllers' objects ------------------------------------------------------------


def error_query(ns, release):
    sel = f'namespace="{ns}",release="{release}"'
    return (f'(sum(rate(lockstep_test_requests_total{{{sel},code="500"}}[{WINDOW}])) or vector(0)) / '
            f'sum(rate(lockstep_test_requests_total{{{sel}}}[{WINDOW}]))')


def serve_container(gpus=1):
    c = {"name": "serve", "image": IMAGE, "ports": [{"containerPort": 8080}]}
    if gpus:
        c["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return c


class Argo:
    name = "argo"
    user_agent_hint = "rollouts-controller"

    def __init__(self, cluster, work, ns, proxy_url, moddir, bindir):
        self.c, self.work, self.ns, self.moddir, self.bindir = cluster, work, ns, moddir, bindir
        self.proxy_url = proxy_url

    def install(self):
        crds = os.path.join(self.moddir, "manifests/crds")
        for f in sorted(os.listdir(crds)):
            if f.endswith("-crd.yaml"):
                self.c.kubectl("apply", "--server-side", "-f", os.path.join(crds, f))
        wait_for("Argo Rollouts' CRDs established", lambda: self.c.kubectl(
            "wait", "--for", "condition=Established", "crd/rollouts.argoproj.io", "crd/analysisruns.argoproj.io",
            "crd/analysistemplates.argoproj.io", "--timeout=10s", check=False).returncode == 0, 60)
        self.c.kubectl("apply", "-f", os.path.join(self.moddir, "manifests/role/argo-rollouts-clusterrole.yaml"))
        self.c.apply([{"apiVersion": "v1", "kind": "ServiceAccount",
                       "metadata": {"name": "argo-rollouts", "namespace": SYS_NS}},
                      {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                       "metadata": {"name": "bench-argo-rollouts"},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                   "name": "argo-rollouts"},
                       "subjects": [{"kind": "ServiceAccount", "name": "argo-rollouts",
                                     "namespace": SYS_NS}]}])

    def prepare(self):
        self.c.apply([{"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate",
                       "metadata": {"name": "error-ratio", "namespace": self.ns},
                       "spec": {"args": [{"name": "release"}], "metrics": [{
                           "name": "error-ratio", "interval": INTERVAL, "initialDelay": INITIAL_DELAY,
                           "count": COUNT, "failureLimit": 0,
                           "successCondition": f"result[0] <= {MAX_ERROR}",
                           "provider": {"prometheus": {
                               "address": self.proxy_url,
                               "query": error_query(self.ns, "{{args.release}}")}}}]}}])

    def start(self, procs, kubeconfig):
        ports = [free_port(), free_port()]
        return procs.start("rollouts-controller", [
            os.path.join(self.bindir, "rollouts-controller"), "--kubeconfig", kubeconfig,
            f"--metricsPort={ports[0]}", f"--healthzPort={ports[1]}"],
            self.work, env=dict(ENV, POD_NAMESPACE=SYS_NS))

    def objects(self, model, release, analysed, replicas, gpus=1):
        steps = []
        if analysed:
            for w in STEP_WEIGHTS:
                steps += [{"setWeight": w},
                          {"analysis": {"templates": [{"templateName": "error-ratio"}],
                                        "args": [{"name": "release", "value": release}]}}]
        labels = {"lockstep.dev/model": model, "lockstep.dev/release": release,
                  "lockstep.dev/track": "rollout"}
        canary = {"steps": steps}
        if ARGO_CAPACITY == "surge":  # Lockstep's surge rule: never fewer than REPLICAS Ready
            canary.update(maxSurge=1, maxUnavailable=0)
        return [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                 "metadata": {"name": model, "namespace": self.ns},
                 "spec": {"replicas": replicas, "revisionHistoryLimit": 2,
                          "selector": {"matchLabels": {"lockstep.dev/model": model}},
                          "template": {"metadata": {"labels": labels},
                                       "spec": {"containers": [serve_container(gpus)]}},
                          "strategy": {"canary": canary}}}]

    def outcomes(self):
        """{release: 'promoted' | 'rolledback' | None (still going)} as the controller reports it."""
        out = {}
        for r in json.loads(self.c.kubectl("get", "rollouts", "-n", self.ns, "-o", "json").stdout)["items"]:
            st = r.get("status", {})
            rel = r["spec"]["template"]["metadata"]["labels"]["lockstep.dev/release"]
            if st.get("abort"):
                out[rel] = "rolledback"
            elif st.get("phase") == "Healthy" and st.get("stableRS") and \
                    st.get("stableRS") == st.get("currentPodHash"):
                out[rel] = "promoted"
            else:
                out[rel] = None
        return out


class Lockstep:
    name = "lockstep"

    def __init__(self, cluster, work, ns, proxy_url):
        self.c, self.work, self.ns, self.proxy_url = cluster, work, ns, proxy_url
        self.hash = None

    def install(self):
        self.c.kubectl("apply", "-f", os.path.join(ROOT, "crds"))
        wait_for("Lockstep's CRDs established", lambda: self.c.kubectl(
            "wait", "--for", "condition=Established", "crd/modelreleases.lockstep.dev", "crd/runtimeenvs.lockstep.dev",
            "crd/analysisproviders.lockstep.dev", "--timeout=10s", check=False).returncode == 0, 60)
        image = ["--set", "image.repository=registry.example/lockstep/operator",
                 "--set", "image.digest=sha256:" + "0" * 64]
        rbac = sh([os.path.join(self.c.tools, "helm"), "template", "lockstep", os.path.join(ROOT, "helm/lockstep"),
                   "-n", SYS_NS, *image, "--show-only", "templates/serviceaccount.yaml",
                   "--show-only", "templates/rbac.yaml"], env=self.c.env).stdout
        self.c.kubectl("apply", "-n", SYS_NS, "-f", "-", stdin=rbac)
        self.c.apply([{"apiVersion": "lockstep.dev/v1alpha1", "kind": "AnalysisProvider",
                       "metadata": {"name": "bench-prometheus"},
                       "spec": {"address": self.proxy_url, "allowInsecureHttp": True, "timeout": "5s",
                                "allowFreeFormQueries": True,
                                "namespaceSelector": {"matchLabels": {
                                    "kubernetes.io/metadata.name": self.ns}}}}])

    def prepare(self):
        lock = open(os.path.join(ROOT, "tests/closure/testdata/lockfiles/pip",
                                 "torch-2.1-cu12-tensorflow-sigstore-model-transparency.requirements.txt")).read()
        self.c.apply([{"apiVersion": "lockstep.dev/v1alpha1", "kind": "RuntimeEnv",
                       "metadata": {"name": "torch", "namespace": self.ns},
                       "spec": {"lock": {"inline": lock, "format": "pip"}, "image": IMAGE}}])

    def start(self, procs, kubeconfig):
        p = procs.start("lockstep-operator", [
            OPERATOR, "--kubeconfig", kubeconfig, "--namespace", SYS_NS,
            "--bind-address", "127.0.0.1", "--webhook-port", "0", "--metrics-port", "0", "--health-port", "0",
            "--webhook-ip", "127.0.0.1", "--leader-elect=true", "--admission-mode=policy",
            "--log-format=json", "--log-level=info", *shlex.split(LOCKSTEP_ARGS)], self.work)
        self.c.kubectl("wait", "--for=condition=Ready", "rte/torch", "-n", self.ns, "--timeout=120s")
        self.hash = self.c.kubectl("get", "rte/torch", "-n", self.ns,
                                   "-o", "jsonpath={.status.closureHash}").stdout.strip()
        return p

    def objects(self, model, release, analysed, replicas, gpus=1, digest=None):
        steps = [{"weight": 100}]
        if analysed:
            steps = [{"weight": w, "analysis": {"prometheus": {
                "provider": "bench-prometheus", "query": error_query(self.ns, release), "max": MAX_ERROR,
                "interval": INTERVAL, "initialDelay": INITIAL_DELAY, "count": COUNT}}} for w in STEP_WEIGHTS]
        digest = digest or hashlib.sha256(release.encode()).hexdigest()
        limits = {"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}} if gpus else {}
        return [{"apiVersion": "lockstep.dev/v1alpha1", "kind": "ModelRelease",
                 "metadata": {"name": release, "namespace": self.ns},
                 "spec": {"model": model, "package": f"registry.example/models/{model}@sha256:{digest}",
                          "runtimeEnvRef": {"name": "torch"}, "closureHash": self.hash,
                          "stages": [{"name": "prod",
                                      "serving": {"template": {"spec": {"containers": [{
                                          "name": "serve", "ports": [{"containerPort": 8080}],
                                          **limits}]}},
                                          "replicas": replicas, "port": 8080},
                                      "canary": {"steps": steps}}]}}]

    def at_rest(self, models, watch):
        """The quiescent models at rest without a canary each (QUIESCENT_PATH=recognized).

        The first is promoted by its own canary; its Model's status (the record of
        the content prod runs) is then written, names changed, on a Model per other
        model, as an existing fleet's Models would say, and each model's release is
        created with that very content (the same package digest, stages and runtime
        pair). The operator recognises each as prod (docs/rollouts.md, "Content
        identity": it writes the Model's record and the release's status) and its
        prod healing creates the stable Deployment and the Service, as for a model
        whose serving objects were deleted. 1 replica, no GPU."""
        first, rest = models[0], models[1:]
        digest = "b" * 64
        self.c.apply(self.objects(first, f"{first}-v1", False, 1, gpus=0, digest=digest))
        wait_for(f"{first}-v1 promoted", lambda: self.outcomes().get(f"{first}-v1") == "promoted" and
                 watch.serving(self.ns, f"{first}-v1") >= 1, TIMEOUT)
        tmpl = json.loads(self.c.kubectl("get", "models.lockstep.dev", first, "-n", self.ns,
                                         "-o", "json").stdout)
        status = tmpl["status"]
        status["prod"]["uid"] = "bench-an-earlier-object"  # the release object is re-created
        text = json.dumps(status)
        meta = json.dumps(tmpl["metadata"].get("labels", {}))
        self.c.create([{"apiVersion": "lockstep.dev/v1alpha1", "kind": "Model",
                        "metadata": {"name": m, "namespace": self.ns,
                                     "labels": json.loads(meta.replace(first, m))},
                        "spec": tmpl.get("spec", {})} for m in rest])
        self.c.bulk("PATCH", [(f"/apis/lockstep.dev/v1alpha1/namespaces/{self.ns}/models/{m}/status",
                               {"status": json.loads(text.replace(first, m))}) for m in rest])
        log(f"lockstep: {len(rest)} Models record prod's content; creating their releases")
        self.c.create([o for m in rest for o in self.objects(m, f"{m}-v1", False, 1, gpus=0, digest=digest)])

    def prune(self, releases):
        """Superseded release objects deleted (the soak's bounded history)."""
        self.c.kubectl("delete", "mr", "-n", self.ns, "--wait=false", "--ignore-not-found", *releases)

    def outcomes(self):
        phases = {"Promoted": "promoted", "RolledBack": "rolledback"}
        return {mr["metadata"]["name"]: phases.get(mr.get("status", {}).get("phase"))
                for mr in json.loads(self.c.kubectl("get", "mr", "-n", self.ns, "-o", "json").stdout)["items"]}


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Procs:
    def __init__(self):
        self.procs = []

    def start(self, name, cmd, logdir, env=None):
        p = subprocess.Popen(cmd, stdout=open(os.path.join(logdir, name + ".log"), "w"),
                             stderr=subprocess.STDOUT, env=env)
        self.procs.append(p)
        return p

    def stop(self, p):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()

    def stop_all(self):
        for p in self.procs:
            self.stop(p)


def token_kubeconfig(c, sa, path):
    token = c.kubectl("create", "token", sa, "-n", SYS_NS, "--duration=24h").stdout.strip()
    server = c.kubectl("config", "view", "--raw", "-o", "jsonpath={.clusters[0].cluster.server}").stdout
    ca = c.kubectl("config", "view", "--raw", "-o",
                   "jsonpath={.clusters[0].cluster.certificate-authority-data}").stdout
    with open(path, "w") as f:
        f.write(f"apiVersion: v1\nkind: Config\nclusters: [{{name: local, cluster: {{server: {server}, "
                f"certificate-authority-data: {ca}}}}}]\nusers: [{{name: {sa}, user: {{token: {token}}}}}]\n"
                f"contexts: [{{name: local, context: {{cluster: local, user: {sa}}}}}]\ncurrent-context: local\n")
    os.chmod(path, 0o600)
    return path


def audit_counts(path, user, t0, t1):
    """Requests of one user received in [t0, t1): total and by 'verb resource[/subresource]'."""
    seen, by = set(), {}
    agents = set()
    if not os.path.exists(path):
        return None
    with open(path) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("user", {}).get("username") != user or e["auditID"] in seen:
                continue
            ts = datetime.datetime.fromisoformat(e["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()
            if not t0 <= ts < t1:
                continue
            seen.add(e["auditID"])
            agents.add(e.get("userAgent", "").split(" ")[0])
            o = e.get("objectRef", {})
            key = f"{e['verb']} {o.get('resource', e.get('requestURI', '?'))}" + (
                f"/{o['subresource']}" if o.get("subresource") else "")
            by[key] = by.get(key, 0) + 1
    return {"total": len(seen), "by": dict(sorted(by.items(), key=lambda kv: -kv[1])),
            "user_agents": sorted(agents)}


# ---- one controller's turn ------------------------------------------------------------------


def run_controller(ctl, c, procs, watch, proxy, prom_dir, kubeconfig, last):
    ns = ctl.ns
    res = {"controller": ctl.name}
    c.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}])
    ctl.prepare()
    models = [f"m{i:04d}" for i in range(MODELS)]
    canaries = models[:CANARIES]
    failing = {m for i, m in enumerate(canaries) if FAIL_EVERY and i % FAIL_EVERY == FAIL_EVERY - 1}
    for m in canaries:
        rate = ERROR_RATIO if m in failing else 0
        sh([os.path.join(ROOT, "tests/cluster/prometheus.sh"), "rate", "--dir", prom_dir, f"{m}-v2", str(rate)])

    req0 = c.request_total()
    t_start = time.time()
    p = ctl.start(procs, kubeconfig)
    perf = None
    if PERF and ctl.name == "lockstep":  # where its CPU goes (99 Hz, call graphs), until the canaries end
        perf = subprocess.Popen(["perf", "record", "-F", "99", "--call-graph", "dwarf,16384", "-p", str(p.pid), "-o",
                                 os.path.join(ctl.work, "perf-lockstep.data")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log(f"{ctl.name}: started (pid {p.pid}); {MODELS} models at v1")
    objs = [o for m in models for o in ctl.objects(m, f"{m}-v1", False, REPLICAS)]
    c.apply(objs)
    # Ready pods first (cheap), then every v1 promoted as its controller says: a v2 that came
    # while v1 was still being promoted would have no known-good to roll back to.
    wait_for(f"{ctl.name}: {MODELS} models with {REPLICAS} Ready v1 pods",
             lambda: all(watch.serving(ns, f"{m}-v1") >= REPLICAS for m in models), TIMEOUT)
    wait_for(f"{ctl.name}: {MODELS} models promoted to v1",
             lambda: all(o.get(f"{m}-v1") == "promoted" for o in [ctl.outcomes()] for m in models), TIMEOUT)
    res["initial_s"] = time.time() - t_start
    log(f"{ctl.name}: v1 Ready in {res['initial_s']:.1f} s; {CANARIES} canaries ({len(failing)} failing)")

    t_canary = time.time()
    c.apply([o for m in canaries for o in ctl.objects(m, f"{m}-v2", True, REPLICAS)])

    def done(m):
        old, new = f"{m}-v1", f"{m}-v2"
        if m in failing:
            return watch.serving(ns, old) >= REPLICAS and watch.serving(ns, new) == 0 and any(
                v is not None and v > MAX_ERROR for _, v in proxy.measurements(ns, new))
        return watch.serving(ns, new) >= REPLICAS and watch.serving(ns, old) == 0

    def all_done():
        if not all(done(m) for m in canaries):
            return False
        o = ctl.outcomes()
        return all(o.get(f"{m}-v2") == ("rolledback" if m in failing else "promoted") for m in canaries)

    wait_for(f"{ctl.name}: {CANARIES} canaries promoted or rolled back", all_done, TIMEOUT)
    t_end = time.time()
    cpu, rss, hwm = proc_stat(p.pid)
    if perf:
        perf.send_signal(2)
        perf.wait(timeout=60)
    req1 = c.request_total()
    res.update({"canary_s": t_end - t_canary, "window_s": t_end - t_start, "cpu_s": cpu,
                "peak_rss_mib": hwm, "rss_end_mib": rss,
                "apiserver_request_total_delta": req1 - req0})
    log(f"{ctl.name}: canaries done in {res['canary_s']:.1f} s; CPU {cpu:.1f} s, peak RSS {hwm:.1f} MiB")

    # Latencies from the proxy's measurements and the pod watch.
    steps, rollbacks, problems = [], [], []
    for m in canaries:
        old, new = f"{m}-v1", f"{m}-v2"
        ms = proxy.measurements(ns, new)
        valid = [(t, v) for t, v in ms if v is not None]
        if m in failing:
            bad = [t for t, v in valid if v > MAX_ERROR]
            if not bad:
                problems.append(f"{m}: no failing measurement")
                continue
            t_done = watch.first(ns, lambda n: n(old) >= REPLICAS and n(new) == 0, bad[0])
            if t_done is None:
                problems.append(f"{m}: rollback end not seen")
                continue
            rollbacks.append(t_done - bad[0])
            continue
        if len(valid) < COUNT * len(STEP_WEIGHTS):
            problems.append(f"{m}: {len(valid)} measurements, expected {COUNT * len(STEP_WEIGHTS)}")
        for k in range(len(STEP_WEIGHTS) - 1):
            if len(valid) < COUNT * (k + 1):
                break
            t_pause_end = valid[COUNT * (k + 1) - 1][0]
            want = target_pods(STEP_WEIGHTS[k + 1])
            t_ready = watch.first(ns, lambda n: n(new) >= want, t_pause_end)
            if t_ready is None:
                problems.append(f"{m}: step {k + 1} weight not seen Ready")
                continue
            steps.append(t_ready - t_pause_end)
    res["measurements"] = {m: proxy.measurements(ns, f"{m}-v2") for m in canaries}
    res.update({"step_latency_s": steps, "rollback_latency_s": rollbacks, "problems": problems,
                "measurement_errors": sum(1 for m in canaries for _, v in proxy.measurements(ns, f"{m}-v2")
                                          if v is None)})

    if SOAK > 0:
        res["soak"] = soak(ctl, c, watch, p, canaries, failing)

    if QUIESCENT > 0:
        more = [f"q{i:05d}" for i in range(QUIESCENT)]
        t_q = time.time()
        if ctl.name == "lockstep" and QUIESCENT_PATH == "recognized":
            ctl.at_rest(more, watch)
        else:
            c.create([o for m in more for o in ctl.objects(m, f"{m}-v1", False, 1, gpus=0)])
        # Past QUIESCENT_DEADLINE seconds (0: none) the RSS is taken with the models at rest
        # by then, and the figure says how many (a partial figure, never passed off as whole).
        deadline = time.time() + (QUIESCENT_DEADLINE or TIMEOUT)
        while True:
            serving = sum(1 for m in more if watch.serving(ns, f"{m}-v1") >= 1)
            if serving == len(more):
                o = ctl.outcomes()
                at_rest = sum(1 for m in more if o.get(f"{m}-v1") == "promoted")
                if at_rest == len(more):
                    break
            else:
                at_rest = serving
            if time.time() > deadline:
                if not QUIESCENT_DEADLINE:
                    raise SystemExit(f"promotion: timed out after {TIMEOUT}s waiting for {ctl.name}'s "
                                     f"{QUIESCENT} more models at rest ({at_rest} were)")
                break
            time.sleep(10)
        res["quiescent_s"] = time.time() - t_q
        res["quiescent_at_rest"] = at_rest
        log(f"{ctl.name}: {at_rest} of {QUIESCENT} more models at rest (Ready) after {res['quiescent_s']:.0f} s")
        time.sleep(SETTLE)
        cpu_q, rss_q, hwm_q = proc_stat(p.pid)
        time.sleep(10)
        cpu_q2, _, _ = proc_stat(p.pid)
        res.update({"quiescent_objects": MODELS + QUIESCENT, "rss_quiescent_mib": rss_q,
                    "peak_rss_quiescent_mib": hwm_q, "quiescent_path": QUIESCENT_PATH,
                    "idle_cpu_share_at_rest": (cpu_q2 - cpu_q) / 10,
                    "loadavg_at_rest": " ".join(open("/proc/loadavg").read().split()[:3])})
        log(f"{ctl.name}: RSS with {MODELS + QUIESCENT} objects {rss_q:.1f} MiB")

    t_stop = time.time()
    # The namespace goes while the controller runs: Lockstep's releases carry a finalizer
    # (rollback on delete) that only the operator removes.
    if not last:  # the last one's namespace goes with the cluster
        log(f"{ctl.name}: deleting namespace {ns}")
        c.kubectl("delete", "namespace", ns, "--wait=true", "--timeout=30m")
    procs.stop(p)
    time.sleep(2)  # the audit log's batch is flushed
    res["audit"] = audit_counts(c.audit, AUDIT_USERS[ctl.name], t_start, t_end)
    res["audit_all"] = audit_counts(c.audit, AUDIT_USERS[ctl.name], t_start, t_stop)
    if res["audit"]:
        res["requests_per_min"] = res["audit"]["total"] / (res["window_s"] / 60)
    log(f"{ctl.name}: {res.get('requests_per_min', 0):.0f} API requests/min")
    return res


def soak(ctl, c, watch, p, canaries, failing):
    """Repeated releases of the canary models (promoted ones only) for SOAK seconds; RSS samples."""
    samples, t0, gen = [], time.time(), 2
    good = [m for m in canaries if m not in failing]
    prev = {m: f"{m}-v2" for m in good}
    while time.time() - t0 < SOAK:
        gen += 1
        c.apply([o for m in good for o in ctl.objects(m, f"{m}-v{gen}", True, REPLICAS)])
        # A round ends when each controller says its release is promoted (Argo: Healthy on the
        # new stable ReplicaSet; Lockstep: phase Promoted) and the pods agree: pods alone turn
        # Ready on Lockstep's canary Deployment before its stable one takes the release over,
        # and a round that starts then supersedes a release mid-handover instead of after it.
        def round_done():
            if not all(watch.serving(ctl.ns, f"{m}-v{gen}") >= REPLICAS and
                       watch.serving(ctl.ns, prev[m]) == 0 for m in good):
                return False
            o = ctl.outcomes()
            return all(o.get(f"{m}-v{gen}") == "promoted" for m in good)
        wait_for("soak round", round_done, TIMEOUT)
        prev = {m: f"{m}-v{gen}" for m in good}
        # A bounded history on both sides: Argo's Rollouts keep revisionHistoryLimit (2) old
        # ReplicaSets; Lockstep's superseded release objects past the last SOAK_KEEP are
        # deleted, as a GitOps prune would (otherwise the soak measures a growing object
        # count, not a leak).
        if hasattr(ctl, "prune") and gen - SOAK_KEEP - 1 >= 2:
            ctl.prune([f"{m}-v{gen - SOAK_KEEP - 1}" for m in good])
        samples.append((time.time() - t0, proc_stat(p.pid)[1]))
        log(f"{ctl.name}: soak round {gen - 2} at {samples[-1][0]:.0f} s: RSS {samples[-1][1]:.1f} MiB")
    return {"rounds": gen - 2, "rss_samples": samples, "kept_releases": SOAK_KEEP}


# ---- results ------------------------------------------------------------------------------


def fmt(v, nd=1):
    return "-" if v is None else f"{v:,.{nd}f}"


def summarize(r):
    by = {x["controller"]: x for x in r["runs"]}
    a, l = by.get("argo"), by.get("lockstep")
    s = r["settings"]
    md = [f"Measured by `{r['command']}` on {r['date']}: {r['machine']}; load average "
          f"{r['loadavg_before']} before, {r['loadavg_after']} after. Kubernetes {r['versions']['kubernetes']}, "
          f"Argo Rollouts {r['versions']['argo-rollouts']} ({r['versions']['go']}), lockstep-operator "
          f"{r['versions']['lockstep']}. Raw numbers: `bench/results/{r['file']}`.\n",
          f"{s['nodes']:,} KWOK GPU nodes, {s['models']} models of {s['replicas']} pods (1 GPU each), "
          f"{s['canaries']} concurrent canaries of {len(STEP_WEIGHTS)} steps (weights "
          f"{'/'.join(map(str, s['step_weights']))}, each analysed: {s['count']} measurements {s['interval']} "
          f"apart after {s['initial_delay']}, error ratio over [{s['window']}] ≤ {MAX_ERROR}, Prometheus "
          f"scraping every {s['scrape']}), every {s['fail_every']}th failing ({s['error_ratio']:.0%} errors); "
          f"pods Ready {s['warmup']} after they start. " +
          ("Argo's Rollouts move at maxSurge 1, maxUnavailable 0, Lockstep's surge rule (`ARGO_CAPACITY=surge`). "
           if s.get("argo_capacity") == "surge" else "") +
          f"Then {s['quiescent_objects']:,} objects for memory. " +
          ("Both controllers ran at once (the smoke: these figures are not the comparison)"
           if s.get("together") else "The controllers take turns") +
          "; ratios are Lockstep / Argo (≤ 1.0 is the goal).\n",
          "| measure | Argo Rollouts | Lockstep | ratio |", "|---|---|---|---|"]

    def row(name, f, nd=1):
        va, vl = (f(a) if a else None), (f(l) if l else None)
        ratio = f"{vl / va:.2f}" if va and vl is not None else "-"
        md.append(f"| {name} | {fmt(va, nd)} | {fmt(vl, nd)} | {ratio} |")

    def p(key, q):
        return lambda x: pct(x[key], q) if x.get(key) else None

    row("API requests per minute (audit log, controller's start → last canary done)",
        lambda x: x.get("requests_per_min"), 0)
    row("API requests in that window (the same work for both)",
        lambda x: (x.get("audit") or {}).get("total"), 0)
    row("controller CPU seconds (same window)", lambda x: x.get("cpu_s"))
    row("controller peak RSS, MiB", lambda x: x.get("peak_rss_mib"))
    row("step latency p50, s", p("step_latency_s", 50), 2)
    row("step latency p99, s", p("step_latency_s", 99), 2)
    row("rollback latency p50, s", p("rollback_latency_s", 50), 2)
    row("rollback latency p99, s", p("rollback_latency_s", 99), 2)
    row(f"RSS at {s['quiescent_objects']:,} quiescent objects, MiB", lambda x: x.get("rss_quiescent_mib"))
    if any(x.get("soak") for x in r["runs"]):
        row("RSS growth over the soak, MiB",
            lambda x: (x["soak"]["rss_samples"][-1][1] - x["soak"]["rss_samples"][0][1]) if x.get("soak") and
            x["soak"]["rss_samples"] else None)
    md.append("")
    for x in r["runs"]:
        if x.get("quiescent_s") is not None:
            md.append(f"- {x['controller']}: {x.get('quiescent_at_rest', 0):,} of "
                      f"{x['quiescent_objects'] - s['models']:,} more models at rest after "
                      f"{x['quiescent_s']:,.0f} s ({'recognised as prod, see below' if x['controller'] == 'lockstep' and x.get('quiescent_path') == 'recognized' else 'its own path'}), "
                      f"then {s.get('settle', SETTLE)} s; CPU share at rest {x.get('idle_cpu_share_at_rest', 0):.2f} "
                      f"of a core; load average then {x.get('loadavg_at_rest', '-')}.")
        if x.get("soak"):
            sk = x["soak"]
            md.append(f"- {x['controller']}: soak of {s['soak_s']} s, {sk['rounds']} rounds of releases of the "
                      f"promoted canary models; RSS {sk['rss_samples'][0][1]:.1f} → {sk['rss_samples'][-1][1]:.1f} MiB "
                      f"(max {max(v for _, v in sk['rss_samples']):.1f})." if sk["rss_samples"] else
                      f"- {x['controller']}: soak of {s['soak_s']} s: no round finished.")
    for x in r["runs"]:
        md.append(f"- {x['controller']}: v1 of {s['models']} models Ready in {fmt(x.get('initial_s'))} s, "
                  f"the canaries in {fmt(x.get('canary_s'))} s; {len(x['step_latency_s'])} step and "
                  f"{len(x['rollback_latency_s'])} rollback samples; {x.get('measurement_errors', 0)} "
                  f"measurement errors; {fmt(x.get('apiserver_request_total_delta'), 0)} requests of all clients "
                  f"(apiserver_request_total); user agents {', '.join((x.get('audit') or {}).get('user_agents', []))}; "
                  "top requests: " + ", ".join(f"{k} {v}" for k, v in list(((x.get('audit') or {}).get('by') or {})
                                                                          .items())[:6]) + ".")
    return "\n".join(md) + "\n"


def write_docs(table):
    path = os.path.join(ROOT, "docs/benchmarks.md")
    doc = open(path).read()
    block = "<!-- promotion:begin -->\n" + table + "<!-- promotion:end -->"
    if "<!-- promotion:begin -->" in doc:
        doc = re.sub(r"<!-- promotion:begin -->.*?<!-- promotion:end -->", lambda _: block, doc, flags=re.S)
    else:
        doc += "\n## Promotion at scale, side by side with Argo Rollouts\n\n" + block + "\n"
    open(path, "w").write(doc)


def main():
    if not ENV.get("SKIP_BUILD"):
        sh(["cmake", "-S", ROOT, "-B", BUILD, "-G", "Ninja"])
        sh(["cmake", "--build", BUILD, "--target", "lockstep-operator", "lockstep-test-exporter",
            "-j", ENV.get("LOCKSTEP_JOBS", "2")])
    argo_bin = moddir = None
    if "argo" in CONTROLLERS:
        argo_bin = sh([os.path.join(ROOT, "bench/peers/argo-rollouts/build.sh")]).stdout.strip()
        moddir = sh([os.path.join(ROOT, "bench/peers/argo-rollouts/build.sh"), "moddir"]).stdout.strip()
    work = tempfile.mkdtemp(prefix="lockstep-promotion-")
    procs, c, watch = Procs(), None, None
    prom_dir = os.path.join(work, "prometheus")
    now = datetime.datetime.now(datetime.timezone.utc)
    results = {"date": now.strftime("%Y-%m-%d %H:%M UTC"),
               "file": f"promotion-{now.strftime('%Y-%m-%d')}{'-smoke' if SMOKE else ''}.json",
               "command": " ".join(f"{k}={shlex.quote(ENV[k])}" for k in (
                   "NODES", "MODELS", "CANARIES", "QUIESCENT", "QUIESCENT_PATH", "QUIESCENT_DEADLINE", "SOAK", "TIMEOUT",
                   "CONTROLLERS",
                   "LOCKSTEP_ARGS", "TOGETHER", "ARGO_CAPACITY")
                   if k in ENV) + (" OPERATOR=<another lockstep-operator>" if "OPERATOR" in ENV else "") +
               " bench/promotion.sh" + (" --smoke" if SMOKE else ""),
               "loadavg_before": " ".join(open("/proc/loadavg").read().split()[:3]),
               "settings": {"nodes": NODES, "models": MODELS, "canaries": CANARIES, "replicas": REPLICAS,
                            "quiescent_objects": MODELS + QUIESCENT, "soak_s": SOAK, "fail_every": FAIL_EVERY,
                            "error_ratio": ERROR_RATIO, "scrape": SCRAPE, "window": WINDOW,
                            "initial_delay": INITIAL_DELAY, "interval": INTERVAL, "count": COUNT,
                            "warmup": WARMUP, "step_weights": STEP_WEIGHTS, "together": TOGETHER,
                            "argo_capacity": ARGO_CAPACITY,
                            "settle": SETTLE, "quiescent_path": QUIESCENT_PATH},
               "runs": []}
    try:
        c = Cluster(work)
        log(f"adding {NODES} KWOK GPU nodes")
        c.apply(gpu_nodes(NODES))
        wait_for(f"{NODES} bench nodes Ready", lambda: c.kubectl(
            "get", "nodes", "-l", "lockstep.dev/test-pool=bench-gpu", "-o",
            'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}'
        ).stdout.count("True") >= NODES, 600)
        c.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYS_NS}}])
        out = sh([os.path.join(ROOT, "tests/cluster/prometheus.sh"), "up", "--dir", prom_dir,
                  "--scrape-interval", SCRAPE, "--kubeconfig", c.kubeconfig,
                  "--exporter", os.path.join(BUILD, "tests/prometheus/lockstep-test-exporter")]).stdout
        prom_url = re.search(r"LOCKSTEP_PROMETHEUS_URL=(\S+)", out).group(1).strip("'\"")
        proxy = PromProxy(prom_url)
        watch = PodWatch(c, os.path.join(work, "podwatch.log"))
        turns = []
        for name in CONTROLLERS:
            if name == "argo":
                ctl, sa = Argo(c, work, "bench-argo", proxy.url, moddir, argo_bin), "argo-rollouts"
            else:
                ctl, sa = Lockstep(c, work, "bench-lockstep", proxy.url), "lockstep"
            ctl.install()
            turns.append((ctl, token_kubeconfig(c, sa, os.path.join(work, f"{name}.kubeconfig"))))
        if TOGETHER:
            # The smoke: both at once, each in its own namespace (a check that the harness works;
            # the figures of a run together are not the comparison).
            out, errors = {}, []

            def turn(ctl, kc, last):
                try:
                    out[ctl.name] = run_controller(ctl, c, procs, watch, proxy, prom_dir, kc, last)
                except BaseException as e:  # noqa: B036 - reported and re-raised below
                    errors.append(f"{ctl.name}: {e}")
            threads = [threading.Thread(target=turn, args=(ctl, kc, True)) for ctl, kc in turns]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if errors:
                raise SystemExit("promotion: " + "; ".join(errors))
            results["runs"] = [out[ctl.name] for ctl, _ in turns]
        else:
            for i, (ctl, kc) in enumerate(turns):
                results["runs"].append(run_controller(ctl, c, procs, watch, proxy, prom_dir, kc,
                                                      i == len(turns) - 1))
        results["versions"] = {
            "kubernetes": json.loads(c.kubectl("version", "-o", "json").stdout)["serverVersion"]["gitVersion"],
            "argo-rollouts": (sh(["go", "list", "-m", "-f", "{{.Version}}", "github.com/argoproj/argo-rollouts"],
                                 cwd=os.path.join(ROOT, "bench/peers/argo-rollouts")).stdout.strip()
                              if argo_bin else "-"),
            "go": sh(["go", "version"]).stdout.split()[2],
            "lockstep": sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).stdout.strip()}
    finally:
        if watch:
            watch.stop()
        procs.stop_all()
        sh([os.path.join(ROOT, "tests/cluster/prometheus.sh"), "down", "--dir", prom_dir], check=False)
        if c:
            c.down()
        if not ENV.get("KEEP_WORK"):
            sh(["rm", "-rf", work], check=False)
    results["loadavg_after"] = " ".join(open("/proc/loadavg").read().split()[:3])
    with open("/proc/cpuinfo") as f:
        m = re.search(r"model name\s*:\s*(.*)", f.read())
    results["machine"] = f"{m.group(1) if m else '?'}, {os.cpu_count()} cores, kernel {platform.release()}"
    table = summarize(results)
    print(table)
    if ENV.get("KEEP_WORK"):
        with open(os.path.join(work, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
    problems = [f"{x['controller']}: {p}" for x in results["runs"] for p in x["problems"]]
    missing = [f"{x['controller']}: {k}" for x in results["runs"] for k in
               ("requests_per_min", "cpu_s", "peak_rss_mib") if x.get(k) is None]
    missing += [f"{x['controller']}: no step latency" for x in results["runs"] if not x["step_latency_s"]]
    missing += [f"{x['controller']}: no rollback latency" for x in results["runs"]
                if FAIL_EVERY and CANARIES >= FAIL_EVERY and not x["rollback_latency_s"]]
    if RECORD:
        os.makedirs(os.path.join(ROOT, "bench/results"), exist_ok=True)
        with open(os.path.join(ROOT, "bench/results", results["file"]), "w") as f:
            json.dump(results, f, indent=1)
        write_docs(table)
    if problems or missing:
        log("FAILED:\n  " + "\n  ".join(problems + missing))
        sys.exit(1)


if __name__ == "__main__":
    main()
