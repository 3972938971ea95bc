#!/usr/bin/env python3
"""A fleet rollout on simulated clusters (issue 31, must-show 5).

One hub, N serving clusters and one registry on this machine, as
tests/fleet/fleet_cluster_test.cc sets them up, at a size the test cannot run:

  hub       a control plane (tests/cluster/cluster.sh) whose lockstep-operator runs
            --controllers=runtimeenv,modelrelease,modelrollout --fleet-poll-interval=2s
            --cluster-name=hub. It is also the gate cluster: release v1 of model gpt2
            passes its eval gate (a KWOK Job pod) and publishes the signed decision.
  c01..cNN  a control plane each (cluster.sh up --nodes cpu: two KWOK CPU nodes, no
            GPU nodes, started one after the other) and a lockstep-operator with
            --cluster-name=cNN, its own signing key and its own registry user. Release
            v1: an evidence stage {stages: [eval], trustPolicy: gates} (the hub's
            decision, verified), then prod (2 replicas, one canary step of 50% paused
            PAUSE) with fleet: {trustPolicy: hub}.
  registry  tests/cluster/registry.sh (docker-registry 2.8, TLS, htpasswd), one user per
            cluster, behind a counting proxy in the harness (TLS with the registry's
            own certificate): every request is forwarded as it came and logged with
            the time, the Basic-auth user (so the cluster), the method, path and status.
            A request sent without credentials (a new client's first: the referrers API
            probe, which docker-registry 2.8 answers 404, and the request its 401
            challenge answers) is counted for the user whose retry of the challenged
            request comes next (within 5 s), else as "unattributed".

Every operator runs as the chart deploys it (CRDs, the chart's RBAC and admission
policies rendered by helm, the webhook configurations pointed at 127.0.0.1:PORT, a
ServiceAccount token kubeconfig, leader election, JSON logs). The hub and the
serving clusters share nothing but the registry.

Run: the serving releases are applied and each waits for its permit (Ready reason
WaitingForPermit); IDLE seconds of that are measured; then the hub gets a
ModelRollout of WAVES waves over the N clusters (in name order, the first wave the
smallest), maxFailures 0, minSuccessTime MIN_SUCCESS; the run ends when the hub
says Succeeded, and SETTLE more seconds are measured.

Measured (nothing read from the operators' own metrics):
  - per wave: the permit's issuedAt and its arrival in the registry (the proxy's time
    of the PUT of its manifest, matched by the referrer digest that `lockstep fleet
    status -o json` lists), and the last Promoted prod record of the wave's clusters
    (its `since`, and its arrival in the registry the same way); also each cluster's
    canary start and Promoted phase as a watch on its API server sees them;
  - the rollout's total time: the ModelRollout created -> the hub's Succeeded (the
    harness polls it every second) and -> the open permit in the registry;
  - API requests per cluster per minute: each kube-apiserver's audit log (only the
    operator's ServiceAccount, at Metadata level), in the idle, rollout and settle
    windows; apiserver_request_total's delta (all clients) beside it;
  - registry requests per cluster per minute: the proxy's log, same windows;
  - operator CPU seconds (utime+stime, /proc) per window and peak RSS (VmHWM);
  - memory: each cluster's control-plane RSS (etcd, kube-apiserver, controller-manager,
    scheduler, KWOK) at the rollout's end, the sum of every process of the run
    (sampled every 5 s, its peak) and MemAvailable (its lowest); the 1-minute load
    average's peak.

    bench/fleet.sh                            # 20 serving clusters in 4 waves (the table)
    bench/fleet.sh --clusters 8 --waves 2     # another size
    bench/fleet.sh --smoke                    # 3 clusters in 2 waves; records nothing

Environment: IDLE (60 / 20 s), SETTLE (60 / 20 s), MIN_SUCCESS (10s), PAUSE (4s),
WARMUP (3s: KWOK's warm-up of serving pods), TIMEOUT (900 s per wait), RECORD (1 / 0:
write bench/results/fleet-<date>.json and the fleet block of docs/benchmarks.md),
BUILD (build), OPERATOR (another lockstep-operator binary for every cluster),
HUB_OPERATOR (another binary for the hub only), SKIP_BUILD=1, KEEP_WORK=1 (keep the
work dir: logs, audit logs, the proxy log; the clusters are taken down anyway unless
KEEP_CLUSTERS=1). Exit 1 when the rollout does not succeed or a measure is missing.
"""
import argparse
import base64
import datetime
import hashlib
import http.client
import http.server
import json
import os
import platform
import random
import re
import shlex
import signal
import socket
import socketserver
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = os.environ
ap = argparse.ArgumentParser(description="the fleet benchmark (see the module docstring)")
ap.add_argument("--smoke", action="store_true", help="3 clusters in 2 waves; records nothing")
ap.add_argument("--clusters", type=int, help="serving clusters (default 20)")
ap.add_argument("--waves", type=int, help="waves (default 4)")
ARGS = ap.parse_args()
SMOKE = ARGS.smoke


def knob(name, full, smoke, conv=str):
    return conv(ENV.get(name, smoke if SMOKE else full))


CLUSTERS = ARGS.clusters or (3 if SMOKE else 20)
WAVES = ARGS.waves or (2 if SMOKE else 4)
IDLE = knob("IDLE", "60", "20", int)
SETTLE = knob("SETTLE", "60", "20", int)
MIN_SUCCESS = knob("MIN_SUCCESS", "10s", "10s")
PAUSE = knob("PAUSE", "4s", "4s")
WARMUP = knob("WARMUP", "3s", "3s")
TIMEOUT = knob("TIMEOUT", "900", "900", int)
# A serving cluster is started only while MemAvailable stays above MIN_AVAILABLE MiB with
# CLUSTER_MIB more in use (a control plane and an operator: about 700 MiB measured).
MIN_AVAILABLE = knob("MIN_AVAILABLE", "2560", "2560", int)
CLUSTER_MIB = knob("CLUSTER_MIB", "800", "800", int)
RECORD = knob("RECORD", "1", "0") == "1"
BUILD = ENV.get("BUILD", os.path.join(ROOT, "build"))
OPERATOR = ENV.get("OPERATOR", os.path.join(BUILD, "cmd/lockstep-operator"))
HUB_OPERATOR = ENV.get("HUB_OPERATOR", OPERATOR)
CLI = os.path.join(BUILD, "cmd/lockstep/lockstep")
SYS_NS, RELEASE_NAME, NS, MODEL, REPO = "lockstep-system", "lockstep", "ml", "gpt2", "models/fleet"
OPERATOR_USER = f"system:serviceaccount:{SYS_NS}:{RELEASE_NAME}"
# The test world's runtime (tests/support/release_world.cc): every cluster resolves the same closure.
IMAGE = "registry.example/runtimes/torch@sha256:4f1c" + "0" * 59 + "2"
LOCK = "numpy==1.26.4 --hash=sha256:" + "a" * 64 + "\n"

T0 = time.monotonic()


def log(*a):
    print(f"fleet: [{time.monotonic() - T0:.0f}s]", *a, file=sys.stderr, flush=True)


