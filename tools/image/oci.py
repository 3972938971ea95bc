#!/usr/bin/env python3
"""Writes one Lockstep image as an OCI image layout, byte for byte reproducibly.

  oci.py build --name NAME --binary FILE --packages tools/image/packages.txt --debs DIR
               --out DIR --epoch SECONDS --revision SHA --version X.Y.Z --source URL

Layer 1 is the root filesystem: the files of the Debian packages that NAME's lines of the
package list need (their Depends closure among the .deb files in DIR, which mmdebstrap
downloaded), with documentation other than copyright files left out, plus what a package's
maintainer scripts would have made (the CA bundle, passwd/group with the non-root user 65532,
the dpkg database). Layer 2 is the binary as /usr/bin/NAME. Every entry is sorted by path,
owned by root (the user's home by 65532) and stamped with SOURCE_DATE_EPOCH; gzip headers carry
no name or time; JSON is written with sorted keys. The same inputs thus give the same digests.

Writes OUT/NAME (the layout, tagged VERSION), OUT/NAME.cdx.json (its CycloneDX 1.6 SBOM, made
from the dpkg database inside layer 1 and the binary) and prints `NAME sha256:...`.
"""
import argparse
import datetime
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import uuid

import packages as pkglist

USER_ID = 65532
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
CA_BUNDLE = "etc/ssl/certs/ca-certificates.crt"
# What Debian's slim images also drop (dpkg path-exclude): manuals and documentation,
# except the copyright files the licences ask to keep.
DROPPED = re.compile(r"^usr/share/(man|info|lintian|bug|doc-base)/|^usr/share/doc/[^/]+/(?!copyright$)")


def die(msg):
    sys.exit(f"oci.py: {msg}")


def canonical_json(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


# ---- Debian packages ------------------------------------------------------------------------


def control_of(deb):
    text = subprocess.run(["dpkg-deb", "-f", deb], check=True, capture_output=True,
                          text=True).stdout
    fields, order, last = {}, [], None
    for line in text.splitlines():
        if line[:1] in (" ", "\t") and last:
            fields[last] += "\n" + line
        elif ":" in line:
            last, value = line.split(":", 1)
            fields[last] = value.strip()
            order.append(last)
    return fields, order


def read_debs(debs_dir):
    debs = {}
    for f in sorted(os.listdir(debs_dir)):
        if not f.endswith(".deb"):
            continue
        path = os.path.join(debs_dir, f)
        fields, order = control_of(path)
        debs[fields["Package"]] = {"path": path, "fields": fields, "order": order}
    if not debs:
        die(f"no .deb files in {debs_dir}")
    return debs


def closure(debs, roots, where):
    """The roots and everything their Depends/Pre-Depends need, among the downloaded debs."""
    provides = {}
    for name, d in debs.items():
        for p in d["fields"].get("Provides", "").split(","):
            if p.strip():
                provides.setdefault(p.split("(")[0].strip(), name)
    keep, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        if name not in debs:
            die(f"{where}: {name} was not downloaded (is it a bookworm package?)")
        keep.add(name)
        f = debs[name]["fields"]
        for field in ("Pre-Depends", "Depends"):
            for dep in filter(None, (x.strip() for x in f.get(field, "").split(","))):
                alts = [a.split("(")[0].split(":")[0].strip() for a in dep.split("|")]
                hit = next((a for a in alts if a in debs), None) or next(
                    (provides[a] for a in alts if a in provides), None)
                if hit is None:
                    die(f"{where}: {name} {field} {dep!r}: none of it was downloaded")
                todo.append(hit)
    return sorted(keep)


# ---- layers ---------------------------------------------------------------------------------


class Tree:
    """Files of a layer by path (no leading ./ or /), written sorted and normalised."""

    def __init__(self, epoch):
        self.epoch = epoch
        self.entries = {}
        self.owner = {}

    def _dirs(self, path):
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in self.entries:
                self.add_dir(d, 0o755)

    def add_dir(self, path, mode, uid=0):
        self._dirs(path)
        cur = self.entries.get(path)
        if cur and cur[0].type != tarfile.DIRTYPE:
            die(f"{path} is both a directory and a file")
        ti = tarfile.TarInfo(path)
        ti.type, ti.mode, ti.uid, ti.gid = tarfile.DIRTYPE, mode, uid, uid
        self.entries[path] = (ti, None)

    def add_file(self, path, data, mode, pkg=None):
        self._dirs(path)
        cur = self.entries.get(path)
        if cur and (cur[0].type != tarfile.REGTYPE or cur[1] != data):
            die(f"{path} comes from both {self.owner.get(path)} and {pkg}, differently")
        ti = tarfile.TarInfo(path)
        ti.type, ti.mode, ti.size = tarfile.REGTYPE, mode, len(data)
        self.entries[path] = (ti, data)
        self.owner[path] = pkg

    def add_symlink(self, path, target, pkg=None):
        self._dirs(path)
        cur = self.entries.get(path)
        if cur and (cur[0].type != tarfile.SYMTYPE or cur[0].linkname != target):
            die(f"{path} comes from both {self.owner.get(path)} and {pkg}, differently")
        ti = tarfile.TarInfo(path)
        ti.type, ti.linkname, ti.mode = tarfile.SYMTYPE, target, 0o777
        self.entries[path] = (ti, None)
        self.owner[path] = pkg

    def layer(self):
        """(gzip bytes, diff_id) of the tar."""
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for path in sorted(self.entries):
                ti, data = self.entries[path]
                ti.mtime = self.epoch
                ti.uname = ti.gname = ""
                if ti.type != tarfile.DIRTYPE:
                    ti.uid = ti.gid = 0
                tar.addfile(ti, io.BytesIO(data) if data is not None else None)
        tar_bytes = raw.getvalue()
        gz = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=gz, mtime=0, compresslevel=9) as g:
            g.write(tar_bytes)
        return gz.getvalue(), "sha256:" + hashlib.sha256(tar_bytes).hexdigest()


