#!/usr/bin/env python3
"""Content keys for tools/lint.sh's clang-tidy cache.

    tidy_cache.py BUILD_DIR FILE...

Prints one line per FILE: "FILE KEY", where KEY is a sha256 over everything that
decides clang-tidy's verdict on that translation unit:

- clang-tidy's version and every .clang-tidy file of the repository;
- the file's compile command (compile_commands.json), with the clone's and the
  build folder's absolute paths replaced by placeholders, so that another clone
  of the same commit gets the same key;
- the content of every file the translation unit read when it was last built:
  the .cc itself, each project header, each system header (ninja's deps log,
  `ninja -t deps`; a Debian upgrade of a library changes its headers, so the key).

KEY is "-" when the file has no valid deps entry (never built, or its object is
older than its deps): lint.sh then runs clang-tidy on it. A file's include set
can only change when some file already in it changes (its #include lines), and
that changes the key; so the deps of the last build are enough, even when a
source changed after it.
"""

import hashlib
import json
import os
import shlex
import subprocess
import sys


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    files = sys.argv[2:]
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True,
                          capture_output=True, text=True).stdout.strip()

    def norm(path: str) -> str:
        """A path with the build folder and the clone replaced by placeholders."""
        path = os.path.normpath(path)
        if path == build or path.startswith(build + os.sep):
            return "@BUILD@" + path[len(build):]
        if path == root or path.startswith(root + os.sep):
            return "@ROOT@" + path[len(root):]
        return path

    version = subprocess.run(["clang-tidy", "--version"], check=True,
                             capture_output=True).stdout
    configs = subprocess.run(["git", "ls-files", "-z", "--", "*.clang-tidy", ".clang-tidy"],
                             cwd=root, check=True, capture_output=True).stdout.split(b"\0")
    base = hashlib.sha256(version)
    for config in sorted(c for c in configs if c):
        base.update(config + b"\0")
        with open(os.path.join(root, config.decode()), "rb") as f:
            base.update(sha(f.read()).encode())

    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        commands = {os.path.normpath(os.path.join(e["directory"], e["file"])): e
                    for e in json.load(f)}

    # The object each file compiles to, from its command's -o.
    objects = {}
    for name in files:
        entry = commands.get(os.path.normpath(os.path.join(root, name)))
        if entry is None:
            continue
        args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
        if "-o" in args:
            objects[name] = (entry, args, args[args.index("-o") + 1])

    # ninja -t deps for all of them at once: "OBJ: #deps N, deps mtime M (VALID|STALE)"
    # followed by the indented dependencies (relative to the build folder).
    deps = {}
    if objects:
        out = subprocess.run(["ninja", "-C", build, "-t", "deps"] +
                             sorted({o for _, _, o in objects.values()}),
                             check=True, capture_output=True, text=True).stdout
        current = None
        for line in out.splitlines():
            if line and not line[0].isspace():  # a target's header, or "OBJ: deps not found"
                obj, _, rest = line.partition(": #deps")
                current = deps.setdefault(obj, []) if rest.endswith("(VALID)") else None
            elif line.strip() and current is not None:
                current.append(os.path.normpath(os.path.join(build, line.strip())))

    digests = {}

    def digest(path: str) -> str:
        if path not in digests:
            try:
                with open(path, "rb") as f:
                    digests[path] = sha(f.read())
            except OSError:
                digests[path] = "missing"
        return digests[path]

    for name in files:
        if name not in objects or not deps.get(objects[name][2]):
            print(name, "-")
            continue
        entry, args, obj = objects[name]
        key = base.copy()
        key.update(norm(entry["directory"]).encode() + b"\0")
        key.update(" ".join(norm(a) if a.startswith("/") else
                            a.replace(build, "@BUILD@").replace(root, "@ROOT@")
                            for a in args).encode() + b"\0")
        for shown, path in sorted({(norm(p), p) for p in deps[obj]}):
            key.update(f"{shown} {digest(path)}\n".encode())
        print(name, key.hexdigest())
    return 0


if __name__ == "__main__":
    sys.exit(main())