def sh(cmd, check=True, **kw):
    r = subprocess.run(cmd, text=True, capture_output=True, **kw)
    if check and r.returncode != 0:
        raise SystemExit(f"fleet: {' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r


def wait_for(what, fn, timeout=None, every=1.0):
    deadline = time.monotonic() + (timeout or TIMEOUT)
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(every)
    raise SystemExit(f"fleet: timed out after {timeout or TIMEOUT}s waiting for {what}")


def pick_port():
    """A free port outside the kernel's ephemeral range, which the operators' many short
    registry connections draw from (as tests/support/cluster_env.cc's freePort)."""
    for _ in range(500):
        port = random.randint(16000, 31999)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise SystemExit("fleet: no free port")


def rfc3339(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def proc_stat(pid):
    """(CPU seconds, VmRSS MiB, VmHWM MiB) of one process; Nones once it is gone."""
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


def mem_available_mib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return None


# ---- the registry and the counting proxy --------------------------------------------------


class Registry:
    """tests/cluster/registry.sh with one htpasswd user per cluster (restarted to read them)."""

    def __init__(self, work, users):
        self.dir = os.path.join(work, "registry")
        script = os.path.join(ROOT, "tests/cluster/registry.sh")
        out = sh([script, "up", "--dir", self.dir, "--owner-pid", str(os.getpid())]).stdout
        env = dict(re.findall(r"export (\w+)=(\S+)", out))
        self.upstream_port = int(env["LOCKSTEP_REGISTRY_HOST"].rsplit(":", 1)[1])
        self.ca = env["LOCKSTEP_REGISTRY_CA"]
        self.harness_user = (env["LOCKSTEP_REGISTRY_USERNAME"], env["LOCKSTEP_REGISTRY_PASSWORD"])
        self.passwords = {u: hashlib.sha256(f"{u}{time.time()}{os.getpid()}".encode()).hexdigest()[:24]
                          for u in users}
        for u, p in self.passwords.items():
            sh(["htpasswd", "-Bb", os.path.join(self.dir, "htpasswd"), u, p])
        sh([script, "stop", "--dir", self.dir])
        sh([script, "start", "--dir", self.dir])
        self.version = sh(["docker-registry", "--version"], check=False).stdout.split()[2:3]
        # A directory holding only the CA, for the CLI's --cert-dir.
        self.cert_dir = os.path.join(work, "registry-ca")
        os.makedirs(self.cert_dir, exist_ok=True)
        sh(["cp", self.ca, os.path.join(self.cert_dir, "ca.crt")])

    def authfile(self, path, host, user):
        password = self.passwords.get(user) or self.harness_user[1]
        with open(path, "w") as f:
            json.dump({"auths": {host: {"username": user, "password": password}}}, f)
        os.chmod(path, 0o600)
        return path

    def down(self):
        sh([os.path.join(ROOT, "tests/cluster/registry.sh"), "down", "--dir", self.dir], check=False)


class RegistryProxy:
    """The registry's TLS front: forwards each request unchanged (Host kept, so the registry's
    Location URLs name the proxy) and logs (time done, user, method, path, status)."""

    def __init__(self, registry):
        self.lock = threading.Lock()
        self.log = []          # [t, user or None, method, path, status]
        self.anonymous = []    # indexes of requests without credentials not yet attributed
        self.upstream = ("127.0.0.1", registry.upstream_port)
        up_ctx = ssl.create_default_context(cafile=registry.ca)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _forward(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                user = None
                auth = self.headers.get("Authorization", "")
                if auth.startswith("Basic "):
                    user = base64.b64decode(auth[6:]).decode(errors="replace").split(":", 1)[0]
                c = http.client.HTTPSConnection(*proxy.upstream, context=up_ctx, timeout=60)
                hdrs = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "content-length")}
                c.request(self.command, self.path, body=body, headers=hdrs)
                r = c.getresponse()
                data = r.read()
                c.close()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() in ("connection", "transfer-encoding", "content-length"):
                        continue
                    self.send_header(k, v)
                length = r.getheader("Content-Length") if self.command == "HEAD" else str(len(data))
                self.send_header("Content-Length", length or "0")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                proxy.record(user, self.command, self.path, r.status)

            do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = _forward

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            request_queue_size = 128

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        tls = os.path.join(registry.dir, "tls")
        ctx.load_cert_chain(os.path.join(tls, "registry.crt"), os.path.join(tls, "registry.key"))
        for _ in range(20):
            try:
                self.server = Server(("127.0.0.1", pick_port()), Handler)
                break
            except OSError:
                continue
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True,
                                             do_handshake_on_connect=False)
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def record(self, user, method, path, status):
        t = time.time()
        path = path.split("?", 1)[0]
        with self.lock:
            self.anonymous = [i for i in self.anonymous if t - self.log[i][0] < 5]
            if user is None:
                self.anonymous.append(len(self.log))
            else:
                # The retry of a challenged request: the challenge, and the same client's
                # request without credentials just before it (its referrers probe), are its user's.
                hit = next((i for i in self.anonymous if self.log[i][4] == 401 and
                            self.log[i][2:4] == [method, path]), None)
                if hit is not None:
                    mine = [hit]
                    before = [i for i in self.anonymous if i < hit and self.log[i][4] != 401 and
                              self.log[hit][0] - self.log[i][0] < 1]
                    mine += before[-1:]
                    for i in mine:
                        self.log[i][1] = user
                    self.anonymous = [i for i in self.anonymous if i not in mine]
            self.log.append([t, user, method, path, status])

    def entries(self):
        with self.lock:
            return [list(e) for e in self.log]

    def stop(self):
        self.server.shutdown()


def push_test_image(host, ca, user, password, salt):
    """A small image pushed by the OCI API (a config and a layer blob, an OCI manifest by
    digest), as tests/support/registry_world.cc's pushTestImage; returns its digest."""
    ctx = ssl.create_default_context(cafile=ca)
    auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    h, p = host.rsplit(":", 1)

    def req(method, path, body=None, headers=None):
        c = http.client.HTTPSConnection(h, int(p), context=ctx, timeout=30)
        c.request(method, path, body=body, headers=dict(headers or {}, Authorization=auth))
        r = c.getresponse()
        data = r.read()
        c.close()
        if r.status >= 300:
            raise SystemExit(f"fleet: push {method} {path}: HTTP {r.status}: {data[:300]!r}")
        return r

    def blob(data):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        loc = req("POST", f"/v2/{REPO}/blobs/uploads/").getheader("Location")
        loc = re.sub(r"^https://[^/]+", "", loc)
        req("PUT", loc + ("&" if "?" in loc else "?") + "digest=" + digest, body=data,
            headers={"Content-Type": "application/octet-stream"})
        return digest, len(data)

    config = json.dumps({"architecture": "amd64", "os": "linux", "lockstep-test": salt}).encode()
    layer = f"checkpoint bytes of {salt}\n".encode()
    cd, cn = blob(config)
    ld, ln = blob(layer)
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                      "digest": cd, "size": cn},
                           "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                                       "digest": ld, "size": ln}]}, indent=2).encode()
    digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    req("PUT", f"/v2/{REPO}/manifests/{digest}", body=manifest,
        headers={"Content-Type": "application/vnd.oci.image.manifest.v1+json"})
    return digest


