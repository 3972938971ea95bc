#!/usr/bin/env python3
"""Pushes an image's SBOM as an OCI referrer of the image (OCI distribution spec 1.1).

  referrer.py --registry HOST[:PORT]/REPO --subject sha256:... --sbom FILE.cdx.json
              --authfile DOCKER-CONFIG [--cert-dir DIR]

The SBOM becomes a blob, and a manifest with artifactType application/vnd.cyclonedx+json,
the empty config and `subject` = the image's manifest points at it. A registry with the
referrers API indexes it by itself (it answers the manifest PUT with an OCI-Subject header);
for one without (Debian's docker-registry 2.8), the referrers tag scheme: the index at tag
sha256-<hex of the subject> gets the manifest's descriptor added (kept if already there).

Credentials come from the docker config file's "auths" entry of the host (Basic, or a
Bearer token fetched with them); TLS is always verified, against DIR's *.crt files when
given, else the system's roots.
"""
import argparse
import base64
import glob
import hashlib
import json
import os
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request

MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_EMPTY = "application/vnd.oci.empty.v1+json"
MEDIA_CYCLONEDX = "application/vnd.cyclonedx+json"
EMPTY = b"{}"


def die(msg):
    sys.exit(f"referrer.py: {msg}")


def canonical_json(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def digest_of(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


class Registry:
    def __init__(self, reference, authfile, cert_dir):
        host, _, self.repo = reference.partition("/")
        if not self.repo:
            die(f"--registry {reference}: want HOST/REPOSITORY")
        self.host = host
        self.base = f"https://{host}/v2/{self.repo}"
        self.ctx = ssl.create_default_context()
        self.ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if cert_dir:
            cas = sorted(glob.glob(os.path.join(cert_dir, "*.crt")))
            if not cas:
                die(f"--cert-dir {cert_dir}: no *.crt file")
            self.ctx = ssl.create_default_context(cafile=cas[0])
            self.ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            for ca in cas[1:]:
                self.ctx.load_verify_locations(cafile=ca)
        self.basic = self._credentials(authfile)
        self.auth_header = None

    def _credentials(self, authfile):
        try:
            with open(authfile, encoding="utf-8") as f:
                auths = json.load(f).get("auths", {})
        except (OSError, ValueError) as e:
            die(f"{authfile}: {e}")
        for key in (self.host, "https://" + self.host, "https://" + self.host + "/v2/"):
            if key in auths and auths[key].get("auth"):
                return auths[key]["auth"]
        return None  # anonymous

    def _open(self, req):
        return urllib.request.urlopen(req, context=self.ctx, timeout=60)

    def _login(self, challenge):
        scheme, _, params = challenge.partition(" ")
        if scheme.lower() == "basic":
            if not self.basic:
                die(f"{self.host} wants credentials; none for it in the docker config file")
            self.auth_header = "Basic " + self.basic
            return
        if scheme.lower() != "bearer":
            die(f"{self.host}: unsupported authentication {scheme}")
        fields = dict(p.split("=", 1) for p in params.replace('"', "").split(","))
        query = {"service": fields.get("service", ""),
                 "scope": f"repository:{self.repo}:pull,push"}
        req = urllib.request.Request(fields["realm"] + "?" + urllib.parse.urlencode(query))
        if self.basic:
            req.add_header("Authorization", "Basic " + self.basic)
        with self._open(req) as r:
            body = json.load(r)
        self.auth_header = "Bearer " + (body.get("token") or body.get("access_token"))

    def request(self, method, url, data=None, headers=None, ok=(200, 201, 202)):
        """(status, headers, body); a status outside ok (and not 404) is an error."""
        for attempt in (1, 2):
            req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
            if self.auth_header:
                req.add_header("Authorization", self.auth_header)
            try:
                with self._open(req) as r:
                    return r.status, r.headers, r.read()
            except urllib.error.HTTPError as e:
                if e.code == 401 and attempt == 1 and "WWW-Authenticate" in e.headers:
                    self._login(e.headers["WWW-Authenticate"])
                    continue
                if e.code == 404:
                    return 404, e.headers, e.read()
                die(f"{method} {url}: HTTP {e.code}: {e.read()[:300]!r}")
            except urllib.error.URLError as e:
                die(f"{method} {url}: {e.reason}")
        die(f"{method} {url}: not authorized")

    def push_blob(self, data):
        d = digest_of(data)
        status, _, _ = self.request("HEAD", f"{self.base}/blobs/{d}")
        if status == 200:
            return d
        status, h, _ = self.request("POST", f"{self.base}/blobs/uploads/", data=b"")
        if status != 202:
            die(f"{self.base}: blob upload not started (HTTP {status})")
        loc = urllib.parse.urljoin(self.base + "/", h["Location"])
        sep = "&" if "?" in loc else "?"
        self.request("PUT", f"{loc}{sep}digest={urllib.parse.quote(d)}", data=data,
                     headers={"Content-Type": "application/octet-stream"})
        return d

    def manifest(self, ref, media_types):
        # docker-registry 2.8 answers 404 for an OCI manifest unless Accept names its type.
        status, h, body = self.request("GET", f"{self.base}/manifests/{ref}",
                                       headers={"Accept": ", ".join(media_types)})
        return (None, None) if status == 404 else (body, h.get("Content-Type"))

    def put_manifest(self, ref, body, media_type):
        _, h, _ = self.request("PUT", f"{self.base}/manifests/{ref}", data=body,
                               headers={"Content-Type": media_type})
        return h


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--registry", required=True)
    p.add_argument("--subject", required=True)
    p.add_argument("--sbom", required=True)
    p.add_argument("--authfile", required=True)
    p.add_argument("--cert-dir")
    a = p.parse_args()
    reg = Registry(a.registry, a.authfile, a.cert_dir)

    subject_body, subject_type = reg.manifest(a.subject, [MEDIA_MANIFEST])
    if subject_body is None:
        die(f"{a.registry}@{a.subject}: no such image (push it first)")
    if digest_of(subject_body) != a.subject:
        die(f"{a.registry}@{a.subject}: the registry served other bytes")
    with open(a.sbom, "rb") as f:
        sbom = f.read()
    created = json.loads(sbom).get("metadata", {}).get("timestamp", "")

    reg.push_blob(EMPTY)
    sbom_digest = reg.push_blob(sbom)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "artifactType": MEDIA_CYCLONEDX,
        "config": {"mediaType": MEDIA_EMPTY, "digest": digest_of(EMPTY), "size": len(EMPTY)},
        "layers": [{"mediaType": MEDIA_CYCLONEDX, "digest": sbom_digest, "size": len(sbom),
                    "annotations": {"org.opencontainers.image.title":
                                    os.path.basename(a.sbom)}}],
        "subject": {"mediaType": subject_type or MEDIA_MANIFEST, "digest": a.subject,
                    "size": len(subject_body)},
        "annotations": {"org.opencontainers.image.created": created},
    }
    body = canonical_json(manifest)
    digest = digest_of(body)
    headers = reg.put_manifest(digest, body, MEDIA_MANIFEST)
    how = "the referrers API"
    if headers.get("OCI-Subject") != a.subject:
        # No referrers API: the tag scheme. Read-modify-write of the index at the tag.
        tag = a.subject.replace(":", "-")
        old, _ = reg.manifest(tag, [MEDIA_INDEX])
        index = json.loads(old) if old else {"schemaVersion": 2, "mediaType": MEDIA_INDEX,
                                             "manifests": []}
        if not any(m.get("digest") == digest for m in index.get("manifests", [])):
            index["manifests"].append({
                "mediaType": MEDIA_MANIFEST, "digest": digest, "size": len(body),
                "artifactType": MEDIA_CYCLONEDX, "annotations": manifest["annotations"]})
            reg.put_manifest(tag, canonical_json(index), MEDIA_INDEX)
        how = f"the referrers tag {tag}"
    print(f"referrer.py: {a.registry}: SBOM {sbom_digest} in {digest}, a referrer of "
          f"{a.subject} (via {how})", file=sys.stderr)


if __name__ == "__main__":
    main()