def add_deb(tree, name, deb_path):
    data = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb_path], check=True,
                          capture_output=True).stdout
    kept = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        members = tar.getmembers()
        by_name = {m.name: m for m in members}
        for m in members:
            path = m.name[2:] if m.name.startswith("./") else m.name.lstrip("/")
            path = path.rstrip("/")
            if not path or DROPPED.match(path + ("/" if m.isdir() else "")):
                continue
            if m.isdir():
                tree.add_dir(path, m.mode & 0o7777)
            elif m.issym():
                tree.add_symlink(path, m.linkname, name)
            elif m.islnk():  # hard links become copies: the entries are re-sorted
                target = by_name.get(m.linkname) or by_name.get("./" + m.linkname.lstrip("./"))
                tree.add_file(path, tar.extractfile(target).read(), target.mode & 0o7777, name)
            elif m.isreg():
                tree.add_file(path, tar.extractfile(m).read(), m.mode & 0o7777, name)
            else:
                die(f"{deb_path}: {m.name}: unsupported entry type")
            kept.append("/" + path)
    return kept


def dpkg_status(debs, names):
    stanzas = []
    for name in names:
        f, order = debs[name]["fields"], debs[name]["order"]
        lines = []
        for k in order:
            lines.append(f"{k}: {f[k]}")
            if k == "Package":
                lines.append("Status: install ok installed")
        stanzas.append("\n".join(lines) + "\n")
    return "\n".join(stanzas).encode()


def info_name(deb):
    f = deb["fields"]
    if f.get("Multi-Arch") == "same":
        return f"{f['Package']}:{f['Architecture']}"
    return f["Package"]


