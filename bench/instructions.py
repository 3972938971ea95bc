#!/usr/bin/env python3
"""Instructions per admission request, counted by valgrind's callgrind.

Wall-clock figures on a shared 2-core VM swing 2-3x with the neighbours' load;
an instruction count does not. This runs each given lockstep-webhook-dev binary
under `valgrind --tool=callgrind`, sends REQUESTS requests of each body (the
`pod` and `large` bodies of bench/run.py) at a low fixed rate over 4 keep-alive
TLS connections with bench/peers/go's loadgen, stops the server, and divides
the inclusive instruction counts of the request path by the requests served:

    bench/instructions.py [NAME=BINARY ...]     # default: beast=build/cmd/lockstep-webhook-dev
    bench/instructions.py before=/tmp/old/lockstep-webhook-dev beast=build/cmd/lockstep-webhook-dev

Columns: Session::onRead (HTTP request parsed -> handler -> response queued),
serve (decode, validate, encode, metrics and log recorders) and
decodeAdmissionReview. Environment: REQUESTS (300), PRELOAD (a library to
LD_PRELOAD into every server, e.g. jemalloc). Prints a Markdown table.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (bench/run.py: certificates, bodies, helpers)

REQUESTS = int(os.environ.get("REQUESTS", "300"))
RATES = {"pod": 30, "large": 5}  # slow enough that the server under valgrind keeps up
FUNCTIONS = {
    "Session::onRead": r"lockstep::webhooks::\(anonymous namespace\)::Session::onRead\(",
    "serve": r"lockstep::webhooks::\(anonymous namespace\)::serve\(",
    "decodeAdmissionReview": r"lockstep::webhooks::decodeAdmissionReview\(",
}


def inclusive(out_file):
    """Inclusive instruction counts of FUNCTIONS from a callgrind output file.

    callgrind_annotate splits a function's cost by the source file of the code
    (inlined library code has its own line: "simdjson.h:<function>"); the line
    of the function's own file includes the others, so the largest is taken.
    """
    r = run.sh(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out_file])
    counts = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+[^:\s]*:(.*)", line)
        if not m:
            continue
        for name, pattern in FUNCTIONS.items():
            if re.match(pattern, m.group(2)):
                counts[name] = max(counts.get(name, 0), int(m.group(1).replace(",", "")))
    return counts


def measure(name, binary, work, bins, body):
    port_file = os.path.join(work, f"{name}-{body}.port")
    out_file = os.path.join(work, f"{name}-{body}.callgrind")
    env = dict(os.environ)
    if os.environ.get("PRELOAD"):
        env["LD_PRELOAD"] = os.environ["PRELOAD"]
    rate = RATES[body]
    requests = REQUESTS if body == "pod" else max(rate, REQUESTS // 5)
    log = open(os.path.join(work, f"{name}-{body}.log"), "w")
    p = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}",
                          binary, "--config", f"{work}/lookups.json", "--port", "0",
                          "--port-file", port_file, "--cert-file", f"{work}/tls.crt",
                          "--key-file", f"{work}/tls.key", "--threads", "2", "--log-level", "warn"],
                         stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        port = run.eventually(f"{name} port", lambda: os.path.exists(port_file) and
                              open(port_file).read().strip(), timeout=120)
        r = run.sh([os.path.join(bins, "loadgen"), "-url", f"https://127.0.0.1:{port}/validate/pods",
                    "-body", f"{work}/{body}.json", "-ca", f"{work}/ca.crt", "-rate", str(rate),
                    "-duration", f"{requests // rate}s", "-conns", "4", "-threads", "1"])
        o = json.loads(r.stdout)
        served = o["latency"]["count"]
        if o["errors"] or o["dropped"] or served == 0:
            raise SystemExit(f"instructions: {name} {body}: {o['errors']} errors, "
                             f"{o['dropped']} dropped, {served} served")
    finally:
        p.terminate()
        p.wait(timeout=120)
    counts = inclusive(out_file)
    missing = [f for f in FUNCTIONS if f not in counts]
    if missing:
        raise SystemExit(f"instructions: {name}: no {missing} in {out_file} (symbols?)")
    return {f: counts[f] / served for f in FUNCTIONS}, served


def main():
    servers = dict(a.split("=", 1) for a in sys.argv[1:]) or \
        {"beast": os.path.join(run.BUILD, "cmd/lockstep-webhook-dev")}
    bins = run.sh([os.path.join(run.ROOT, "bench/peers/go/build.sh")]).stdout.strip()
    work = tempfile.mkdtemp(prefix="lockstep-instructions-")
    run.make_certs(work)
    closure_hash = "sha256:" + "b" * 64
    with open(f"{work}/lookups.json", "w") as f:
        json.dump({"runtimeEnvs": [{"namespace": run.NS, "name": "torch", "ready": True,
                                    "closureHash": closure_hash, "image": run.IMAGE}],
                   "namespaces": {run.NS: "enforce"}}, f)
    for body, large in (("pod", False), ("large", True)):
        with open(f"{work}/{body}.json", "w") as f:
            json.dump(run.review(run.pod_object(closure_hash, large)), f, separators=(",", ":"))
    print(f"Instructions per admitted request (callgrind inclusive counts / requests; "
          f"pod: {REQUESTS} requests at 30/s, large: {max(5, REQUESTS // 5)} at 5/s, over 4 connections; `bench/instructions.py`"
          f"{' with PRELOAD' if os.environ.get('PRELOAD') else ''}):\n")
    print("| body | server | " + " | ".join(FUNCTIONS) + " |")
    print("|---|---|" + "---|" * len(FUNCTIONS))
    for body in ("pod", "large"):
        size = os.path.getsize(f"{work}/{body}.json")
        for name, binary in servers.items():
            per, served = measure(name, binary, work, bins, body)
            print(f"| {body} ({size:,} B) | {name} | " +
                  " | ".join(f"{per[f] / 1000:,.1f} k" for f in FUNCTIONS) + " |", flush=True)
            time.sleep(0.5)


if __name__ == "__main__":
    main()
