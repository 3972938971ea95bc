#!/usr/bin/env python3
"""The Debian packages a binary needs at run time, from its ELF DT_NEEDED entries.

  needed.py print BINARY...           one line per package: PACKAGE<TAB>SONAMES
  needed.py check PACKAGES BINARY...  compare with the lines of PACKAGES (tools/image/packages.txt)
                                      that the binaries' images list; exit 1 naming each difference

Each DT_NEEDED soname (readelf -d) is resolved on this machine (ldconfig -p, which is a
Debian bookworm system with the build's -dev packages) and mapped to the package that owns
the file (dpkg -S). Debian's Depends then bring in what those libraries need in turn, so
the list holds only what the binaries name themselves.
"""
import os
import re
import subprocess
import sys

import packages as pkglist


def needed_sonames(binary):
    r = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"needed.py: {binary}: {r.stderr.strip()}")
    out = r.stdout
    return sorted(set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)))


def soname_paths():
    out = subprocess.run(["/sbin/ldconfig", "-p"], check=True, capture_output=True,
                         text=True).stdout
    paths = {}
    for line in out.splitlines():
        m = re.match(r"\s+(\S+) \(([^)]*)\) => (\S+)", line)
        if m and "x86-64" in m.group(2) and m.group(1) not in paths:
            paths[m.group(1)] = m.group(3)
    return paths


def candidates(path):
    # dpkg records the path the package ships; merged /usr may make the resolved one differ.
    out = [path, os.path.realpath(path)]
    for p in list(out):
        if p.startswith("/usr/lib/"):
            out.append(p[len("/usr"):])
        elif p.startswith("/lib/"):
            out.append("/usr" + p)
    return out


def owners(paths):
    """{path: package} for the paths that some package ships (one dpkg -S for all)."""
    r = subprocess.run(["dpkg", "-S", *sorted(set(paths))], capture_output=True, text=True)
    found = {}
    for line in r.stdout.splitlines():
        pkgs, _, path = line.partition(": ")
        if path and "diversion" not in pkgs:
            found[path.strip()] = pkgs.split(",")[0].split(":")[0].strip()
    return found


def needed_packages(binaries):
    """{package: set(sonames)} for the union of the binaries' DT_NEEDED entries."""
    paths = soname_paths()
    wanted = {}
    for b in binaries:
        for so in needed_sonames(b):
            if so not in paths:
                sys.exit(f"needed.py: {b}: DT_NEEDED {so} is not a library of this machine")
            wanted[(b, so)] = candidates(paths[so])
    found = owners(p for c in wanted.values() for p in c)
    result = {}
    for (b, so), cands in sorted(wanted.items()):
        pkg = next((found[p] for p in cands if p in found), None)
        if pkg is None:
            sys.exit(f"needed.py: {b}: no Debian package owns {paths[so]} ({so})")
        result.setdefault(pkg, set()).add(so)
    return result


def main(argv):
    if len(argv) >= 2 and argv[0] == "print":
        for pkg, sos in sorted(needed_packages(argv[1:]).items()):
            print(f"{pkg}\t{' '.join(sorted(sos))}")
        return 0
    if len(argv) >= 3 and argv[0] == "check":
        path = argv[1]
        entries = [e for e in pkglist.read(path) if e.needed]
        errors = []
        provided = {}  # package: sonames it provides to the images that list it
        for binary in argv[2:]:
            name = os.path.basename(binary)
            image = pkglist.image_of_binary(name)
            want = needed_packages([binary])
            listed = {e.package: e for e in entries if image in e.images}
            for pkg, sos in sorted(want.items()):
                provided.setdefault(pkg, set()).update(sos)
                if pkg not in listed:
                    errors.append(f"{path}: image {image} needs {pkg} ({' '.join(sorted(sos))}, "
                                  f"DT_NEEDED of {name}) but no line lists it for {image}")
            for pkg, e in sorted(listed.items()):
                if pkg not in want:
                    errors.append(f"{path}:{e.line}: {pkg} is listed for {image}, but {name} "
                                  f"needs none of its libraries")
        for e in entries:
            if e.package in provided and set(e.needed) != provided[e.package]:
                errors.append(f"{path}:{e.line}: {e.package}: the line says "
                              f"{' '.join(e.needed)}, the binaries need "
                              f"{' '.join(sorted(provided[e.package]))}")
        for e in errors:
            print(e, file=sys.stderr)
        if not errors:
            print(f"needed.py: {path} matches the DT_NEEDED entries of "
                  f"{' '.join(os.path.basename(b) for b in argv[2:])}")
        return 1 if errors else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
