#!/usr/bin/env bash
# Pushes a tiny ModelPack model (the CNCF model-spec, github.com/modelpack/model-spec)
# with oras and the spec's media types, and prints its manifest digest. The
# ModelPack CLI, modctl, is not served by the Go module proxy this project builds
# its tools from (docs/supply-chain.md "ModelPack packages"), so the package is
# laid out by hand as modctl lays it out: the weights and their config files each
# a reproducible tar layer (application/vnd.cncf.model.weight.v1.tar,
# application/vnd.cncf.model.weight.config.v1.tar) annotated with
# org.cncf.model.filepath, a config blob of application/vnd.cncf.model.config.v1+json
# whose modelfs.diffIds are the layers' digests (uncompressed tars), and the
# manifest's artifactType application/vnd.cncf.model.manifest.v1+json.
#
#   modelpack-push.sh ORAS CA_FILE USERNAME REF     # password on stdin
#   modelpack-push.sh ORAS CA_FILE USERNAME REF --unknown
#     (instead: one blob of media type application/vnd.example.unknown.v1, no artifactType)
set -euo pipefail
oras=$1 ca=$2 user=$3 ref=$4 mode=${5:-}
password=$(cat)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-modelpack.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
push() { printf '%s' "$password" | "$oras" push --ca-file "$ca" -u "$user" --password-stdin \
  --format go-template='{{.digest}}' "$@" 2>/dev/null; }

if [ "$mode" = --unknown ]; then
  echo "not a model" > blob.bin
  push "$ref" blob.bin:application/vnd.example.unknown.v1
  exit 0
fi

mkdir weights config
head -c 4096 /dev/urandom > weights/model.safetensors
echo '{"model_type": "gpt2", "n_layer": 2}' > config/config.json
reproducible() { tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$@"; }
reproducible weights.tar -C weights model.safetensors
reproducible config.tar -C config config.json
diff_weights=sha256:$(sha256sum weights.tar | cut -d' ' -f1)
diff_config=sha256:$(sha256sum config.tar | cut -d' ' -f1)
cat > model-config.json <<JSON
{"descriptor": {"createdAt": "2026-12-03T00:00:00Z", "family": "gpt2", "name": "tiny-gpt2",
                "version": "1.0", "licenses": ["MIT"]},
 "config": {"architecture": "transformer", "format": "safetensors", "paramSize": "0.1m",
            "precision": "float32",
            "capabilities": {"inputTypes": ["text"], "outputTypes": ["text"]}},
 "modelfs": {"type": "layers", "diffIds": ["$diff_weights", "$diff_config"]}}
JSON
cat > annotations.json <<JSON
{"weights.tar": {"org.cncf.model.filepath": "model.safetensors"},
 "config.tar": {"org.cncf.model.filepath": "config.json"}}
JSON
push --artifact-type application/vnd.cncf.model.manifest.v1+json \
  --config model-config.json:application/vnd.cncf.model.config.v1+json \
  --annotation-file annotations.json "$ref" \
  weights.tar:application/vnd.cncf.model.weight.v1.tar \
  config.tar:application/vnd.cncf.model.weight.config.v1.tar