# ---- a cluster and its operator ------------------------------------------------------------


class Cluster:
    """One control plane (cluster.sh up --nodes cpu) with the operator ServiceAccount's audit log."""

    def __init__(self, name, work):
        self.name, self.work = name, work
        self.dir = os.path.join(work, "clusters", name)
        self.audit = os.path.join(work, "audit", name, "audit.log")
        self.op, self.op_log = None, None

    def up(self):
        os.makedirs(os.path.dirname(self.audit), exist_ok=True)
        policy = os.path.join(os.path.dirname(self.audit), "policy.yaml")
        with open(policy, "w") as f:
            f.write("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n"
                    f"- level: Metadata\n  users: [\"{OPERATOR_USER}\"]\n- level: None\n")
        env = dict(ENV, LOCKSTEP_APISERVER_EXTRA_ARGS=(
            f"--audit-policy-file={policy} --audit-log-path={self.audit} --audit-log-format=json "
            "--audit-log-maxsize=2000 --audit-log-mode=batch"))
        sh([os.path.join(ROOT, "tests/cluster/cluster.sh"), "up", "--dir", self.dir, "--nodes", "cpu",
            "--owner-pid", str(os.getpid()),
            "--warmup", WARMUP], env=env)
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.tools = open(os.path.join(self.dir, "tools-bin")).read().strip()
        self.env = dict(ENV, KUBECONFIG=self.kubeconfig)
        ports = dict(line.strip().split("=", 1) for line in open(os.path.join(self.dir, "ports.env")) if "=" in line)
        self.api_port = int(ports["API_PORT"])
        certs = os.path.join(self.dir, "certs")
        self.ctx = ssl.create_default_context(cafile=os.path.join(certs, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(certs, "admin.crt"), os.path.join(certs, "admin.key"))

    def kubectl(self, *args, stdin=None, check=True):
        return sh([os.path.join(self.tools, "kubectl"), *args], check=check, input=stdin, env=self.env)

    def apply(self, *objs):
        self.kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objs)}))

    def get(self, path):
        """GET of the API as the admin, parsed; None on an error."""
        try:
            c = http.client.HTTPSConnection("127.0.0.1", self.api_port, context=self.ctx, timeout=10)
            c.request("GET", path)
            r = c.getresponse()
            data = r.read()
            c.close()
            return json.loads(data) if r.status == 200 else None
        except (OSError, ValueError, http.client.HTTPException):
            return None

    def request_total(self):
        c = http.client.HTTPSConnection("127.0.0.1", self.api_port, context=self.ctx, timeout=10)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("apiserver_request_total{"))

    def component_pids(self):
        pids = {}
        d = os.path.join(self.dir, "pids")
        for f in os.listdir(d):
            if f.endswith(".pid") and f != "watcher.pid":
                pids[f[:-4]] = int(open(os.path.join(d, f)).read().strip())
        return pids

    def control_plane_rss(self):
        return sum(proc_stat(p)[1] or 0 for p in self.component_pids().values())

    def install_operator_pieces(self, webhook_port):
        """CRDs, the chart's ServiceAccount, RBAC and admission policies, and its webhook
        configurations pointed at 127.0.0.1:webhook_port (tests/support/operator_process.cc)."""
        self.kubectl("apply", "-f", os.path.join(ROOT, "crds"))
        self.kubectl("wait", "--for", "condition=Established", "-f", os.path.join(ROOT, "crds"), "--timeout=60s")
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYS_NS}})
        helm = [os.path.join(self.tools, "helm"), "template", RELEASE_NAME, os.path.join(ROOT, "helm/lockstep"),
                "--namespace", SYS_NS, "--set", "image.repository=registry.example/lockstep/operator",
                "--set", "image.digest=sha256:" + "0" * 64, "--set", "admission.mode=webhook"]
        shows = []
        for t in ("serviceaccount", "rbac", "anchor-policy", "status-policy"):
            if os.path.exists(os.path.join(ROOT, "helm/lockstep/templates", t + ".yaml")):
                shows += ["--show-only", f"templates/{t}.yaml"]
        self.kubectl("apply", "-n", SYS_NS, "-f", "-", stdin=sh(helm + shows, env=self.env).stdout)
        hooks = self.kubectl("create", "--dry-run=client", "-o", "json", "-f", "-",
                             stdin=sh(helm + ["--show-only", "templates/webhooks.yaml"], env=self.env).stdout).stdout
        dec, i, objs = json.JSONDecoder(), 0, []
        while i < len(hooks):
            while i < len(hooks) and hooks[i].isspace():
                i += 1
            if i >= len(hooks):
                break
            o, i = dec.raw_decode(hooks, i)
            objs.extend(o.get("items", [o]))
        for o in objs:
            for w in o.get("webhooks", []):
                path = w["clientConfig"]["service"]["path"]
                w["clientConfig"] = {"url": f"https://127.0.0.1:{webhook_port}{path}"}
        self.apply(*objs)

    def token_kubeconfig(self):
        token = self.kubectl("create", "token", RELEASE_NAME, "-n", SYS_NS, "--duration=24h").stdout.strip()
        ca = self.kubectl("config", "view", "--raw", "-o",
                          "jsonpath={.clusters[0].cluster.certificate-authority-data}").stdout
        path = os.path.join(self.work, f"{self.name}.kubeconfig")
        with open(path, "w") as f:
            f.write(f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: "
                    f"'https://127.0.0.1:{self.api_port}', certificate-authority-data: {ca}}}}}]\n"
                    f"users: [{{name: lockstep, user: {{token: {token}}}}}]\n"
                    "contexts: [{name: c, context: {cluster: c, user: lockstep}}]\ncurrent-context: c\n")
        os.chmod(path, 0o600)
        return path

    def start_operator(self, port, binary, extra):
        """The operator as tests/support/operator_process.cc starts it, its webhooks on `port`
        (install_operator_pieces(port) first)."""
        kc = self.token_kubeconfig()
        d = os.path.join(self.work, "operators", self.name)
        os.makedirs(d, exist_ok=True)
        portfile = os.path.join(d, "port")
        self.op_log = os.path.join(d, "operator.log")
        args = [binary, f"--kubeconfig={kc}", f"--namespace={SYS_NS}", "--bind-address=127.0.0.1",
                f"--webhook-port={port}", "--metrics-port=0", "--health-port=0", "--webhook-ip=127.0.0.1",
                f"--webhook-service={RELEASE_NAME}", f"--webhook-config={RELEASE_NAME}",
                f"--mutating-webhook-config={RELEASE_NAME}", f"--port-file={portfile}", "--leader-elect",
                "--log-format=json", *extra]
        self.op = subprocess.Popen(args, stdout=open(self.op_log, "w"), stderr=subprocess.STDOUT,
                                   start_new_session=True)

        def up():
            if self.op.poll() is not None:
                raise SystemExit(f"fleet: the operator of {self.name} exited:\n" + self.log_tail())
            return os.path.exists(portfile) and open(portfile).read().strip()
        wait_for(f"the operator of {self.name} serving", up, 60, 0.2)

        def patched():
            for kind in ("validatingwebhookconfiguration", "mutatingwebhookconfiguration"):
                o = self.kubectl("get", kind, RELEASE_NAME, "-o", "json", check=False)
                if o.returncode != 0 or not json.loads(o.stdout)["webhooks"][0]["clientConfig"].get("caBundle"):
                    return False
            return True
        wait_for(f"the caBundle of {self.name}'s webhooks", patched, 60, 0.5)

    def log_tail(self, n=4000):
        try:
            return open(self.op_log).read()[-n:]
        except OSError:
            return ""

    def stop_operator(self):
        if self.op and self.op.poll() is None:
            self.op.terminate()
            try:
                self.op.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.op.kill()
                self.op.wait()

    def down(self):
        self.stop_operator()
        if ENV.get("KEEP_CLUSTERS") != "1":
            sh([os.path.join(ROOT, "tests/cluster/cluster.sh"), "down", "--dir", self.dir], check=False)