def rootfs_tree(debs, names, epoch):
    tree = Tree(epoch)
    for d in ("etc", "tmp", "usr/bin", "var/lib/dpkg/info"):
        tree.add_dir(d, 0o755)
    for name in names:
        kept = add_deb(tree, name, debs[name]["path"])
        listing = "".join(p + "\n" for p in sorted(set(kept)))
        tree.add_file(f"var/lib/dpkg/info/{info_name(debs[name])}.list", listing.encode(), 0o644)
    tree.add_file("var/lib/dpkg/status", dpkg_status(debs, names), 0o644)
    tree.add_dir("tmp", 0o1777)
    tree.add_dir("home/nonroot", 0o700, USER_ID)
    tree.add_file("etc/passwd", (f"root:x:0:0:root:/root:/usr/sbin/nologin\n"
                                 f"nonroot:x:{USER_ID}:{USER_ID}:nonroot:/home/nonroot:"
                                 f"/usr/sbin/nologin\n").encode(), 0o644)
    tree.add_file("etc/group", f"root:x:0:\nnonroot:x:{USER_ID}:\n".encode(), 0o644)
    tree.add_file("etc/nsswitch.conf", b"passwd: files\ngroup: files\nhosts: files dns\n", 0o644)
    if "ca-certificates" in names:
        # What update-ca-certificates (ca-certificates' postinst) writes: every Mozilla root,
        # in file-name order.
        certs = sorted(p for p in tree.entries
                       if p.startswith("usr/share/ca-certificates/mozilla/") and p.endswith(".crt"))
        if not certs:
            die("ca-certificates has no usr/share/ca-certificates/mozilla/*.crt")
        bundle = b"".join(tree.entries[p][1].rstrip(b"\n") + b"\n" for p in certs)
        tree.add_file(CA_BUNDLE, bundle, 0o644)
        # libssl3's default CA file; the openssl package, left out, would make this link.
        tree.add_symlink("usr/lib/ssl/cert.pem", "/" + CA_BUNDLE)
    return tree


def binary_tree(binary, name, epoch):
    tree = Tree(epoch)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, name)
        subprocess.run(["strip", "--strip-unneeded", "-o", out, binary], check=True)
        with open(out, "rb") as f:
            stripped = f.read()
    tree.add_dir("usr/bin", 0o755)
    tree.add_file(f"usr/bin/{name}", stripped, 0o755)
    return tree, stripped


# ---- layout ---------------------------------------------------------------------------------


class Layout:
    def __init__(self, root):
        if os.path.exists(root):
            shutil.rmtree(root)
        os.makedirs(os.path.join(root, "blobs", "sha256"))
        self.root = root
        with open(os.path.join(root, "oci-layout"), "wb") as f:
            f.write(canonical_json({"imageLayoutVersion": "1.0.0"}))

    def blob(self, data, media_type, **extra):
        digest = hashlib.sha256(data).hexdigest()
        with open(os.path.join(self.root, "blobs", "sha256", digest), "wb") as f:
            f.write(data)
        return dict({"mediaType": media_type, "digest": "sha256:" + digest, "size": len(data)},
                    **extra)

    def index(self, manifest_desc):
        with open(os.path.join(self.root, "index.json"), "wb") as f:
            f.write(canonical_json({"schemaVersion": 2, "mediaType": MEDIA_INDEX,
                                    "manifests": [manifest_desc]}))


def rfc3339(epoch):
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def purl_deb(f):
    q = urllib.parse.quote
    return (f"pkg:deb/debian/{q(f['Package'], safe='')}@{q(f['Version'], safe='')}"
            f"?arch={f['Architecture']}&distro=debian-12")


def parse_status(text):
    out = []
    for stanza in text.strip().split("\n\n"):
        f, last = {}, None
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") and last:
                f[last] += "\n" + line
            else:
                last, v = line.split(":", 1)
                f[last] = v.strip()
        out.append(f)
    return out


def sbom(name, args, manifest_digest, layer_gz, debs, binary_sha256):
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(layer_gz)), mode="r:") as tar:
        status = tar.extractfile("var/lib/dpkg/status").read().decode()
    created = rfc3339(args.epoch)
    image_ref = f"pkg:oci/{name}@{urllib.parse.quote(manifest_digest, safe='')}"
    components = [{
        "type": "application",
        "bom-ref": f"lockstep:{name}",
        "name": name,
        "version": args.version,
        "description": f"/usr/bin/{name}, built from revision {args.revision}",
        "hashes": [{"alg": "SHA-256", "content": binary_sha256}],
        "externalReferences": [{"type": "vcs", "url": args.source}],
        "properties": [{"name": "lockstep:revision", "value": args.revision}],
    }]
    for f in sorted(parse_status(status), key=lambda f: f["Package"]):
        purl = purl_deb(f)
        c = {"type": "library", "bom-ref": purl, "name": f["Package"], "version": f["Version"],
             "purl": purl, "properties": [{"name": "debian:architecture",
                                           "value": f["Architecture"]}]}
        if "Source" in f:
            c["properties"].append({"name": "debian:source", "value": f["Source"]})
        deb = debs.get(f["Package"])
        if deb:
            with open(deb["path"], "rb") as fh:
                c["hashes"] = [{"alg": "SHA-256", "content": hashlib.sha256(fh.read()).hexdigest()}]
        components.append(c)
    deps = [{"ref": image_ref, "dependsOn": sorted(c["bom-ref"] for c in components)}]
    return {
        "$schema": "http://cyclonedx.org/schema/bom-1.6.schema.json",
        "bomFormat": "CycloneDX",
        "specVersion": "1.6",
        "serialNumber": "urn:uuid:" + str(uuid.uuid5(uuid.NAMESPACE_URL, image_ref)),
        "version": 1,
        "metadata": {
            "timestamp": created,
            "tools": {"components": [{"type": "application", "name": "lockstep tools/image.sh",
                                      "version": args.version}]},
            "component": {"type": "container", "bom-ref": image_ref, "name": name,
                          "version": args.version, "purl": image_ref,
                          "properties": [{"name": "lockstep:revision", "value": args.revision}]},
        },
        "components": components,
        "dependencies": deps,
    }


