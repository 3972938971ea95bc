#!/usr/bin/env python3
"""Lockstep benchmarks against peers and the physical limit (issue 11).

One command runs every section, writes bench/results/<date>.json and the
generated tables of docs/benchmarks.md (between the bench:begin/end markers):

    bench/run.sh                      # everything, defaults below
    REPS=3 DURATION=5 SECTIONS=load,apiserver,closure bench/run.sh

Sections (SECTIONS, comma-separated):
  load       admission servers side by side on 127.0.0.1 (keep-alive TLS, the
             same certificate, cipher list and bodies): throughput at fixed
             concurrency (wrk), latency at a fixed rate (loadgen), CPU seconds
             per 1,000 requests and peak RSS of each server.
  apiserver  pod-create latency through the real kube-apiserver: no webhook,
             Lockstep's operator webhook, the controller-runtime peer, a
             ValidatingAdmissionPolicy with the equivalent CEL check (the
             floor), and the chart's own pod policies (admission.mode=policy:
             the whole rule, against the operator's RuntimeAdmission table).
  closure    bench_closure (parse+hash per format vs raw SHA-256).
  scale      controller scale: for each SCALE_N, N RuntimeEnvs with distinct real
             inline uv.locks created in bulk (rtecreate, timed apart), then one
             of: lockstep-operator (--controllers=runtimeenv), the
             controller-runtime peer (crcontroller) or the bare status writer
             (statuswriter: the limit) is started; convergence = its start to
             the last status carrying its expected hash (rtewait, a watch);
             peak RSS and CPU seconds of the process. Fresh namespace per run,
             deleted and waited for; etcd compacted between runs.

Servers (SERVERS): beast (lockstep-webhook-dev), plain (Go net/http +
encoding/json), cr (controller-runtime webhook, informer cache), nginx (static
200: the ceiling), beast-jemalloc (beast with jemalloc preloaded: JEMALLOC names
the library; only telling for a build with -DLOCKSTEP_ALLOCATOR=system, since
the servers link jemalloc by default). BEAST_BEFORE=<binary of an earlier lockstep-webhook-dev>
adds "beast-before" for a before/after in the same run.

Environment: BUILD (build dir, default build; the project default RelWithDebInfo), REPS (3),
DURATION (seconds per load run, 5), CONNS ("1 16 64"), RATES ("2000 10000"),
RATE_CONNS (32), POD_CREATES (1000), POD_REPS (3), THREADS (server threads, 2),
BENCH_CLUSTER_DIR (a cluster.sh dir; reused when already up), SKIP_BUILD=1.
Scale: SCALE_N ("1000 5000"), SCALE_REPS (1), SCALE_WORKERS (2: Lockstep's
--workers and crcontroller's MaxConcurrentReconciles; statuswriter's writes in
flight), SCALE_CREATE_CONCURRENCY (16), SCALE_CONTROLLERS ("lockstep cr writer").
Running only some sections keeps the other sections' results: the newest
bench/results/*.json is merged (its sections not run now are kept, with their
own settings and provenance) and the whole block is rendered again.
Servers take turns within every repetition; figures are medians of REPS runs.
"""
import base64
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = os.environ
BUILD = ENV.get("BUILD", os.path.join(ROOT, "build"))
REPS = int(ENV.get("REPS", "3"))
DURATION = int(ENV.get("DURATION", "5"))
CONNS = [int(c) for c in ENV.get("CONNS", "1 16 64").split()]
RATES = [int(r) for r in ENV.get("RATES", "2000 10000").split()]
RATE_CONNS = int(ENV.get("RATE_CONNS", "32"))
POD_CREATES = int(ENV.get("POD_CREATES", "1000"))
POD_REPS = int(ENV.get("POD_REPS", "3"))
THREADS = int(ENV.get("THREADS", "2"))
SECTIONS = ENV.get("SECTIONS", "load,apiserver,closure,scale").split(",")
ALL_SECTIONS = ("load", "apiserver", "closure", "scale")
SCALE_N = [int(n) for n in ENV.get("SCALE_N", "1000 5000").split()]
SCALE_REPS = int(ENV.get("SCALE_REPS", "1"))
SCALE_WORKERS = int(ENV.get("SCALE_WORKERS", "2"))
SCALE_CREATE_CONCURRENCY = int(ENV.get("SCALE_CREATE_CONCURRENCY", "16"))
SCALE_CONTROLLERS = ENV.get("SCALE_CONTROLLERS", "lockstep cr writer").split()
# Real uv.locks (tests/closure/testdata/lockfiles/MANIFEST.tsv): 16 KB and 53 KB.
SCALE_FIXTURES = ["tests/closure/testdata/lockfiles/uv/torch-cu121-yyhhenry-uv-torch-env.uv.lock",
                  "tests/closure/testdata/lockfiles/uv/torch-cu13-rabago85-pytorch-uv-demo.uv.lock"]
