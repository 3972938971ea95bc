#!/usr/bin/env python3
"""Content keys for tools/lint.sh's clang-tidy cache.

    tidy_cache.py BUILD_DIR FILE...
    tidy_cache.py --compile-db BUILD_DIR

Prints one line per FILE: "FILE KEY", where KEY is a sha256 over everything that
decides clang-tidy's verdict on that translation unit:

- clang-tidy's version and every .clang-tidy file of the repository;
- the file's compile command (compile_commands.json), with the clone's and the
  build folder's absolute paths replaced by placeholders, so that another clone
  of the same commit gets the same key;
- the content of every file the translation unit read when it was last built:
  the .cc itself, each project header, each system header (ninja's deps log,
  `ninja -t deps`; a Debian upgrade of a library changes its headers, so the key).

A unity build (LOCKSTEP_UNITY, the default) compiles a target's sources in
batches, CMakeFiles/<target>.dir/Unity/unity_N_cxx.cxx, each including a few .cc
files, and CMake's compile_commands.json lists those batches, not the .cc files.
Each .cc then gets the command CMake gives it without unity (the batch's command:
a batch holds sources of one target with no flags of their own, with that source
in place of the batch), and the headers its batch read (more than the .cc's own:
a header another file of its batch includes changes its key too, never less).
--compile-db writes those per-file commands, one entry per .cc, into
BUILD_DIR/lint/compile_commands.json, the database clang-tidy -p reads
(tools/lint.sh).

KEY is "-" when the file has no valid deps entry (never built, or its object is
older than its deps): lint.sh then runs clang-tidy on it. A file's include set
can only change when some file already in it changes (its #include lines), and
that changes the key; so the deps of the last build are enough, even when a
source changed after it.
"""

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys

UNITY = re.compile(r"^(?P<dir>.*/CMakeFiles/[^/]+\.dir)/Unity/unity_\d+_[a-z]+\.[a-z]+$")
INCLUDE = re.compile(r'^#include "([^"]+)"$', re.MULTILINE)


def per_file_commands(build: str, root: str) -> dict:
    """{absolute .cc path: (entry, args, object whose deps are its headers)} for every
    file compile_commands.json compiles, a unity batch's sources each on its own."""
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        entries = json.load(f)
    commands = {}
    for e in entries:
        source = os.path.normpath(os.path.join(e["directory"], e["file"]))
        args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
        obj = args[args.index("-o") + 1] if "-o" in args else None
        batch = UNITY.match(source)
        if batch is None:
            commands[source] = (e, args, obj)
            continue
        # The object CMake names without unity: <target>.dir/<path from the folder of
        # the target's CMakeLists.txt, ".." as "__">.o (the key's -o).
        src_dir = os.path.join(root, os.path.relpath(
            batch.group("dir").rsplit("/CMakeFiles/", 1)[0], build))
        obj_dir = os.path.relpath(batch.group("dir"), e["directory"])
        with open(source, encoding="utf-8") as f:
            members = INCLUDE.findall(f.read())
        for member in members:
            member = os.path.normpath(member)
            rel = os.path.relpath(member, src_dir).replace("..", "__")
            own = [member if a == e["file"] or os.path.normpath(
                os.path.join(e["directory"], a)) == source else a for a in args]
            if obj is not None:
                own[args.index("-o") + 1] = os.path.join(obj_dir, rel + ".o")
            commands[member] = ({"directory": e["directory"], "file": member,
                                 "arguments": own}, own, obj)
    return commands


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True,
                          capture_output=True, text=True).stdout.strip()
    if sys.argv[1] == "--compile-db":
        build = os.path.abspath(sys.argv[2])
        db = [e for e, _, _ in per_file_commands(build, root).values()]
        os.makedirs(os.path.join(build, "lint"), exist_ok=True)
        with open(os.path.join(build, "lint", "compile_commands.json"), "w",
                  encoding="utf-8") as f:
            json.dump(sorted(db, key=lambda e: e["file"]), f, indent=1)
        return 0
    build = os.path.abspath(sys.argv[1])
    files = sys.argv[2:]
    commands = per_file_commands(build, root)

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

    # The object each file compiles to (its own, or its unity batch's).
    objects = {}
    for name in files:
        found = commands.get(os.path.normpath(os.path.join(root, name)))
        if found is not None and found[2] is not None:
            objects[name] = found

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
        # A batch's deps hold the batch and its other sources, which this file's
        # translation unit does not read.
        own = os.path.normpath(os.path.join(root, name))
        read = {p for p in deps[obj] if p == own or not (UNITY.match(p) or p in commands)}
        for shown, path in sorted({(norm(p), p) for p in read}):
            key.update(f"{shown} {digest(path)}\n".encode())
        print(name, key.hexdigest())
    return 0


if __name__ == "__main__":
    sys.exit(main())