def build(args):
    debs = read_debs(args.debs)
    entries = [e for e in pkglist.read(args.packages) if args.name in e.images]
    if not entries:
        die(f"{args.packages}: no package is listed for {args.name}")
    # An extra (ca-certificates) comes alone: its Depends (openssl, debconf) serve its
    # maintainer scripts, which never run here; oci.py writes what they would have written.
    extras = [e.package for e in entries if not e.needed]
    for x in extras:
        if x not in debs:
            die(f"{args.packages}: {x} was not downloaded")
    names = sorted(set(closure(debs, [e.package for e in entries if e.needed], args.packages)) |
                   set(extras))
    root_gz, root_diff = rootfs_tree(debs, names, args.epoch).layer()
    bin_tree, stripped = binary_tree(args.binary, args.name, args.epoch)
    bin_gz, bin_diff = bin_tree.layer()

    layout = Layout(os.path.join(args.out, args.name))
    layers = [layout.blob(root_gz, MEDIA_LAYER), layout.blob(bin_gz, MEDIA_LAYER)]
    created = rfc3339(args.epoch)
    labels = {
        "org.opencontainers.image.created": created,
        "org.opencontainers.image.revision": args.revision,
        "org.opencontainers.image.source": args.source,
        "org.opencontainers.image.version": args.version,
        "org.opencontainers.image.title": args.name,
    }
    config = {
        "created": created,
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "User": f"{USER_ID}:{USER_ID}",
            "Entrypoint": [f"/usr/bin/{args.name}"],
            "Env": ["PATH=/usr/bin", "SSL_CERT_FILE=/" + CA_BUNDLE],
            "WorkingDir": "/home/nonroot",
            "Labels": labels,
        },
        "rootfs": {"type": "layers", "diff_ids": [root_diff, bin_diff]},
        "history": [
            {"created": created, "created_by": "tools/image.sh: Debian bookworm packages " +
             " ".join(names)},
            {"created": created, "created_by": f"tools/image.sh: /usr/bin/{args.name} "
             f"(Release build of {args.revision})"},
        ],
    }
    config_desc = layout.blob(canonical_json(config), MEDIA_CONFIG)
    manifest = {"schemaVersion": 2, "mediaType": MEDIA_MANIFEST, "config": config_desc,
                "layers": layers, "annotations": labels}
    manifest_desc = layout.blob(canonical_json(manifest), MEDIA_MANIFEST)
    layout.index(dict(manifest_desc, annotations={"org.opencontainers.image.ref.name":
                                                  args.version}))
    bom = sbom(args.name, args, manifest_desc["digest"], root_gz, debs,
               hashlib.sha256(stripped).hexdigest())
    with open(os.path.join(args.out, args.name + ".cdx.json"), "wb") as f:
        f.write(json.dumps(bom, indent=2, sort_keys=True).encode() + b"\n")
    compressed = sum(l["size"] for l in layers) + config_desc["size"] + manifest_desc["size"]
    print(f"{args.name} {manifest_desc['digest']} {compressed}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="verb", required=True)
    b = sub.add_parser("build")
    for flag in ("name", "binary", "packages", "debs", "out", "revision", "version", "source"):
        b.add_argument("--" + flag, required=True)
    b.add_argument("--epoch", type=int, required=True)
    args = p.parse_args()
    build(args)


if __name__ == "__main__":
    main()
