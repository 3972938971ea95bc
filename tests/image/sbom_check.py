#!/usr/bin/env python3
"""Checks an image's CycloneDX SBOM (Must show 5).

  sbom_check.py SCHEMA_DIR LAYOUT SBOM

SCHEMA_DIR holds the official CycloneDX JSON schemas (bom-1.6 and the spdx and jsf schemas it
refers to), as cyclonedx-python-lib ships them. The SBOM must validate against bom-1.6, and
list every package of the image's dpkg database (read from the layout's first layer) exactly
once, with its version, and nothing else but the image's own binary.
"""
import gzip
import io
import json
import os
import sys
import tarfile
import urllib.parse
import warnings

import jsonschema


def schema_validator(schema_dir):
    store = {}
    main = None
    for f in sorted(os.listdir(schema_dir)):
        if not f.endswith(".schema.json"):
            continue
        with open(os.path.join(schema_dir, f), encoding="utf-8") as fh:
            s = json.load(fh)
        # The files carry their published $id; their $refs name the shipped file names.
        base = "http://cyclonedx.org/schema/"
        store[urllib.parse.urljoin(base, f)] = s
        if "$id" in s:
            store[s["$id"]] = s
        if f.startswith("bom-1.6") and "strict" not in f:
            main = s
    if main is None:
        sys.exit(f"sbom_check.py: no bom-1.6 schema in {schema_dir}")
    warnings.simplefilter("ignore", DeprecationWarning)  # RefResolver: also in Debian's 4.10
    resolver = jsonschema.RefResolver.from_schema(main, store=store)
    cls = jsonschema.validators.validator_for(main)
    cls.check_schema(main)
    return cls(main, resolver=resolver, format_checker=jsonschema.FormatChecker())


def image_packages(layout):
    index = json.load(open(os.path.join(layout, "index.json")))
    blob = lambda d: open(os.path.join(layout, "blobs", *d.split(":")), "rb").read()
    manifest = json.loads(blob(index["manifests"][0]["digest"]))
    layer = gzip.decompress(blob(manifest["layers"][0]["digest"]))
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        status = tar.extractfile("var/lib/dpkg/status").read().decode()
    pkgs = []
    for stanza in status.strip().split("\n\n"):
        f = dict(l.split(": ", 1) for l in stanza.splitlines() if l[:1] not in (" ", "\t") and ": " in l)
        pkgs.append((f["Package"], f["Version"]))
    return index["manifests"][0]["digest"], pkgs


def main(schema_dir, layout, sbom_path):
    bom = json.load(open(sbom_path))
    errors = [f"{sbom_path}: schema: {'/'.join(map(str, e.absolute_path))}: {e.message[:300]}"
              for e in schema_validator(schema_dir).iter_errors(bom)]
    digest, pkgs = image_packages(layout)
    libs = [c for c in bom.get("components", []) if c.get("type") == "library"]
    names = [c["name"] for c in libs]
    for name, version in pkgs:
        n = names.count(name)
        if n != 1:
            errors.append(f"{sbom_path}: {name} is listed {n} times, want once")
        elif next(c for c in libs if c["name"] == name)["version"] != version:
            errors.append(f"{sbom_path}: {name}: version differs from the image's {version}")
    for extra in sorted(set(names) - {p for p, _ in pkgs}):
        errors.append(f"{sbom_path}: {extra} is not a package of the image")
    apps = [c for c in bom.get("components", []) if c.get("type") == "application"]
    image = os.path.basename(layout.rstrip("/"))
    if [c["name"] for c in apps] != [image] or not apps[0].get("version"):
        errors.append(f"{sbom_path}: want the binary {image} with its version, got {apps}")
    ref = bom.get("metadata", {}).get("component", {}).get("purl", "")
    if urllib.parse.unquote(ref.split("@", 1)[-1]) != digest:
        errors.append(f"{sbom_path}: metadata.component names {ref}, not the image {digest}")
    for e in errors:
        print(e, file=sys.stderr)
    if not errors:
        print(f"{sbom_path}: valid CycloneDX {bom['specVersion']}, {len(pkgs)} packages once each")
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