class ReleaseWatch:
    """A watch of the ModelReleases in NS of one cluster: the first time each phase is seen."""

    def __init__(self, cluster):
        self.c, self.first, self.last = cluster, {}, {}
        self.stopped = False
        threading.Thread(target=self._run, daemon=True).start()

    def _seen(self, o):
        t = time.time()
        name = o["metadata"]["name"]
        st = o.get("status", {})
        phase = st.get("phase", "")
        reason = next((c.get("reason", "") for c in st.get("conditions", []) if c.get("type") == "Ready"), "")
        self.last[name] = (phase, reason)
        self.first.setdefault((name, phase), t)

    def _run(self):
        path = f"/apis/lockstep.dev/v1alpha1/namespaces/{NS}/modelreleases"
        while not self.stopped:
            lst = self.c.get(path)
            if lst is None:
                time.sleep(1)
                continue
            for o in lst["items"]:
                self._seen(o)
            try:
                conn = http.client.HTTPSConnection("127.0.0.1", self.c.api_port, context=self.c.ctx, timeout=90)
                conn.request("GET", f"{path}?watch=1&allowWatchBookmarks=true&timeoutSeconds=60"
                                    f"&resourceVersion={lst['metadata']['resourceVersion']}")
                r = conn.getresponse()
                while not self.stopped:
                    line = r.readline()
                    if not line:
                        break
                    ev = json.loads(line)
                    if ev.get("type") in ("ADDED", "MODIFIED"):
                        self._seen(ev["object"])
                conn.close()
            except (OSError, ValueError, http.client.HTTPException):
                time.sleep(1)

    def stop(self):
        self.stopped = True


class Sampler:
    """Every 5 s: the RSS of every process of the run (control planes, operators, registry)
    and MemAvailable; keeps the peak sum and the lowest MemAvailable."""

    def __init__(self, fleet):
        self.fleet, self.peak_rss, self.min_available, self.peak_load = fleet, 0.0, None, 0.0
        self.stopped = False
        threading.Thread(target=self._run, daemon=True).start()

    def total_rss(self):
        pids = []
        for c in self.fleet.all_clusters():
            try:
                pids += list(c.component_pids().values())
            except OSError:
                pass
            if c.op:
                pids.append(c.op.pid)
        try:
            pids.append(int(open(os.path.join(self.fleet.registry.dir, "pids/registry.pid")).read()))
        except (OSError, ValueError, AttributeError):
            pass
        pids.append(os.getpid())
        return sum(proc_stat(p)[1] or 0 for p in pids)

    def _run(self):
        while not self.stopped:
            self.peak_rss = max(self.peak_rss, self.total_rss())
            self.peak_load = max(self.peak_load, float(open("/proc/loadavg").read().split()[0]))
            a = mem_available_mib()
            self.min_available = a if self.min_available is None else min(self.min_available, a)
            time.sleep(5)

    def stop(self):
        self.stopped = True


# ---- the fleet -----------------------------------------------------------------------------


def wave_sizes(n, w):
    """n clusters in w waves, as even as can be, the first waves the smaller."""
    base, extra = divmod(n, w)
    return [base + (1 if i >= w - extra else 0) for i in range(w)]


