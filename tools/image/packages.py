"""Reads tools/image/packages.txt, the one list of the images' Debian packages.

A line is `PACKAGE IMAGES WHY...`: IMAGES is a comma-separated list of image names
(lockstep-operator, lockstep); WHY is either the DT_NEEDED sonames the package provides
(checked against the binaries by tests/image) or `extra:` and a reason. `#` starts a comment.
"""
import collections
import sys

IMAGES = {"lockstep-operator": "lockstep-operator", "lockstep": "lockstep"}

Entry = collections.namedtuple("Entry", "package images needed reason line")


def image_of_binary(name):
    if name not in IMAGES:
        sys.exit(f"packages.py: no image holds a binary named {name}")
    return IMAGES[name]


def read(path):
    entries = []
    seen = {}
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split()
            if len(fields) < 3:
                sys.exit(f"{path}:{n}: want PACKAGE IMAGES WHY, got {line!r}")
            pkg, images = fields[0], fields[1].split(",")
            for im in images:
                if im not in IMAGES:
                    sys.exit(f"{path}:{n}: unknown image {im!r} (want one of "
                             f"{', '.join(sorted(IMAGES))})")
            if pkg in seen:
                sys.exit(f"{path}:{n}: {pkg} is listed twice (first on line {seen[pkg]})")
            seen[pkg] = n
            if fields[2].startswith("extra:"):
                entries.append(Entry(pkg, images, [], " ".join(fields[2:])[6:].strip(), n))
            else:
                entries.append(Entry(pkg, images, sorted(fields[2:]), "", n))
    return entries


def for_image(path, image):
    return [e.package for e in read(path) if image in e.images]


if __name__ == "__main__":
    # packages.py FILE: every listed package, comma-separated (mmdebstrap --include).
    print(",".join(sorted(e.package for e in read(sys.argv[1]))))
