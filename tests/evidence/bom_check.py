#!/usr/bin/env python3
"""Checks an ML-BOM made by `lockstep evidence bom` (docs/evidence.md).

  bom_check.py SCHEMA_DIR BOM EXPLAIN [BOM EXPLAIN ...]

SCHEMA_DIR holds the official CycloneDX JSON schemas (tools/cyclonedx-schema.sh); EXPLAIN is
the output of `lockstep closure-hash --explain` for the same lock. The BOM must validate
against bom-1.6, and its library components must give back exactly the canonical lines of
EXPLAIN (each once) and its closure hash: the BOM and the hash cover the same packages.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "image"))
from sbom_check import schema_validator  # noqa: E402  (the image SBOM check's validator)


def props(component, name):
    return [p["value"] for p in component.get("properties", []) if p["name"] == name]


def check(validator, bom_path, explain_path):
    bom = json.load(open(bom_path))
    errors = [f"{bom_path}: schema: {'/'.join(map(str, e.absolute_path))}: {e.message[:300]}"
              for e in validator.iter_errors(bom)]
    lines = open(explain_path).read().splitlines()
    want, closure_hash = lines[:-1], lines[-1]
    got = []
    for c in bom.get("components", []):
        if c.get("type") != "library":
            continue
        eco = props(c, "lockstep:closure:ecosystem")
        digests = props(c, "lockstep:closure:digest")
        got.append("\t".join([eco[0] if eco else "?", c["name"], c.get("version", ""),
                              ",".join(digests)]))
        sha = sorted("sha256:" + h["content"] for h in c.get("hashes", []) if h["alg"] == "SHA-256")
        if sha != sorted(d for d in digests if d.startswith("sha256:")):
            errors.append(f"{bom_path}: {c['name']}: hashes differ from the lock's sha256 digests")
    for line in sorted(set(want) | set(got)):
        if got.count(line) != 1 or line not in want:
            errors.append(f"{bom_path}: listed {got.count(line)} times, in the closure "
                          f"{want.count(line)} times: {line[:200]}")
    if props(bom.get("metadata", {}), "lockstep:closure:hash") != [closure_hash]:
        errors.append(f"{bom_path}: metadata names another closure hash than {closure_hash}")
    for e in errors:
        print(e, file=sys.stderr)
    if not errors:
        print(f"{bom_path}: valid CycloneDX {bom['specVersion']}, {len(want)} packages once each")
    return len(errors) == 0


def main(schema_dir, *pairs):
    validator = schema_validator(schema_dir)  # built once: the schema is large
    ok = [check(validator, pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2)]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    if len(sys.argv) < 4 or len(sys.argv) % 2 != 0:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
