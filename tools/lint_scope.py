#!/usr/bin/env python3
"""The product files clang-tidy must check when the tree was clean at BASE.

    lint_scope.py BASE FILE...

Prints each FILE (a .cc of the product) that may have a new clang-tidy finding
since commit BASE: the file itself changed, or a project file it includes,
directly or through other project headers, changed (`git diff BASE`, so
uncommitted edits count too). A change to .clang-tidy or to the lint's scope
rules puts every FILE in scope, as does a BASE that this clone does not have
(a shallow clone). Compile flags are not followed: the full lint (`tools/lint.sh`,
and its cache keyed on each file's compile command) is what checks them. The first line of stderr says
which case held.

Includes are read from the sources themselves (`#include "path"`, resolved
against the file's folder and the repository root, the project's one include
directory), so no build is needed and a unity build's compile database does not
matter.
"""

import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
# Changes to these decide every file's verdict.
EVERYTHING = re.compile(r"(^|/)\.clang-tidy$|^tools/(lint\.sh|lint_scope\.py)$")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def includes_of(path: str, known: set) -> list:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return []
    found = []
    for name in INCLUDE.findall(text):
        for candidate in (os.path.normpath(os.path.join(os.path.dirname(path), name)), os.path.normpath(name)):
            if candidate in known:
                found.append(candidate)
                break
    return found


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    base, files = sys.argv[1], sys.argv[2:]
    try:
        git("rev-parse", "--verify", "--quiet", base + "^{commit}")
    except subprocess.CalledProcessError:
        print(f"lint scope: base {base} is not in this clone: every file", file=sys.stderr)
        print("\n".join(files))
        return 0
    changed = set(git("diff", "--name-only", base).split())
    if any(EVERYTHING.search(p) for p in changed):
        print(f"lint scope: the lint's own rules changed since {base[:12]}: every file",
              file=sys.stderr)
        print("\n".join(files))
        return 0
    known = set(git("ls-files", "*.h", "*.cc", "*.hpp", "*.inc").split())
    graph = {}

    def touched(path: str, seen: set) -> bool:
        if path in changed:
            return True
        if path in seen:
            return False
        seen.add(path)
        if path not in graph:
            graph[path] = includes_of(path, known)
        return any(touched(h, seen) for h in graph[path])

    scope = [f for f in files if touched(f, set())]
    print(f"lint scope: {len(scope)} of {len(files)} files changed since {base[:12]}, or include a changed file",
          file=sys.stderr)
    if scope:
        print("\n".join(scope))
    return 0


if __name__ == "__main__":
    sys.exit(main())