NS = "bench-ml"
JEMALLOC = ENV.get("JEMALLOC", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")
HASH_LABEL = "lockstep.dev/closure-hash"
IMAGE = "registry.example/runtimes/torch@sha256:" + "a" * 64


def log(*a):
    print("bench:", *a, file=sys.stderr, flush=True)


def sh(cmd, check=True, **kw):
    r = subprocess.run(cmd, text=True, capture_output=True, **kw)
    if check and r.returncode != 0:
        raise SystemExit(f"bench: {' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def eventually(what, fn, timeout=60.0):
    """Polls fn until it returns a truthy value (a readiness condition, not a timing)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    raise SystemExit(f"bench: timed out waiting for {what}")


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


class Procs:
    """Processes this run started; all stopped by PID at exit."""

    def __init__(self):
        self.procs = []

    def start(self, name, cmd, logdir, env=None):
        f = open(os.path.join(logdir, name + ".log"), "w")
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
        self.procs.append(p)
        return p

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


def _tree(pid):
    """pid and its child processes (nginx's workers)."""
    kids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        kids.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return [pid] + kids


def cpu_seconds(pid):
    """User + system CPU seconds of the process and its children."""
    total = 0.0
    for p in _tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            pass
    return total


def rss_mib(pid):
    """Resident set now (VmRSS) of the process alone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mib(pid):
    """Peak resident set (VmHWM), summed over the process and its children."""
    total = 0
    for p in _tree(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024 if total else None


def versions(bins):
    v = {"kernel": platform.release(), "machine": platform.machine()}
    with open("/proc/cpuinfo") as f:
        m = re.search(r"model name\s*:\s*(.*)", f.read())
    v["cpu"] = m.group(1) if m else "?"
    v["cores"] = os.cpu_count()
    for name, cmd in {
        "go": ["go", "version"], "gxx": ["g++", "--version"], "wrk": ["wrk", "--version"],
        "nginx": ["nginx", "-v"], "openssl": ["openssl", "version"],
        "kube-apiserver": [os.path.join(bins.get("tools", ""), "kube-apiserver"), "--version"],
    }.items():
        try:
            r = subprocess.run(cmd, text=True, capture_output=True, timeout=10)
            v[name] = (r.stdout + r.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            v[name] = "not found"
    gomod = open(os.path.join(ROOT, "bench/peers/go/go.mod")).read()
    for mod in ("sigs.k8s.io/controller-runtime", "k8s.io/client-go"):
        m = re.search(re.escape(mod) + r" (v\S+)", gomod)
        v[mod] = m.group(1) if m else "?"
    return v


# ---- inputs -------------------------------------------------------------------


def make_certs(d):
    """One ECDSA P-256 CA and serving cert for 127.0.0.1, given to every server."""
    o = lambda *a: sh(["openssl", *a])
    o("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
      "-days", "1", "-subj", "/CN=lockstep-bench-ca", "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.crt")
    o("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
      "-subj", "/CN=127.0.0.1", "-keyout", f"{d}/tls.key", "-out", f"{d}/tls.csr")
    with open(f"{d}/ext.cnf", "w") as f:
        f.write("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n")
    o("x509", "-req", "-in", f"{d}/tls.csr", "-CA", f"{d}/ca.crt", "-CAkey", f"{d}/ca.key",
      "-CAcreateserial", "-days", "1", "-extfile", f"{d}/ext.cnf", "-out", f"{d}/tls.crt")


def pod_object(closure_hash, large):
    """A controller-created pod; large: 20 containers with 40 env vars each."""
    def container(name, env_count):
        return {"name": name, "image": IMAGE, "command": ["python", "-m", name],
                "ports": [{"containerPort": 8080}],
                "resources": {"limits": {"cpu": "2", "memory": "4Gi"}},
                "env": [{"name": f"{name.upper()}_SETTING_{i}", "value": f"value-{i}-" + "x" * 24}
                        for i in range(env_count)],
                "volumeMounts": [{"name": "model", "mountPath": "/model", "readOnly": True}]}
    n, env = (20, 40) if large else (2, 1)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "serve-7d9f8-", "namespace": NS,
                         "labels": {"app": "serve", "lockstep.dev/runtime-env": "torch",
                                    "pod-template-hash": "7d9f8"},
                         "annotations": {HASH_LABEL: closure_hash}},
            "spec": {"initContainers": [container("fetch", env)],
                     "containers": [container(f"serve{i}", env) for i in range(n)],
                     "volumes": [{"name": "model", "emptyDir": {}}]}}


def review(pod):
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "3f0c1d2e-bench", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                        "resource": {"group": "", "version": "v1", "resource": "pods"},
                        "namespace": NS, "operation": "CREATE",
                        "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
                        "object": pod}}


# ---- cluster --------------------------------------------------------------------


class Cluster:
    def __init__(self, work, procs, bins):
        self.work, self.procs, self.bins = work, procs, bins
        self.dir = ENV.get("BENCH_CLUSTER_DIR") or os.path.join(work, "cluster")
        self.started = False
        script = os.path.join(ROOT, "tests/cluster/cluster.sh")
        if sh([script, "status", "--dir", self.dir], check=False).returncode != 0:
            log("starting a cluster in", self.dir)
            sh([script, "up", "--dir", self.dir])
            self.started = True
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.env = dict(ENV, KUBECONFIG=self.kubeconfig)
        bins["tools"] = open(os.path.join(self.dir, "tools-bin")).read().strip()

    def kubectl(self, *args, stdin=None, check=True):
        return sh([os.path.join(self.bins["tools"], "kubectl"), *args], check=check,
                  input=stdin, env=self.env)

    def apply(self, obj):
        self.kubectl("apply", "-f", "-", stdin=json.dumps(obj))

    def down(self):
        if self.started:
            sh([os.path.join(ROOT, "tests/cluster/cluster.sh"), "down", "--dir", self.dir], check=False)


def setup_cluster(c, certs):
    for crd in ("lockstep.dev_runtimeenvs.yaml", "lockstep.dev_modelreleases.yaml",
                "lockstep.dev_runtimeadmissions.yaml"):
        c.kubectl("apply", "-f", os.path.join(ROOT, "crds", crd))
    c.kubectl("wait", "--for", "condition=Established", "crd/runtimeenvs.lockstep.dev", "--timeout=60s")
    c.apply({"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": NS, "labels": {"lockstep.dev/enforce": "enforce"}}})
    # A real pip lock with hashes (tests/closure/testdata/lockfiles/MANIFEST.tsv).
    lock = open(os.path.join(ROOT, "tests/closure/testdata/lockfiles/pip",
                             "torch-2.1-cu12-tensorflow-sigstore-model-transparency.requirements.txt")).read()
    c.apply({"apiVersion": "lockstep.dev/v1alpha1", "kind": "RuntimeEnv",
             "metadata": {"name": "torch", "namespace": NS},
             "spec": {"lock": {"inline": lock, "format": "pip"}, "image": IMAGE}})


def start_operator(c, procs, work, certs):
    port, port_file = free_port(), os.path.join(work, "operator.port")
    p = procs.start("operator", [
        os.path.join(BUILD, "cmd/lockstep-operator"),
        "--kubeconfig=" + c.kubeconfig, "--namespace=" + NS, "--bind-address=127.0.0.1",
        f"--webhook-port={port}", f"--metrics-port={free_port()}", f"--health-port={free_port()}",
        "--cert-mode=file", "--cert-dir=" + certs, f"--webhook-threads={THREADS}",
        "--port-file=" + port_file, "--controllers=runtimeenv", "--log-level=warn",
        # Keeps the RuntimeAdmission table of NS for the "policy" configuration.
        "--admission-mode=policy"], work)
    eventually("operator webhook port", lambda: os.path.exists(port_file) and open(port_file).read().strip())
    c.kubectl("wait", "--for=condition=Ready", "rte/torch", "-n", NS, "--timeout=120s")
    h = c.kubectl("get", "rte/torch", "-n", NS, "-o", "jsonpath={.status.closureHash}").stdout.strip()
    return p, port, h


# ---- servers ----------------------------------------------------------------------


def post(port, body_file, ca):
    r = sh(["curl", "-s", "--cacert", ca, "-H", "Content-Type: application/json",
            "--data-binary", "@" + body_file, f"https://127.0.0.1:{port}/validate/pods"], check=False)
    return r.stdout


def start_servers(names, procs, work, bins, cluster_env, answer_allowed):
    servers = {}
    certs = work
    for name in names:
        port_file = os.path.join(work, name + ".port")
        if name in ("beast", "beast-before", "beast-jemalloc"):
            binary = ENV["BEAST_BEFORE"] if name == "beast-before" else \
                os.path.join(BUILD, "cmd/lockstep-webhook-dev")
            env = None
            if name == "beast-jemalloc":  # the allocator trial of issue 11 item 6
                env = dict(ENV, LD_PRELOAD=JEMALLOC)
            p = procs.start(name, [binary, "--config", f"{work}/lookups.json", "--port", "0",
                                   "--port-file", port_file, "--cert-file", f"{certs}/tls.crt",
                                   "--key-file", f"{certs}/tls.key", "--threads", str(THREADS),
                                   "--log-level", "warn"], work, env=env)
        elif name == "plain":
            p = procs.start(name, [os.path.join(bins["peers"], "plainwebhook"), "--config",
                                   f"{work}/lookups.json", "--port-file", port_file,
                                   "--cert", f"{certs}/tls.crt", "--key", f"{certs}/tls.key",
                                   "--threads", str(THREADS)], work)
        elif name == "cr":
            port = free_port()
            open(port_file, "w").write(f"{port}\n")
            p = procs.start(name, [os.path.join(bins["peers"], "crwebhook"), "--port", str(port),
                                   "--cert-dir", certs, "--threads", str(THREADS)], work, env=cluster_env)
        elif name == "nginx":
            port = free_port()
            open(port_file, "w").write(f"{port}\n")
            nd = os.path.join(work, "nginx")
            os.makedirs(nd, exist_ok=True)
            ciphers = ("ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                       "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                       "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305")
            with open(f"{nd}/nginx.conf", "w") as f:
                f.write(f"""worker_processes {THREADS};
pid {nd}/nginx.pid; error_log {nd}/error.log warn; daemon off;
events {{ worker_connections 1024; }}
http {{ access_log off; client_body_temp_path {nd}/body; proxy_temp_path {nd}/proxy;
  fastcgi_temp_path {nd}/fastcgi; uwsgi_temp_path {nd}/uwsgi; scgi_temp_path {nd}/scgi;
  keepalive_requests 100000000; keepalive_timeout 60s;
  server {{ listen 127.0.0.1:{port} ssl; ssl_certificate {certs}/tls.crt;
    ssl_certificate_key {certs}/tls.key; ssl_protocols TLSv1.2 TLSv1.3; ssl_ciphers {ciphers};
    location / {{ default_type application/json; return 200 '{answer_allowed}'; }} }} }}
""")
            p = procs.start(name, [shutil.which("nginx") or "/usr/sbin/nginx", "-p", nd, "-e",
                                   f"{nd}/error.log", "-c", f"{nd}/nginx.conf"], work)
        else:
            raise SystemExit(f"bench: unknown server {name}")
        port = eventually(f"{name} port", lambda: os.path.exists(port_file) and open(port_file).read().strip())
        servers[name] = {"proc": p, "port": int(port)}
    return servers


def check_answers(servers, work):
    """Every server admits the good pod and denies the pod with a wrong hash."""
    for name, s in servers.items():
        for body, want in (("pod", True), ("pod-large", True), ("pod-bad", False)):
            if name == "nginx" and not want:
                continue
            out = eventually(f"{name} answering", lambda: post(s["port"], f"{work}/{body}.json", f"{work}/ca.crt"),
                             timeout=120)
            try:
                allowed = json.loads(out)["response"]["allowed"]
            except (ValueError, KeyError, TypeError):
                raise SystemExit(f"bench: {name} answered {body} with {out!r}")
            if allowed != want:
                raise SystemExit(f"bench: {name} answered {body}: allowed={allowed}, want {want}: {out}")


# ---- load ----------------------------------------------------------------------------

WRK_LAT = re.compile(r"^\s+(50|99|99\.9)(?:\.000)?%\s+([\d.]+)(us|ms|s)\s*$", re.M)


def to_ms(v, unit):
    return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def wrk(port, body, conns, duration):
    threads = 1 if conns < 2 else 2
    r = sh(["wrk", f"-t{threads}", f"-c{conns}", f"-d{duration}s", "--latency",
            "-s", os.path.join(ROOT, "bench/admission_bench.lua"),
            f"https://127.0.0.1:{port}/validate/pods"], env=dict(ENV, BENCH_BODY=body))
    out = r.stdout
    lat = {m.group(1): to_ms(m.group(2), m.group(3)) for m in WRK_LAT.finditer(out)}
    reqs = int(re.search(r"(\d+) requests in", out).group(1))
    errs = 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        errs += int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        errs += sum(int(x) for x in m.groups())
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), "requests": reqs,
            "p50_ms": lat.get("50"), "p99_ms": lat.get("99"), "errors": errs}


def loadgen(bins, port, body, ca, rate, duration):
    r = sh([os.path.join(bins["peers"], "loadgen"), "-url", f"https://127.0.0.1:{port}/validate/pods",
            "-body", body, "-ca", ca, "-rate", str(rate), "-duration", f"{duration}s",
            "-conns", str(RATE_CONNS), "-threads", "1"])
    o = json.loads(r.stdout)
    return {"rate": rate, "achieved_rps": o["achieved_rps"], "errors": o["errors"] + o["dropped"],
            "dropped": o["dropped"],
            "p50_ms": o["latency"]["p50_ms"], "p99_ms": o["latency"]["p99_ms"],
            "p999_ms": o["latency"]["p999_ms"], "requests": o["latency"]["count"] + o["errors"]}


def run_load(servers, work, bins):
    bodies = {"pod": f"{work}/pod.json", "large": f"{work}/pod-large.json"}
    for name, s in servers.items():  # warm-up: connections, caches, JIT-free but page-faulted
        wrk(s["port"], bodies["pod"], 8, 2)
    runs = []
    for rep in range(1, REPS + 1):
        for body, path in bodies.items():
            for conns in CONNS:
                for name, s in servers.items():
                    pid = s["proc"].pid
                    c0 = cpu_seconds(pid)
                    r = wrk(s["port"], path, conns, DURATION)
                    r["cpu_s_per_1000"] = (cpu_seconds(pid) - c0) / (r["requests"] / 1000) if r["requests"] else None
                    r.update(kind="throughput", rep=rep, body=body, conns=conns, server=name)
                    runs.append(r)
                    log(f"rep {rep} {body} c={conns} {name}: {r['rps']:.0f} req/s p99 {r['p99_ms']} ms")
            for rate in RATES:
                for name, s in servers.items():
                    pid = s["proc"].pid
                    c0 = cpu_seconds(pid)
                    r = loadgen(bins, s["port"], path, f"{work}/ca.crt", rate, DURATION)
                    r["cpu_s_per_1000"] = (cpu_seconds(pid) - c0) / (r["requests"] / 1000) if r["requests"] else None
                    r.update(kind="rate", rep=rep, body=body, server=name)
                    runs.append(r)
                    log(f"rep {rep} {body} rate={rate} {name}: p99 {r['p99_ms']} ms, {r['errors']} errors")
    rss = {name: peak_rss_mib(s["proc"].pid) for name, s in servers.items()}
    return runs, rss


# ---- through the API server --------------------------------------------------------


def webhook_config(port, ca_pem):
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "lockstep-bench"},
            "webhooks": [{"name": "pods.bench.lockstep.dev", "admissionReviewVersions": ["v1"],
                          "sideEffects": "None", "failurePolicy": "Fail", "timeoutSeconds": 10,
                          "clientConfig": {"url": f"https://127.0.0.1:{port}/validate/pods",
                                           "caBundle": base64.b64encode(ca_pem.encode()).decode()},
                          "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NS}},
                          "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                     "operations": ["CREATE"], "resources": ["pods"]}]}]}


# The in-process floor: the same rule as CEL over the pod and the RuntimeEnv
# (paramKind), which the API server reads from its own informer. CEL compares
# image strings as written (no Docker-reference normalization) and the binding
# names the RuntimeEnv (params cannot be chosen by the pod's label).
VAP = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
       "metadata": {"name": "lockstep-bench"},
       "spec": {"failurePolicy": "Fail",
                "paramKind": {"apiVersion": "lockstep.dev/v1alpha1", "kind": "RuntimeEnv"},
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                        "operations": ["CREATE"], "resources": ["pods"]}]},
                "validations": [
                    {"expression": "params.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
                     "message": "RuntimeEnv is not Ready"},
                    {"expression": "has(object.metadata.annotations) && "
                                   "object.metadata.annotations[?'lockstep.dev/closure-hash'].orValue('') == "
                                   "params.status.closureHash",
                     "messageExpression": "'annotation lockstep.dev/closure-hash must be ' + params.status.closureHash"},
                    {"expression": "object.spec.containers.all(c, c.image == params.spec.image) && "
                                   "(!has(object.spec.initContainers) || object.spec.initContainers.all(c, c.image == params.spec.image)) && "
                                   "(!has(object.spec.ephemeralContainers) || object.spec.ephemeralContainers.all(c, c.image == params.spec.image))",
                     "messageExpression": "'every image must be ' + params.spec.image"}]}}
VAP_BINDING = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": "lockstep-bench"},
               "spec": {"policyName": "lockstep-bench", "validationActions": ["Deny"],
                        "paramRef": {"name": "torch", "parameterNotFoundAction": "Deny"},
                        "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NS}}}}}


def chart_pod_policies(c):
    """The chart's pod policies (admission.mode=policy, templates/pod-policy.yaml) as the product
    ships them, without the policy guarding the tables (the bench's operator is not the chart's
    ServiceAccount)."""
    r = sh([os.path.join(c.bins["tools"], "helm"), "template", "lockstep", os.path.join(ROOT, "helm/lockstep"),
            "--namespace", "lockstep-system", "--set", "image.repository=registry.example/lockstep/operator",
            "--set", "image.digest=sha256:" + "0" * 64, "--set", "admission.mode=policy",
            "--show-only", "templates/pod-policy.yaml"])
    objs = c.kubectl("create", "--dry-run=client", "-o", "json", "-f", "-", stdin=r.stdout).stdout
    out = []
    for doc in json.loads("[" + objs.replace("}\n{", "},\n{") + "]"):
        for o in doc.get("items", [doc]):
            if not o["metadata"]["name"].endswith("runtime-admissions"):
                out.append(o)
    return out


def pod_denied(c, work):
    """Creates (dry run) the pod with a wrong hash: True when admission denies it."""
    r = c.kubectl("create", "--dry-run=server", "-f", f"{work}/podobj-bad.json", "-o", "name", check=False)
    return r.returncode != 0 and "denied" in (r.stderr + r.stdout).lower()


def run_apiserver(c, work, bins, ports):
    ca = open(f"{work}/ca.crt").read()
    configs = ["none", "lockstep", "cr", "vap", "policy"]
    policies = chart_pod_policies(c)
    runs = []
    for rep in range(1, POD_REPS + 1):
        for cfg in configs:
            if cfg in ("lockstep", "cr"):
                c.apply(webhook_config(ports[cfg], ca))
            elif cfg == "vap":
                c.apply(VAP)
                c.apply(VAP_BINDING)
            elif cfg == "policy":
                for o in policies:
                    c.apply(o)
            if cfg != "none":
                eventually(f"{cfg} enforcing", lambda: pod_denied(c, work), timeout=120)
            r = sh([os.path.join(bins["peers"], "podcreate"), "-kubeconfig", c.kubeconfig, "-namespace", NS,
                    "-pod", f"{work}/podobj.json", "-n", str(POD_CREATES), "-run", f"{cfg}-{rep}"])
            o = json.loads(r.stdout)
            if o["errors"]:
                raise SystemExit(f"bench: pod creates with {cfg} failed: {o['first_error']}")
            runs.append({"config": cfg, "rep": rep, "creates": o["creates"], "per_s": o["creates_per_second"],
                         "p50_ms": o["latency"]["p50_ms"], "p99_ms": o["latency"]["p99_ms"],
                         "p999_ms": o["latency"]["p999_ms"]})
            log(f"apiserver rep {rep} {cfg}: p50 {o['latency']['p50_ms']} p99 {o['latency']['p99_ms']} ms")
            c.kubectl("delete", "validatingwebhookconfiguration/lockstep-bench",
                      "validatingadmissionpolicybinding/lockstep-bench",
                      "validatingadmissionpolicy/lockstep-bench", "--ignore-not-found")
            for o in policies if cfg == "policy" else []:
                c.kubectl("delete", o["kind"].lower() + "/" + o["metadata"]["name"], "--ignore-not-found")
            eventually(f"{cfg} removed", lambda: not pod_denied(c, work), timeout=120)
    return runs


# ---- closure ----------------------------------------------------------------------------


def run_closure():
    r = sh([os.path.join(BUILD, "bench/bench_closure")])
    return r.stdout


# ---- controller scale ------------------------------------------------------------------


def scale_crosscheck(bins, files):
    """The Go peer's closure hash equals `lockstep closure-hash` for every file, or the run stops."""
    cli = os.path.join(BUILD, "cmd/lockstep/lockstep")
    go = sh([os.path.join(bins["peers"], "crcontroller"), "--hash", *files]).stdout.split("\n")
    go = {line.split()[0]: line.split()[1] for line in go if line.strip()}
    for f in files:
        want = sh([cli, "closure-hash", "--format", "uv", f]).stdout.strip().splitlines()[-1]
        if go.get(f) != want:
            raise SystemExit(f"bench: closure hash of {f}: Go peer {go.get(f)}, lockstep {want}: "
                             "the peer does not compute closure hash v1; no scale figures")
    return len(files)


def delete_namespace(c, ns):
    # The RuntimeEnvs first in one deletecollection, then the namespace; wait until it is gone.
    c.kubectl("delete", "runtimeenvs.lockstep.dev", "--all", "-n", ns, "--wait=false", check=False)
    c.kubectl("delete", "namespace", ns, "--wait=true", "--timeout=1200s")
    eventually(f"namespace {ns} gone",
               lambda: c.kubectl("get", "namespace", ns, check=False).returncode != 0, timeout=600)
    sh([os.path.join(ROOT, "tests/cluster/cluster.sh"), "compact-etcd", "--dir", c.dir], check=False)


def start_scale_controller(ctl, c, procs, work, ns, expected):
    if ctl == "lockstep":
        return procs.start(f"scale-{ns}", [
            os.path.join(BUILD, "cmd/lockstep-operator"),
            "--kubeconfig=" + c.kubeconfig, "--namespace=" + ns, "--watch-namespaces=" + ns,
            "--bind-address=127.0.0.1", "--webhook-port=0", "--metrics-port=0", "--health-port=0",
            "--metrics-secure=false", "--cert-mode=file", "--cert-dir=" + work,
            f"--webhook-threads={THREADS}", "--controllers=runtimeenv", f"--workers={SCALE_WORKERS}",
            "--log-level=warn"], work)
    if ctl == "cr":
        return procs.start(f"scale-{ns}", [
            os.path.join(c.bins["peers"], "crcontroller"), "--namespace", ns,
            "--workers", str(SCALE_WORKERS), "--threads", str(THREADS)], work, env=c.env)
    if ctl == "writer":
        out = open(os.path.join(work, f"scale-{ns}.out"), "w")
        err = open(os.path.join(work, f"scale-{ns}.log"), "w")
        return subprocess.Popen([os.path.join(c.bins["peers"], "statuswriter"), "-kubeconfig", c.kubeconfig,
                                 "-expected", expected, "-workers", str(SCALE_WORKERS)], stdout=out, stderr=err)
    raise SystemExit(f"bench: unknown scale controller {ctl} (SCALE_CONTROLLERS: lockstep cr writer)")


def run_scale(c, procs, work, bins):
    runs, crosschecked = [], 0
    dump = os.path.join(work, "scale-variants")
    fixtures = [os.path.join(ROOT, f) for f in SCALE_FIXTURES]
    for n in SCALE_N:
        for rep in range(1, SCALE_REPS + 1):
            for ctl in SCALE_CONTROLLERS:
                ns = f"bench-scale-{n}-{ctl}-{rep}"
                log(f"scale N={n} rep {rep} {ctl}: creating {n} RuntimeEnvs in {ns}")
                c.kubectl("create", "namespace", ns)
                expected = os.path.join(work, ns + ".json")
                r = sh([os.path.join(bins["peers"], "rtecreate"), "-kubeconfig", c.kubeconfig, "-namespace", ns,
                        "-n", str(n), "-fixtures", ",".join(fixtures), "-image", IMAGE, "-out", expected,
                        "-concurrency", str(SCALE_CREATE_CONCURRENCY), "-dump", dump])
                created = json.loads(r.stdout)
                if not crosschecked:
                    crosschecked = scale_crosscheck(bins, fixtures + sorted(
                        os.path.join(dump, f) for f in os.listdir(dump)))
                    log(f"scale: Go peer and lockstep closure-hash agree on {crosschecked} locks")
                ready = os.path.join(work, ns + ".watching")
                wout = open(os.path.join(work, ns + ".wait"), "w")
                werr = open(os.path.join(work, ns + ".wait.log"), "w")
                watcher = subprocess.Popen([os.path.join(bins["peers"], "rtewait"), "-kubeconfig", c.kubeconfig,
                                            "-expected", expected, "-ready-file", ready, "-timeout", "40m"],
                                           stdout=wout, stderr=werr)
                procs.procs.append(watcher)
                def watching():
                    if watcher.poll() is not None:  # it refuses a namespace already resolved
                        raise SystemExit(f"bench: rtewait for {ns} exited ({watcher.returncode}): "
                                         f"{open(werr.name).read().strip()}")
                    return os.path.exists(ready)
                eventually(f"rtewait watching {ns}", watching, timeout=300)
                t0 = time.time()
                p = start_scale_controller(ctl, c, procs, work, ns, expected)
                rc = watcher.wait()
                wout.close()
                werr.close()
                w = open(os.path.join(work, ns + ".wait")).read()
                if rc != 0:
                    p.terminate()
                    raise SystemExit(f"bench: scale {ctl} N={n}: {open(werr.name).read().strip()} {w}")
                w = json.loads(w)
                run = {"n": n, "rep": rep, "controller": ctl, "workers": SCALE_WORKERS,
                       "create_s": created["seconds"], "creates_per_s": created["creates_per_second"],
                       "lock_bytes_mean": created["lock_bytes_mean"], "lock_bytes_max": created["lock_bytes_max"],
                       "distinct_hashes": created["distinct_hashes"],
                       "convergence_s": w["last_match_unix"] - t0, "first_status_s": w["first_match_unix"] - t0}
                run["statuses_per_s"] = n / run["convergence_s"]
                if ctl == "writer":
                    _, status, ru = os.wait4(p.pid, 0)
                    p.returncode = os.waitstatus_to_exitcode(status)
                    out = open(os.path.join(work, f"scale-{ns}.out")).read()
                    if p.returncode != 0:
                        raise SystemExit(f"bench: statuswriter failed: {out} "
                                         f"{open(os.path.join(work, f'scale-{ns}.log')).read()}")
                    o = json.loads(out)
                    run.update(write_s=o["seconds"], writes_per_s=o["writes_per_second"],
                               cpu_s=ru.ru_utime + ru.ru_stime, peak_rss_mib=ru.ru_maxrss / 1024)
                else:
                    run.update(cpu_s=cpu_seconds(p.pid), peak_rss_mib=peak_rss_mib(p.pid),
                               rss_at_end_mib=rss_mib(p.pid))
                    if p.poll() is not None:
                        raise SystemExit(f"bench: {ctl} exited ({p.returncode}) during the run; see its log in {work}")
                    p.terminate()
                    try:
                        p.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        p.kill()
                runs.append(run)
                log(f"scale N={n} rep {rep} {ctl}: converged in {run['convergence_s']:.2f} s "
                    f"({run['statuses_per_s']:.0f}/s), RSS {run['peak_rss_mib']:.1f} MiB, CPU {run['cpu_s']:.2f} s")
                delete_namespace(c, ns)
    return {"runs": runs, "crosschecked_locks": crosschecked, "fixtures": SCALE_FIXTURES,
            "workers": SCALE_WORKERS, "create_concurrency": SCALE_CREATE_CONCURRENCY}


# ---- report --------------------------------------------------------------------------------


def fmt(v, digits=2):
    if v is None:
        return "-"
    if isinstance(v, float) and v >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def summarize(results):
    md = []
    st = results["settings"]  # the settings of the run that measured each section
    load = results.get("load")
    if load:
        runs = load["runs"]
        servers = load["servers"]
        md.append("### Admission throughput at fixed concurrency (wrk, closed loop)\n")
        md.append(f"Medians of {st['reps']} runs of {st['duration_s']} s; CPU = server CPU seconds per 1,000 requests. "
                  "Ratios: Lockstep (beast) req/s divided by the peer's.\n")
        peers = [p for p in ("cr", "plain", "nginx", "beast-before") if p in servers and "beast" in servers]
        md.append("| body | conns | " + " | ".join(f"{s} req/s · p50 · p99 ms · CPU" for s in servers) +
                  "".join(f" | beast/{p}" for p in peers) +
                  (" | jemalloc/beast" if "beast-jemalloc" in servers else "") + " | errors |")
        md.append("|" + "---|" * (len(servers) + len(peers) + 3 + ("beast-jemalloc" in servers)))
        for body in ("pod", "large"):
            for conns in st['conns']:
                med = {}
                cells = []
                errs = 0
                for s in servers:
                    sel = [r for r in runs if r["kind"] == "throughput" and r["server"] == s
                           and r["body"] == body and r["conns"] == conns]
                    errs += sum(r["errors"] for r in sel)
                    m = {k: median([r[k] for r in sel]) for k in ("rps", "p50_ms", "p99_ms", "cpu_s_per_1000")}
                    med[s] = m
                    cells.append(f"{fmt(m['rps'])} · {fmt(m['p50_ms'], 3)} · {fmt(m['p99_ms'], 3)} · "
                                 f"{fmt(m['cpu_s_per_1000'], 3)}")
                ratio = lambda a, b: (f"{med[a]['rps'] / med[b]['rps']:.2f}x"
                                      if a in med and b in med and med[b]["rps"] else "-")
                md.append(f"| {body} | {conns} | " + " | ".join(cells) +
                          "".join(f" | {ratio('beast', p)}" for p in peers) +
                          (f" | {ratio('beast-jemalloc', 'beast')}" if "beast-jemalloc" in servers else "") +
                          f" | {errs} |")
        md.append("\n### Admission latency at a fixed rate (loadgen, open loop, "
                  f"{st['rate_conns']} connections at most)\n")
        md.append("| body | rate/s | server | achieved/s | p50 ms | p99 ms | p99.9 ms | CPU s/1k | errors |")
        md.append("|---|---|---|---|---|---|---|---|---|")
        for body in ("pod", "large"):
            for rate in st['rates']:
                for s in servers:
                    sel = [r for r in runs if r["kind"] == "rate" and r["server"] == s
                           and r["body"] == body and r["rate"] == rate]
                    m = {k: median([r[k] for r in sel]) for k in
                         ("achieved_rps", "p50_ms", "p99_ms", "p999_ms", "cpu_s_per_1000")}
                    md.append(f"| {body} | {rate} | {s} | {fmt(m['achieved_rps'])} | {fmt(m['p50_ms'], 3)} | "
                              f"{fmt(m['p99_ms'], 3)} | {fmt(m['p999_ms'], 3)} | {fmt(m['cpu_s_per_1000'], 3)} | "
                              f"{sum(r['errors'] for r in sel)} |")
        md.append("\nPeak RSS (VmHWM, MiB) after the whole load section: " +
                  ", ".join(f"{s} {fmt(v, 1)}" for s, v in load["peak_rss_mib"].items()) + "\n")
    api = results.get("apiserver")
    if api:
        md.append("### Pod-create latency through kube-apiserver\n")
        md.append(f"{st['pod_creates']} creates per run, one at a time, medians of {st['pod_reps']} runs "
                  "(configurations take turns). Overhead = p50/p99 minus the no-webhook run's.\n")
        md.append("| admission | creates/s | p50 ms | p99 ms | p99.9 ms | p50 overhead ms | p99 overhead ms |")
        md.append("|---|---|---|---|---|---|---|")
        med = {}
        for cfg in ("none", "lockstep", "cr", "vap", "policy"):
            sel = [r for r in api if r["config"] == cfg]
            if not sel:
                continue
            med[cfg] = {k: median([r[k] for r in sel]) for k in ("per_s", "p50_ms", "p99_ms", "p999_ms")}
        for cfg, m in med.items():
            o50 = m["p50_ms"] - med["none"]["p50_ms"] if cfg != "none" else None
            o99 = m["p99_ms"] - med["none"]["p99_ms"] if cfg != "none" else None
            md.append(f"| {cfg} | {fmt(m['per_s'], 0)} | {fmt(m['p50_ms'], 3)} | {fmt(m['p99_ms'], 3)} | "
                      f"{fmt(m['p999_ms'], 3)} | {fmt(o50, 3)} | {fmt(o99, 3)} |")
        results["apiserver_medians"] = med
    if results.get("closure"):
        md.append("### Closure parse+hash (bench_closure, RelWithDebInfo)\n")
        md.append("```\n" + results["closure"].strip() + "\n```\n")
    sc = results.get("scale")
    if sc:
        prov = results.get("scale_provenance", {})
        md.append("### Controller scale: RuntimeEnvs to status through kube-apiserver\n")
        if prov:
            md.append(f"Measured by `{prov['command']}` on {prov['date']}; load average {prov['loadavg_before']} "
                      f"before, {prov['loadavg_after']} after.\n")
        runs = sc["runs"]
        first = runs[0] if runs else {}
        md.append(f"N RuntimeEnvs with distinct real inline uv.locks (mean {first.get('lock_bytes_mean', 0) / 1024:.1f} KiB, "
                  f"max {first.get('lock_bytes_max', 0) / 1024:.1f} KiB) created in bulk "
                  f"({sc['create_concurrency']} creates in flight) before the controller starts; "
                  f"{sc['workers']} workers each (Lockstep `--workers`, controller-runtime "
                  f"`MaxConcurrentReconciles`, the bare writer's writes in flight). Convergence = controller "
                  f"process start → the last status carrying its expected hash (a watch). Ratio = convergence / "
                  f"the bare writer's convergence for the same N. The Go peer's hash was checked against "
                  f"`lockstep closure-hash` on {sc['crosschecked_locks']} locks, and every status of every run "
                  f"against the expected hash. Medians of {max(r['rep'] for r in runs) if runs else 0} run(s).\n")
        md.append("| N | controller | create s (creates/s) | convergence s | first status s | statuses/s | "
                  "ratio to bare writer | peak RSS MiB | RSS at convergence MiB | CPU s |")
        md.append("|---|---|---|---|---|---|---|---|---|---|")
        med = {}
        for n in sorted({r["n"] for r in runs}):
            for ctl in ("lockstep", "cr", "writer"):
                sel = [r for r in runs if r["n"] == n and r["controller"] == ctl]
                if sel:
                    med[(n, ctl)] = {k: median([r.get(k) for r in sel]) for k in
                                     ("create_s", "creates_per_s", "convergence_s", "first_status_s",
                                      "statuses_per_s", "peak_rss_mib", "rss_at_end_mib", "cpu_s", "write_s",
                                      "writes_per_s")}
            for ctl in ("lockstep", "cr", "writer"):
                m = med.get((n, ctl))
                if not m:
                    continue
                w = med.get((n, "writer"))
                ratio = f"{m['convergence_s'] / w['convergence_s']:.2f}x" if w else "-"
                name = {"lockstep": "lockstep-operator", "cr": "controller-runtime peer",
                        "writer": "bare writer (limit)"}[ctl]
                md.append(f"| {n:,} | {name} | {fmt(m['create_s'])} ({fmt(m['creates_per_s'], 0)}) | "
                          f"{fmt(m['convergence_s'])} | {fmt(m['first_status_s'])} | {fmt(m['statuses_per_s'], 0)} | "
                          f"{ratio} | {fmt(m['peak_rss_mib'], 1)} | {fmt(m['rss_at_end_mib'], 1)} | "
                          f"{fmt(m['cpu_s'])} |")
        writers = [(n, m) for (n, ctl), m in med.items() if ctl == "writer"]
        if writers:
            md.append("\nThe bare writer's own first-write-to-last-write time: " + ", ".join(
                f"N = {n:,}: {fmt(m['write_s'])} s ({fmt(m['writes_per_s'], 0)} writes/s)" for n, m in writers) + ".")
        for n in sorted({r["n"] for r in runs}):
            l, c = med.get((n, "lockstep")), med.get((n, "cr"))
            if l and c and c["peak_rss_mib"]:
                md.append(f"N = {n:,}: Lockstep RSS / controller-runtime RSS = "
                          f"{l['peak_rss_mib'] / c['peak_rss_mib']:.2f}; CPU s ratio = "
                          f"{l['cpu_s'] / c['cpu_s']:.2f}.")
        md.append("")
        results["scale_medians"] = {f"{n}/{ctl}": m for (n, ctl), m in med.items()}
    return "\n".join(md) + "\n"


def write_docs(results, table):
    path = os.path.join(ROOT, "docs/benchmarks.md")
    doc = open(path).read() if os.path.exists(path) else "# Benchmarks\n\n<!-- bench:begin -->\n<!-- bench:end -->\n"
    v = results["versions"]
    for k in ("loadavg_before", "loadavg_after"):  # older results files kept them as lists
        if isinstance(results.get(k), list):
            results[k] = " ".join(results[k])
    header = (f"Generated by `{results['command']}` on {results['date']} — {v['cpu']}, {v['cores']} cores, "
              f"kernel {v['kernel']}; load average {results['loadavg_before']} before, "
              f"{results['loadavg_after']} after. {v['gxx']}; {v['go']}; {v['wrk']}; {v['nginx']}; "
              f"{v['openssl']}; {v['kube-apiserver']}; controller-runtime {v['sigs.k8s.io/controller-runtime']}, "
              f"client-go {v['k8s.io/client-go']}. Raw runs: `bench/results/{results['file']}`.\n\n")
    block = "<!-- bench:begin -->\n" + header + table + "<!-- bench:end -->"
    doc = re.sub(r"<!-- bench:begin -->.*?<!-- bench:end -->", lambda _: block, doc, flags=re.S)
    open(path, "w").write(doc)


def merge_previous(results):
    """Running only some sections keeps the others: the newest results file's sections that did not
    run now are kept, with that run's settings, versions and header; what ran now replaces its own
    section and says when and how it was measured (scale_provenance)."""
    ran = [x for x in ALL_SECTIONS if x in SECTIONS]
    d = os.path.join(ROOT, "bench/results")
    olds = sorted(f for f in os.listdir(d) if f.endswith(".json")) if os.path.isdir(d) else []
    if len(ran) == len(ALL_SECTIONS) or not olds:
        if "scale" in ran:
            results["scale_provenance"] = {k: results[k] for k in ("command", "date", "loadavg_before",
                                                                   "loadavg_after")}
        return results
    prev = json.load(open(os.path.join(d, olds[-1])))
    log(f"keeping the sections not run now ({', '.join(x for x in ALL_SECTIONS if x not in ran)}) "
        f"from bench/results/{olds[-1]}")
    merged = dict(prev)
    merged.setdefault("settings", {}).update({k: v for k, v in results["settings"].items() if k.startswith("scale")})
    merged["file"] = results["file"]
    if "scale" in ran:
        merged["scale"] = results["scale"]
        merged["scale_provenance"] = {k: results[k] for k in ("command", "date", "loadavg_before", "loadavg_after")}
        merged["scale_versions"] = results["versions"]
    for x in ("load", "apiserver", "closure"):
        if x in ran:
            merged[x] = results.get(x)
    if len([x for x in ran if x != "scale"]):  # a new header for what ran now
        for k in ("command", "date", "loadavg_before", "loadavg_after", "versions", "settings"):
            merged[k] = results[k]
    return merged


def main():
    bins = {}
    if not ENV.get("SKIP_BUILD"):
        sh(["cmake", "-S", ROOT, "-B", BUILD, "-G", "Ninja"])  # RelWithDebInfo: -O2 -g (symbols for perf)
        sh(["cmake", "--build", BUILD, "--target", "lockstep-webhook-dev", "lockstep-operator",
            "lockstep", "bench_closure", "-j2"])
    bins["peers"] = sh([os.path.join(ROOT, "bench/peers/go/build.sh")]).stdout.strip()
    work = tempfile.mkdtemp(prefix="lockstep-bench-")
    procs = Procs()
    cluster = None
    now = datetime.datetime.now(datetime.timezone.utc)
    results = {"date": now.strftime("%Y-%m-%d %H:%M UTC"), "file": now.strftime("%Y-%m-%d") + ".json",
               "command": " ".join(f"{k}={shlex.quote(ENV[k])}" for k in
                                   ("SECTIONS", "REPS", "DURATION", "CONNS", "RATES",
                                    "POD_CREATES", "POD_REPS", "SERVERS", "SCALE_N", "SCALE_REPS",
                                    "SCALE_WORKERS", "SCALE_CONTROLLERS") if k in ENV) +
                          (" BEAST_BEFORE=<older lockstep-webhook-dev>" if ENV.get("BEAST_BEFORE") else "") +
                          " bench/run.sh",
               "settings": {"reps": REPS, "duration_s": DURATION, "conns": CONNS, "rates": RATES,
                            "rate_conns": RATE_CONNS, "pod_creates": POD_CREATES, "pod_reps": POD_REPS,
                            "server_threads": THREADS, "scale_n": SCALE_N, "scale_reps": SCALE_REPS,
                            "scale_workers": SCALE_WORKERS},
               "loadavg_before": " ".join(open("/proc/loadavg").read().split()[:3])}
    try:
        if "load" in SECTIONS or "apiserver" in SECTIONS or "scale" in SECTIONS:
            make_certs(work)
            cluster = Cluster(work, procs, bins)
            setup_cluster(cluster, work)
        if "load" in SECTIONS or "apiserver" in SECTIONS:
            op, op_port, closure_hash = start_operator(cluster, procs, work, work)
            with open(f"{work}/lookups.json", "w") as f:
                json.dump({"runtimeEnvs": [{"namespace": NS, "name": "torch", "ready": True,
                                            "closureHash": closure_hash, "image": IMAGE}],
                           "namespaces": {NS: "enforce"}}, f)
            bad = "sha256:" + "0" * 64
            for name, obj in (("podobj", pod_object(closure_hash, False)),
                              ("podobj-bad", pod_object(bad, False))):
                json.dump(obj, open(f"{work}/{name}.json", "w"))
            for name, obj in (("pod", review(pod_object(closure_hash, False))),
                              ("pod-large", review(pod_object(closure_hash, True))),
                              ("pod-bad", review(pod_object(bad, False)))):
                json.dump(obj, open(f"{work}/{name}.json", "w"), separators=(",", ":"))
            allowed = '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"3f0c1d2e-bench","allowed":true}}'
            names = ENV.get("SERVERS", "beast plain cr nginx").split()
            if ENV.get("BEAST_BEFORE"):
                names.insert(1, "beast-before")
            if "beast-jemalloc" in names and not os.path.exists(JEMALLOC):
                log("jemalloc not installed (Debian libjemalloc2): no beast-jemalloc")
                names.remove("beast-jemalloc")
            if not shutil.which("nginx") and "nginx" in names:
                log("nginx not installed: no static-200 ceiling")
                names.remove("nginx")
            servers = start_servers(names, procs, work, bins, cluster.env, allowed)
            servers_all = dict(servers)
            servers_all["lockstep-operator"] = {"proc": op, "port": op_port}
            check_answers(servers_all, work)
            results["versions"] = versions(bins)
            results["body_bytes"] = {b: os.path.getsize(f"{work}/{b}.json") for b in ("pod", "pod-large")}
            if "load" in SECTIONS:
                runs, rss = run_load(servers, work, bins)
                results["load"] = {"servers": list(servers), "runs": runs, "peak_rss_mib": rss}
            if "apiserver" in SECTIONS:
                ports = {"lockstep": op_port, "cr": servers["cr"]["port"]} if "cr" in servers else {"lockstep": op_port}
                if "cr" not in ports:
                    raise SystemExit("bench: the apiserver section needs the cr server (SERVERS)")
                results["apiserver"] = run_apiserver(cluster, work, bins, ports)
                results["operator_peak_rss_mib"] = peak_rss_mib(op.pid)
            # The sections' operator runs the RuntimeEnv controller for every namespace:
            # it would resolve the scale section's objects before the controller measured.
            op.terminate()
            op.wait(timeout=30)
        else:
            results["versions"] = versions(bins)
        if "scale" in SECTIONS:
            results["scale"] = run_scale(cluster, procs, work, bins)
        if "closure" in SECTIONS:
            results["closure"] = run_closure()
    finally:
        procs.stop_all()
        if cluster:
            cluster.down()
        if not ENV.get("KEEP_WORK"):
            shutil.rmtree(work, ignore_errors=True)
    results["loadavg_after"] = " ".join(open("/proc/loadavg").read().split()[:3])
    results = merge_previous(results)
    table = summarize(results)
    os.makedirs(os.path.join(ROOT, "bench/results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench/results", results["file"]), "w") as f:
        json.dump(results, f, indent=1)
    write_docs(results, table)
    print(table)


if __name__ == "__main__":
    main()