class Fleet:
    def __init__(self, work):
        self.work = work
        self.names = [f"c{i + 1:02d}" for i in range(CLUSTERS)]
        self.hub = Cluster("hub", work)
        self.serving = [Cluster(n, work) for n in self.names]
        self.registry = self.proxy = None
        self.keys = os.path.join(work, "keys")

    def all_clusters(self):
        return [self.hub] + self.serving

    def truncate(self, n):
        """Only the first n serving clusters (those that fit in memory) take part."""
        self.serving, self.names = self.serving[:n], self.names[:n]

    def wave_plan(self):
        waves, i = [], 0
        for k, size in enumerate(wave_sizes(len(self.names), min(WAVES, len(self.names)))):
            waves.append({"name": f"w{k + 1}", "clusters": self.names[i:i + size]})
            i += size
        return waves

    def make_keys(self):
        os.makedirs(self.keys, exist_ok=True)
        for n in ["hub"] + self.names:
            k = os.path.join(self.keys, n)
            sh(["openssl", "ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out", k + ".sec1"])
            sh(["openssl", "pkcs8", "-topk8", "-nocrypt", "-in", k + ".sec1", "-out", k + ".pem"])
            sh(["openssl", "ec", "-in", k + ".pem", "-pubout", "-out", k + ".pub"])

    def prepare(self, c, policies):
        """The cluster's signing key and registry user, its SigningConfig, and TrustPolicies
        (name -> (key names, stages)), as fleet_cluster_test.cc's prepareCluster."""
        user = c.name
        pem = os.path.join(self.keys, c.name + ".pem")
        auth = self.registry.authfile(os.path.join(self.work, f"{c.name}-push.json"), self.proxy.host, user)
        c.kubectl("create", "secret", "generic", "fleet-key", "-n", SYS_NS, f"--from-file=key.pem={pem}")
        c.kubectl("create", "secret", "generic", "fleet-registry", "-n", SYS_NS,
                  "--type=kubernetes.io/dockerconfigjson", f"--from-file=.dockerconfigjson={auth}")
        repos = [self.proxy.host + "/models/"]
        objs = [{"apiVersion": "lockstep.dev/v1alpha1", "kind": "SigningConfig", "metadata": {"name": "fleet"},
                 "spec": {"repositories": repos, "keySecretRef": {"name": "fleet-key"},
                          "registryCredentialsSecretRef": {"name": "fleet-registry"}}}]
        for name, (keys, stages) in policies.items():
            objs.append({"apiVersion": "lockstep.dev/v1alpha1", "kind": "TrustPolicy", "metadata": {"name": name},
                         "spec": {"keys": [{"name": k, "publicKey": open(os.path.join(self.keys, k + ".pub")).read()}
                                           for k in keys],
                                  "rules": [{"repositories": repos, "stages": stages, "keys": keys}]}})
        c.apply(*objs)

    def runtime(self, c):
        c.apply({"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": NS, "labels": {"lockstep.dev/enforce": "enforce"}}},
                {"apiVersion": "lockstep.dev/v1alpha1", "kind": "RuntimeEnv",
                 "metadata": {"name": "torch", "namespace": NS},
                 "spec": {"image": IMAGE, "lock": {"inline": LOCK}}})
        c.kubectl("wait", "--for=condition=Ready", "rte/torch", "-n", NS, "--timeout=120s")
        return c.kubectl("get", "rte/torch", "-n", NS, "-o", "jsonpath={.status.closureHash}").stdout.strip()

    def start_hub(self):
        c = self.hub
        log("starting the hub")
        c.up()
        c.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYS_NS}})
        # The operator's pieces first (its namespace and RBAC), then its secrets and policies.
        port = pick_port()
        c.install_operator_pieces(port)
        self.prepare(c, {"gates": (["hub"], ["eval"]), "hub": (["hub"], ["fleet"]),
                         "fleet-clusters": (self.names, ["prod"])})
        c.start_operator(port, HUB_OPERATOR, [f"--registry-ca-file={self.registry.ca}", "--cluster-name=hub",
                                        "--controllers=runtimeenv,modelrelease,modelrollout",
                                        "--fleet-poll-interval=2s"])
        self.hash = self.runtime(c)
        log("the hub runs the gate of release v1")
        gate_tmpl = {"metadata": {"annotations": {"lockstep.dev/test-termination-message": '{"score": 0.9}',
                                                  "lockstep.dev/test-duration": "1s"}},
                     "spec": {"containers": [{"name": "eval", "command": ["python", "gate.py"]}]}}
        c.apply(self.release({"name": "eval", "gate": {"template": gate_tmpl, "timeout": "5m",
                                                       "metrics": [{"name": "score", "min": 0.5}]}},
                             {"weight": 100}, fleet=False))

        def gated():
            o = c.get(f"/apis/lockstep.dev/v1alpha1/namespaces/{NS}/modelreleases/v1") or {}
            st = o.get("status", {})
            published = any(x.get("type") == "EvidencePublished" and x.get("status") == "True"
                            for x in st.get("conditions", []))
            return st.get("phase") == "Promoted" and published
        wait_for("the hub's release v1 Promoted with its evidence published", gated, 300)

    def release(self, first_stage, step, fleet=True):
        prod = {"name": "prod",
                "serving": {"template": {"spec": {"containers": [{"name": "server"}]}}, "replicas": 2, "port": 8080},
                "canary": {"steps": [step], "progressDeadline": "2m"}}
        spec = {"model": MODEL, "package": self.package, "runtimeEnvRef": {"name": "torch"},
                "closureHash": self.hash, "stages": [first_stage, prod]}
        if fleet:
            prod["fleet"] = {"trustPolicy": "hub"}
            spec["runtimeImage"] = IMAGE
        return {"apiVersion": "lockstep.dev/v1alpha1", "kind": "ModelRelease",
                "metadata": {"name": "v1", "namespace": NS}, "spec": spec}

    def start_serving(self, c):
        t = time.monotonic()
        c.up()
        port = pick_port()
        c.install_operator_pieces(port)
        self.prepare(c, {"gates": (["hub"], ["eval"]), "hub": (["hub"], ["fleet"])})
        c.start_operator(port, OPERATOR, [f"--registry-ca-file={self.registry.ca}", f"--cluster-name={c.name}"])
        h = self.runtime(c)
        if h != self.hash:
            raise SystemExit(f"fleet: {c.name} resolved closure {h}, the hub {self.hash}")
        c.apply(self.release({"name": "verified", "evidence": {"stages": ["eval"], "trustPolicy": "gates"}},
                             {"weight": 50, "pause": PAUSE}))
        self.watches[c.name] = ReleaseWatch(c)
        log(f"{c.name} up in {time.monotonic() - t:.0f}s; control plane RSS {c.control_plane_rss():.0f} MiB, "
            f"MemAvailable {mem_available_mib():.0f} MiB")

    def rollout(self):
        self.waves = waves = self.wave_plan()
        return {"apiVersion": "lockstep.dev/v1alpha1", "kind": "ModelRollout",
                "metadata": {"name": "fleet", "namespace": NS},
                "spec": {"package": self.package, "model": MODEL, "waves": waves,
                         "strategy": {"maxFailures": 0, "minSuccessTime": MIN_SUCCESS, "progressDeadline": "15m"},
                         "trustPolicy": "fleet-clusters"}}


# ---- measures ------------------------------------------------------------------------------


def audit_counts(path, t0, t1):
    """The operator's requests received in [t0, t1): total and by 'verb resource[/subresource]'."""
    seen, by = set(), {}
    if not os.path.exists(path):
        return None
    with open(path) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("user", {}).get("username") != OPERATOR_USER or e["auditID"] in seen:
                continue
            if not t0 <= rfc3339(e["requestReceivedTimestamp"]) < t1:
                continue
            seen.add(e["auditID"])
            o = e.get("objectRef", {})
            key = f"{e['verb']} {o.get('resource', e.get('requestURI', '?'))}" + (
                f"/{o['subresource']}" if o.get("subresource") else "")
            by[key] = by.get(key, 0) + 1
    return {"total": len(seen), "by": by}


def registry_counts(entries, t0, t1):
    """Proxy log entries in [t0, t1) by user: total, and by 'METHOD kind' (kind: the path's
    blobs/manifests/tags/referrers part)."""
    out = {}
    for t, user, method, path, status in entries:
        if not t0 <= t < t1:
            continue
        u = out.setdefault(user or "unattributed", {"total": 0, "by": {}})
        u["total"] += 1
        m = re.search(r"/(blobs/uploads|blobs|manifests|tags|referrers)/", path + "/")
        key = f"{method} {m.group(1) if m else path}" + (" 401" if status == 401 else "")
        u["by"][key] = u["by"].get(key, 0) + 1
    return out


