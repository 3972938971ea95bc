#!/usr/bin/env bash
# Must show 3: each image's config: non-root user 65532, the binary as entrypoint, the OCI
# labels (source, revision = the commit, created = the commit time, version), as skopeo reads
# them from the OCI layout.
. "$(dirname "$0")/lib.sh"
revision=$(git -C "$root" rev-parse HEAD)
epoch=$(git -C "$root" log -1 --format=%ct HEAD)
version=$(sed -n 's/^project(lockstep VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
for name in "${images[@]}"; do
  skopeo inspect --config "oci:$out/$name:$(tag_of "$name")" >"$tmp/$name.config.json"
  if python3 - "$tmp/$name.config.json" "$name" "$revision" "$epoch" "$version" <<'PY'; then
import datetime, json, sys
cfg, name, revision, epoch, version = json.load(open(sys.argv[1])), *sys.argv[2:]
created = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
c = cfg["config"]
want = {
    "User": "65532:65532",
    "Entrypoint": [f"/usr/bin/{name}"],
    "created": created,
}
got = {"User": c.get("User"), "Entrypoint": c.get("Entrypoint"), "created": cfg.get("created")}
errors = [f"{k}: {got[k]!r}, want {v!r}" for k, v in want.items() if got[k] != v]
labels = c.get("Labels", {})
for k, v in {"revision": revision, "created": created, "version": version}.items():
    if labels.get(f"org.opencontainers.image.{k}") != v:
        errors.append(f"label org.opencontainers.image.{k}: {labels.get(f'org.opencontainers.image.{k}')!r}, want {v!r}")
if not labels.get("org.opencontainers.image.source", "").startswith("https://"):
    errors.append(f"label org.opencontainers.image.source: {labels.get('org.opencontainers.image.source')!r}")
if c.get("User", "").split(":")[0] in ("", "0", "root"):
    errors.append("runs as root")
for e in errors:
    print(f"{name}: {e}", file=sys.stderr)
sys.exit(1 if errors else 0)
PY
    pass "$name: user 65532, entrypoint /usr/bin/$name, labels of $revision"
  else fail "$name: image config"; fi
done
finish
