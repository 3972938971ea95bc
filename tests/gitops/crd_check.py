#!/usr/bin/env python3
"""Checks manifests against the project's own CRDs (crds/*.yaml) as the API server's
structural schema does with kubectl's strict field validation: each document's
apiVersion and kind must be a served version of a CRD, and its fields must match that
version's openAPIV3Schema, with no field the schema does not have (unless it says
x-kubernetes-preserve-unknown-fields). The CEL rules (x-kubernetes-validations) are
the webhook's and the API server's, not checked here.

  python3 crd_check.py CRD_DIR FILE...
"""
import copy
import glob
import sys

import jsonschema
import yaml


def structural(schema):
    """openAPIV3Schema -> JSON Schema with Kubernetes' meaning of its extensions."""
    s = copy.deepcopy(schema)

    def walk(node):
        if not isinstance(node, dict):
            return
        for key in ("properties", "patternProperties", "definitions"):
            for child in node.get(key, {}).values():
                walk(child)
        for key in ("items", "additionalProperties", "not"):
            walk(node.get(key))
        for key in ("allOf", "anyOf", "oneOf"):
            for child in node.get(key, []):
                walk(child)
        node.pop("x-kubernetes-validations", None)
        if node.pop("x-kubernetes-int-or-string", False):
            node.pop("type", None)
            node.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
        if node.pop("nullable", False) and "type" in node:
            node["type"] = [node["type"], "null"]
        preserve = node.pop("x-kubernetes-preserve-unknown-fields", False)
        if node.pop("x-kubernetes-embedded-resource", False):
            for field in ("apiVersion", "kind", "metadata"):
                node.setdefault("properties", {}).setdefault(field, {})
        if ("properties" in node and "additionalProperties" not in node and not preserve):
            node["additionalProperties"] = False

    walk(s)
    return s


def load_crds(crd_dir):
    schemas = {}
    for path in sorted(glob.glob(crd_dir + "/*.yaml")):
        with open(path) as f:
            crd = yaml.safe_load(f)
        if not crd or crd.get("kind") != "CustomResourceDefinition":
            continue
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for v in crd["spec"]["versions"]:
            if v.get("served", True):
                schemas[(group + "/" + v["name"], kind)] = (
                    path, structural(v["schema"]["openAPIV3Schema"]))
    return schemas


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    schemas = load_crds(argv[1])
    failed = checked = 0
    for path in argv[2:]:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        for i, doc in enumerate(docs):
            checked += 1
            where = path + ("" if len(docs) == 1 else " document %d" % (i + 1))
            key = (doc.get("apiVersion"), doc.get("kind"))
            if key not in schemas:
                print("FAIL %s: %s %s is no CRD of %s" % (where, key[0], key[1], argv[1]))
                failed += 1
                continue
            crd, schema = schemas[key]
            errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(doc),
                            key=lambda e: list(e.absolute_path))
            for e in errors:
                field = ".".join(str(p) for p in e.absolute_path) or "(root)"
                print("FAIL %s: %s: %s (%s)" % (where, field, e.message, crd))
            if errors:
                failed += 1
            else:
                print("ok %s: %s" % (where, key[1]))
    print("%d passed, %d failed" % (checked - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