def summary(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def sum_by(dicts):
    out = {}
    for d in dicts:
        for k, v in (d or {}).items():
            out[k] = out.get(k, 0) + v
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def measure_window(fleet, name, t0, t1, cpu0, cpu1, entries):
    minutes = (t1 - t0) / 60
    w = {"name": name, "start": t0, "end": t1, "seconds": t1 - t0, "clusters": {}}
    reg = registry_counts(entries, t0, t1)
    for c in fleet.all_clusters():
        a = audit_counts(c.audit, t0, t1)
        r = reg.get(c.name, {"total": 0, "by": {}})
        cpu = (cpu1.get(c.name) - cpu0.get(c.name)) if cpu0.get(c.name) is not None and \
            cpu1.get(c.name) is not None else None
        w["clusters"][c.name] = {
            "api_requests": a["total"] if a else None, "api_by": a["by"] if a else None,
            "api_per_min": a["total"] / minutes if a else None,
            "registry_requests": r["total"], "registry_by": r["by"], "registry_per_min": r["total"] / minutes,
            "operator_cpu_s": cpu}
    w["unattributed_registry_requests"] = reg.get("unattributed", {"total": 0})["total"]
    w["harness_registry_requests"] = reg.get(fleet.registry.harness_user[0], {"total": 0})["total"]
    serving = [w["clusters"][n] for n in fleet.names]
    w["serving"] = {k: summary([x[k] for x in serving]) for k in
                    ("api_per_min", "registry_per_min", "operator_cpu_s", "api_requests", "registry_requests")}
    w["serving_api_by"] = sum_by(x["api_by"] for x in serving)
    w["serving_registry_by"] = sum_by(x["registry_by"] for x in serving)
    return w


def arrival(entries, user, digest):
    """When `user`'s PUT of the manifest `digest` completed in the registry (None: not seen)."""
    for t, u, method, path, status in entries:
        if u == user and method == "PUT" and path.endswith("/manifests/" + digest) and status < 300:
            return t
    return None


def fleet_status(fleet):
    keys = ",".join(os.path.join(fleet.keys, n + ".pub") for n in ["hub"] + fleet.names)
    authfile = fleet.registry.authfile(os.path.join(fleet.work, "cli-auth.json"), fleet.proxy.host,
                                       fleet.registry.harness_user[0])
    r = sh([CLI, "fleet", "status", fleet.package, "--key", keys, "--authfile", authfile,
            "--cert-dir", fleet.registry.cert_dir, "-o", "json"], check=False)
    if r.returncode != 0:
        log("lockstep fleet status failed:", r.stdout, r.stderr)
        return None
    # The CLI names each signer by its key file: keep the key's name, not this machine's path.
    return json.loads(r.stdout.replace(fleet.keys + "/", "keys/"))


def wave_latencies(fleet, status, entries, t_create):
    waves = []
    permits = {p["wave"]: p for p in status["permits"]}
    records = {}
    for r in status["records"]:
        if r["outcome"] == "Promoted":
            records.setdefault(r["cluster"], r)
    for w in fleet.waves:
        p = permits.get(w["name"])
        out = {"wave": w["name"], "clusters": w["clusters"]}
        if p:
            out["permit_issued_at"] = p["issuedAt"]
            out["permit_in_registry"] = arrival(entries, "hub", p["referrer"])
        per = []
        for n in w["clusters"]:
            r = records.get(n)
            watch = fleet.watches[n].first
            per.append({"cluster": n, "record_since": r["since"] if r else None,
                        "record_in_registry": arrival(entries, n, r["referrer"]) if r else None,
                        "canary_seen": watch.get(("v1", "Canary")), "promoted_seen": watch.get(("v1", "Promoted"))})
        out["per_cluster"] = per
        if p and all(x["record_since"] for x in per):
            out["issued_to_last_since_s"] = max(rfc3339(x["record_since"]) for x in per) - rfc3339(p["issuedAt"])
        if out.get("permit_in_registry") and all(x["record_in_registry"] for x in per):
            out["registry_to_last_record_s"] = max(x["record_in_registry"] for x in per) - out["permit_in_registry"]
            out["registry_to_first_record_s"] = min(x["record_in_registry"] for x in per) - out["permit_in_registry"]
            out["permit_to_canary_s"] = summary([x["canary_seen"] - out["permit_in_registry"]
                                                 for x in per if x["canary_seen"]])
            out["canary_to_promoted_s"] = summary([x["promoted_seen"] - x["canary_seen"]
                                                   for x in per if x["promoted_seen"] and x["canary_seen"]])
            out["promoted_to_record_s"] = summary([x["record_in_registry"] - x["promoted_seen"]
                                                   for x in per if x["promoted_seen"]])
        out["permit_after_create_s"] = out["permit_in_registry"] - t_create if out.get("permit_in_registry") else None
        waves.append(out)
    open_permit = permits.get("*")
    open_at = arrival(entries, "hub", open_permit["referrer"]) if open_permit else None
    # The hub's reaction: from the wave's soak end (its last record's since + minSuccessTime)
    # to the next permit in the registry (the open permit after the last wave).
    soak = int(re.fullmatch(r"(\d+)s", MIN_SUCCESS).group(1)) if re.fullmatch(r"\d+s", MIN_SUCCESS) else None
    for k, w in enumerate(waves):
        nxt = waves[k + 1].get("permit_in_registry") if k + 1 < len(waves) else open_at
        since = [rfc3339(x["record_since"]) for x in w["per_cluster"] if x["record_since"]]
        if nxt and soak is not None and len(since) == len(w["per_cluster"]):
            w["soak_end_to_next_permit_s"] = nxt - (max(since) + soak)
    return waves, open_at


# ---- the report ----------------------------------------------------------------------------


def fmt(v, nd=1):
    return "-" if v is None else f"{v:,.{nd}f}"


def render(r):
    s = r["settings"]
    win = {w["name"]: w for w in r["windows"]}
    roll = win.get("rollout")
    md = [f"Measured by `{r['command']}` on {r['date']}: {r['machine']}, {r['memory_gib']} GiB; load average "
          f"{r['loadavg_before']} before, {r['loadavg_after']} after" +
          (f", {r['peak_loadavg_1m']:.1f} at its highest during the run" if r.get("peak_loadavg_1m") else "") +
          f". Kubernetes {r['versions']['kubernetes']}, "
          f"docker-registry {r['versions']['registry']}, lockstep-operator {r['versions']['lockstep']}. "
          f"Raw numbers: `bench/results/{r['file']}`.\n",
          f"1 hub (also the gate cluster) and {s['clusters']} serving clusters, each a control plane of its own "
          f"(etcd, kube-apiserver, controller-manager, scheduler, KWOK with 2 CPU nodes), started one after "
          f"the other in {fmt(r['startup_s'], 0)} s; one registry. Waves of "
          f"{'/'.join(str(len(w['clusters'])) for w in r['waves'])} clusters, maxFailures 0, minSuccessTime "
          f"{s['min_success']}; each serving release: evidence stage [eval] from the hub's decision, then "
          f"prod (2 replicas, one canary step of 50 % paused {s['pause']}, pods Ready {s['warmup']} after they "
          f"start) on the hub's permit. The hub polls the registry every 2 s.\n",
          "| wave | clusters | permit issuedAt → last Promoted record's since, s | permit in the registry → "
          "last record there, s | → first record, s | permit → canary started, s (median / max) | canary → "
          "Promoted, s (median) | Promoted → record in the registry, s (max) | soak over → next permit, s |",
          "|---|---|---|---|---|---|---|---|---|"]

    def mm(x, key="median"):
        return fmt((x or {}).get(key))
    for w in r["waves"]:
        md.append(f"| {w['wave']} | {len(w['clusters'])} | {fmt(w.get('issued_to_last_since_s'), 0)} | "
                  f"**{fmt(w.get('registry_to_last_record_s'))}** | {fmt(w.get('registry_to_first_record_s'))} | "
                  f"{mm(w.get('permit_to_canary_s'))} / {mm(w.get('permit_to_canary_s'), 'max')} | "
                  f"{mm(w.get('canary_to_promoted_s'))} | {mm(w.get('promoted_to_record_s'), 'max')} | "
                  f"{fmt(w.get('soak_end_to_next_permit_s'))} |")
    md += ["", f"The rollout: ModelRollout created → the hub's `Succeeded` in {fmt(r.get('rollout_s'))} s "
               f"(→ the open permit in the registry {fmt(r.get('open_permit_s'))} s); the first wave's permit "
               f"was in the registry {fmt(r['waves'][0].get('permit_after_create_s'))} s after the ModelRollout "
               "was created.\n",
           "| per cluster, per minute (median [min–max] over the serving clusters; the hub beside) | "
           "waiting for a permit | during the rollout | after it |", "|---|---|---|---|"]

    def cell(w, key, nd=0):
        if not w:
            return "-"
        sv = w["serving"].get(key)
        hub = w["clusters"]["hub"].get(key)
        if sv is None:
            return "-"
        return f"{fmt(sv['median'], nd)} [{fmt(sv['min'], nd)}–{fmt(sv['max'], nd)}]; hub {fmt(hub, nd)}"

    def row(name, key, nd=0):
        md.append(f"| {name} | {cell(win.get('idle'), key, nd)} | {cell(roll, key, nd)} | "
                  f"{cell(win.get('settle'), key, nd)} |")
    row("API requests (audit log: the operator's ServiceAccount)", "api_per_min")
    row("registry requests (the proxy's log, by the cluster's registry user)", "registry_per_min", 1)
    md.append("| window, s | " + " | ".join(fmt(win[k]["seconds"], 0) if k in win else "-"
                                           for k in ("idle", "rollout", "settle")) + " |")
    md.append("")
    if roll:
        md.append("| per serving cluster | median | min | max | hub |")
        md.append("|---|---|---|---|---|")
        for name, key in (("operator CPU seconds during the rollout", "operator_cpu_s"),):
            sv = roll["serving"].get(key) or {}
            md.append(f"| {name} | {fmt(sv.get('median'), 2)} | {fmt(sv.get('min'), 2)} | {fmt(sv.get('max'), 2)} | "
                      f"{fmt(roll['clusters']['hub'].get(key), 2)} |")
        m = r["memory"]
        sv = m["operator_peak_rss_mib"]
        md.append(f"| operator peak RSS, MiB | {fmt(sv['median'])} | {fmt(sv['min'])} | {fmt(sv['max'])} | "
                  f"{fmt(m['hub_operator_peak_rss_mib'])} |")
        cp = m["control_plane_rss_mib"]
        md.append(f"| control plane RSS at the rollout's end, MiB | {fmt(cp['median'], 0)} | {fmt(cp['min'], 0)} | "
                  f"{fmt(cp['max'], 0)} | {fmt(m['hub_control_plane_rss_mib'], 0)} |")
        md += ["", f"Memory: every process of the run together peaked at {fmt(m['peak_total_rss_mib'] / 1024, 1)} GiB "
                   f"RSS; MemAvailable went from {fmt(m['available_before_mib'] / 1024, 1)} GiB before the first "
                   f"cluster to {fmt(m['min_available_mib'] / 1024, 1)} GiB at its lowest (other sessions' work "
                   "included).\n"]
        top = list(roll["serving_api_by"].items())[:6]
        topr = list(roll["serving_registry_by"].items())[:6]
        md.append(f"- During the rollout, the serving operators' API requests (all {s['clusters']}): "
                  + ", ".join(f"{k} {v}" for k, v in top) + "; registry requests: "
                  + ", ".join(f"{k} {v}" for k, v in topr) + f"; {roll['unattributed_registry_requests']} "
                  "challenges (401) not matched to a client's retry.")
        md.append(f"- apiserver_request_total, all clients, during the rollout: median "
                  f"{fmt(r['apiserver_request_total_delta']['median'], 0)} per serving cluster "
                  f"(scheduler, controller-manager, KWOK and the harness's watch included).")
    return "\n".join(md) + "\n"


def write_docs(block):
    path = os.path.join(ROOT, "docs/benchmarks.md")
    doc = open(path).read()
    block = "<!-- fleet:begin -->\n" + block + "<!-- fleet:end -->"
    if "<!-- fleet:begin -->" in doc:
        doc = re.sub(r"<!-- fleet:begin -->.*?<!-- fleet:end -->", lambda _: block, doc, flags=re.S)
    else:
        doc += "\n## Fleet: 20 clusters in 4 waves\n\n" + block + "\n"
    open(path, "w").write(doc)


# ---- main ----------------------------------------------------------------------------------


def main():
    if WAVES < 1 or CLUSTERS < WAVES:
        raise SystemExit("fleet: --waves must be at least 1 and at most --clusters")
    if not ENV.get("SKIP_BUILD"):
        sh(["cmake", "-S", ROOT, "-B", BUILD, "-G", "Ninja"])
        sh(["cmake", "--build", BUILD, "--target", "lockstep-operator", "lockstep",
            "-j", ENV.get("LOCKSTEP_JOBS", "1")])
    work = tempfile.mkdtemp(prefix="lockstep-fleet-")
    now = datetime.datetime.now(datetime.timezone.utc)
    opts = (["--smoke"] if SMOKE else []) + ([f"--clusters {ARGS.clusters}"] if ARGS.clusters else []) + \
        ([f"--waves {ARGS.waves}"] if ARGS.waves else [])
    results = {"date": now.strftime("%Y-%m-%d %H:%M UTC"),
               "file": f"fleet-{now.strftime('%Y-%m-%d')}{'-smoke' if SMOKE else ''}.json",
               "command": " ".join(f"{k}={shlex.quote(ENV[k])}" for k in (
                   "IDLE", "SETTLE", "MIN_SUCCESS", "PAUSE", "WARMUP") if k in ENV) +
               (" " if any(k in ENV for k in ("IDLE", "SETTLE", "MIN_SUCCESS", "PAUSE", "WARMUP")) else "") +
               "bench/fleet.sh" + "".join(" " + o for o in opts),
               "loadavg_before": " ".join(open("/proc/loadavg").read().split()[:3]),
               "settings": {"clusters": CLUSTERS, "waves": WAVES, "idle_s": IDLE, "settle_s": SETTLE,
                            "min_success": MIN_SUCCESS, "pause": PAUSE, "warmup": WARMUP,
                            "fleet_poll_interval": "2s", "nodes_per_cluster": 2}}
    fleet, sampler, problems = Fleet(work), None, []
    fleet.watches = {}
    available_before = mem_available_mib()
    log(f"{CLUSTERS} serving clusters in {WAVES} waves; work dir {work}; MemAvailable {available_before:.0f} MiB")
    if CLUSTERS > 99:
        raise SystemExit("fleet: at most 99 clusters (names c01..c99)")
    try:
        fleet.registry = Registry(work, ["hub"] + fleet.names)
        fleet.proxy = RegistryProxy(fleet.registry)
        sampler = Sampler(fleet)
        fleet.make_keys()
        fleet.package = f"{fleet.proxy.host}/{REPO}@" + push_test_image(
            fleet.proxy.host, fleet.registry.ca, *fleet.registry.harness_user, f"fleet-{os.getpid()}")
        t_start = time.monotonic()
        fleet.start_hub()
        for i, c in enumerate(fleet.serving):
            if mem_available_mib() < MIN_AVAILABLE + CLUSTER_MIB:
                # Another control plane would leave the machine (shared) less than MIN_AVAILABLE:
                # run with the clusters already up, and say so.
                results["memory_stop"] = (f"started {i} of {CLUSTERS} serving clusters: MemAvailable "
                                          f"{mem_available_mib():.0f} MiB < {MIN_AVAILABLE} + {CLUSTER_MIB} MiB")
                log(results["memory_stop"])
                fleet.truncate(i)
                break
            fleet.start_serving(c)
        results["startup_s"] = time.monotonic() - t_start
        results["settings"]["clusters"] = len(fleet.names)
        results["settings"]["waves"] = len(fleet.wave_plan())
        if not fleet.names:
            raise SystemExit("fleet: no serving cluster fits in memory")

        def waiting():
            return all(fleet.watches[n].last.get("v1", ("", ""))[1] == "WaitingForPermit" for n in fleet.names)
        wait_for("every serving release waiting for its permit", waiting, TIMEOUT)
        log(f"all {CLUSTERS} clusters wait for a permit; measuring {IDLE}s of that")

        def cpu_now():
            return {c.name: proc_stat(c.op.pid)[0] for c in fleet.all_clusters()}

        def totals():
            return {c.name: c.request_total() for c in fleet.all_clusters()}
        marks = {"idle0": (time.time(), cpu_now())}
        time.sleep(IDLE)
        rt0 = totals()
        marks["idle1"] = (time.time(), cpu_now())
        fleet.hub.apply(fleet.rollout())
        t_create = time.time()
        log("ModelRollout created:", ", ".join(f"{w['name']} {','.join(w['clusters'])}" for w in fleet.waves))
        seen, hub_status = {}, {}

        def succeeded():
            o = fleet.hub.get(f"/apis/lockstep.dev/v1alpha1/namespaces/{NS}/modelrollouts/fleet") or {}
            st = o.get("status", {})
            hub_status.update(st)
            ph = st.get("phase", "")
            if ph and ph not in seen:
                seen[ph] = time.time()
                log("hub:", ph, st.get("message", "")[:200])
            if ph == "Aborted":
                raise SystemExit("fleet: the rollout aborted: " + json.dumps(st)[:3000])
            return ph == "Succeeded"
        try:
            wait_for("the ModelRollout Succeeded", succeeded, TIMEOUT, 1.0)
        except SystemExit:
            for n in fleet.names:
                log(n, fleet.watches[n].last.get("v1"))
            log("hub operator log tail:\n" + fleet.hub.log_tail())
            raise
        t_done = seen["Succeeded"]
        marks["rollout1"] = (time.time(), cpu_now())
        rt1 = totals()
        mem = {"control_plane_rss_mib": summary([c.control_plane_rss() for c in fleet.serving]),
               "hub_control_plane_rss_mib": fleet.hub.control_plane_rss()}
        log(f"Succeeded after {t_done - t_create:.1f}s; measuring {SETTLE}s after it")
        time.sleep(SETTLE)
        marks["settle1"] = (time.time(), cpu_now())
        time.sleep(3)  # the audit logs' batches are flushed
        entries = fleet.proxy.entries()
        results["windows"] = [
            measure_window(fleet, "idle", marks["idle0"][0], marks["idle1"][0], marks["idle0"][1],
                           marks["idle1"][1], entries),
            measure_window(fleet, "rollout", t_create, marks["rollout1"][0], marks["idle1"][1],
                           marks["rollout1"][1], entries),
            measure_window(fleet, "settle", marks["rollout1"][0], marks["settle1"][0], marks["rollout1"][1],
                           marks["settle1"][1], entries)]
        results["apiserver_request_total_delta"] = summary([rt1[n] - rt0[n] for n in fleet.names])
        results["apiserver_request_total_delta_hub"] = rt1["hub"] - rt0["hub"]
        status = fleet_status(fleet)
        results["fleet_status"] = status
        results["hub_status"] = hub_status
        if status:
            results["waves"], open_at = wave_latencies(fleet, status, entries, t_create)
        else:
            results["waves"], open_at = [{"wave": w["name"], "clusters": w["clusters"]} for w in fleet.waves], None
            problems.append("lockstep fleet status failed: no wave latencies")
        results["rollout_s"] = t_done - t_create
        results["open_permit_s"] = open_at - t_create if open_at else None
        hwm = {c.name: proc_stat(c.op.pid)[2] for c in fleet.all_clusters()}
        mem["operator_peak_rss_mib"] = summary([hwm[n] for n in fleet.names])
        mem["hub_operator_peak_rss_mib"] = hwm["hub"]
        mem["peak_total_rss_mib"] = sampler.peak_rss
        mem["min_available_mib"] = sampler.min_available
        mem["available_before_mib"] = available_before
        results["peak_loadavg_1m"] = sampler.peak_load
        results["memory"] = mem
        results["versions"] = {
            "kubernetes": json.loads(fleet.hub.kubectl("version", "-o", "json").stdout)["serverVersion"]["gitVersion"],
            "registry": (fleet.registry.version or ["?"])[0],
            "lockstep": sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], check=False).stdout.strip() or "?"}
        if ENV.get("KEEP_WORK"):
            with open(os.path.join(work, "registry-requests.json"), "w") as f:
                json.dump(entries, f)
    finally:
        if sampler:
            sampler.stop()
        for w in fleet.watches.values():
            w.stop()
        for c in reversed(fleet.all_clusters()):
            c.down()
        if fleet.proxy:
            fleet.proxy.stop()
        if fleet.registry:
            fleet.registry.down()
        if not ENV.get("KEEP_WORK"):
            sh(["rm", "-rf", work], check=False)
    results["loadavg_after"] = " ".join(open("/proc/loadavg").read().split()[:3])
    with open("/proc/cpuinfo") as f:
        m = re.search(r"model name\s*:\s*(.*)", f.read())
    results["machine"] = f"{m.group(1) if m else '?'}, {os.cpu_count()} cores, kernel {platform.release()}"
    results["memory_gib"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)
    block = render(results)
    print(block)
    for w in results["waves"]:
        if w.get("registry_to_last_record_s") is None:
            problems.append(f"wave {w['wave']}: no permit-to-record latency")
    for w in results["windows"]:
        for n, x in w["clusters"].items():
            if x["api_requests"] is None or x["operator_cpu_s"] is None:
                problems.append(f"{w['name']} window, {n}: no audit log or no CPU")
    if ENV.get("KEEP_WORK"):
        with open(os.path.join(work, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
    if RECORD:
        os.makedirs(os.path.join(ROOT, "bench/results"), exist_ok=True)
        with open(os.path.join(ROOT, "bench/results", results["file"]), "w") as f:
            json.dump(results, f, indent=1)
        write_docs(block)
    if problems:
        log("FAILED:\n  " + "\n  ".join(problems))
        sys.exit(1)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    main()
