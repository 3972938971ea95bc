#!/usr/bin/env python3
"""The OCI referrer manifest that cosign v3 writes for `cosign attest` with the new
bundle format (pkg/oci/remote/write.go: WriteAttestationNewBundleFormat, WriteReferrer),
made from a Sigstore bundle, and checks of such manifests and of fallback tag indexes.

  referrer_layout.py manifest BUNDLE SUBJECT_MEDIA_TYPE SUBJECT_DIGEST SUBJECT_SIZE CREATED
      prints the referrer manifest (compact, in the field order cosign's Go marshals);
      the predicate type is read from the bundle's statement
  referrer_layout.py same-layout A B
      exit 0 when manifests A and B have the same layout: the same keys in the same
      order, media types, artifactType, config, annotation names, and values except
      digests, sizes and the creation time; else exit 1 naming the differences
  referrer_layout.py index-lists INDEX DIGEST ARTIFACT_TYPE
      exit 0 when the OCI image index INDEX (a fallback tag's) lists DIGEST with
      ARTIFACT_TYPE
"""
import base64
import hashlib
import json
import sys

BUNDLE_MEDIA_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
EMPTY_MEDIA_TYPE = "application/vnd.oci.empty.v1+json"
EMPTY = b"{}"


def digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def manifest(bundle_path, subject_media_type, subject_digest, subject_size, created):
    raw = open(bundle_path, "rb").read()
    bundle = json.loads(raw)
    statement = json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))
    # Go's encoding/json: struct fields in declaration order (v1.Manifest, then
    # referrerManifest's artifactType), map keys sorted.
    m = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {
            "mediaType": EMPTY_MEDIA_TYPE,
            "size": len(EMPTY),
            "digest": digest(EMPTY),
            "artifactType": BUNDLE_MEDIA_TYPE,
        },
        "layers": [{"mediaType": BUNDLE_MEDIA_TYPE, "size": len(raw), "digest": digest(raw)}],
        "annotations": dict(sorted({
            "dev.sigstore.bundle.content": "dsse-envelope",
            "dev.sigstore.bundle.predicateType": statement["predicateType"],
            "org.opencontainers.image.created": created,
        }.items())),
        "subject": {"mediaType": subject_media_type, "size": int(subject_size), "digest": subject_digest},
        "artifactType": BUNDLE_MEDIA_TYPE,
    }
    sys.stdout.write(json.dumps(m, separators=(",", ":")))


VARIABLE = {"digest", "size", "org.opencontainers.image.created"}


def differences(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return [f"{path or '/'}: keys {list(a)} != {list(b)}"]
        out = []
        for k in a:
            if k in VARIABLE:
                continue
            out += differences(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} != {len(b)} entries"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}/{i}")]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def same_layout(a_path, b_path):
    a = json.load(open(a_path))
    b = json.load(open(b_path))
    diff = differences(a, b)
    for d in diff:
        print(f"layout differs at {d}", file=sys.stderr)
    return 1 if diff else 0


def index_lists(index_path, want_digest, artifact_type):
    index = json.load(open(index_path))
    if index.get("mediaType") != OCI_INDEX or index.get("schemaVersion") != 2:
        print(f"{index_path}: not an OCI image index v2: {index.get('mediaType')}", file=sys.stderr)
        return 1
    for d in index.get("manifests", []):
        if d.get("digest") == want_digest:
            if d.get("artifactType") != artifact_type or d.get("mediaType") != OCI_MANIFEST:
                print(f"{index_path}: {want_digest} listed as {d}", file=sys.stderr)
                return 1
            return 0
    print(f"{index_path}: {want_digest} not listed: {index}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    verb, args = sys.argv[1], sys.argv[2:]
    if verb == "manifest" and len(args) == 5:
        manifest(*args)
    elif verb == "same-layout" and len(args) == 2:
        sys.exit(same_layout(*args))
    elif verb == "index-lists" and len(args) == 3:
        sys.exit(index_lists(*args))
    else:
        sys.exit(__doc__)
