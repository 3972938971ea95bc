#!/usr/bin/env bash
# Made the fixed test vectors in this folder once, with the openssl and coreutils
# command-line tools only (no Lockstep code): two P-256 key pairs, a P-384 key, an
# eval statement, its DSSE PAE, an ECDSA signature of it and the Sigstore bundle
# around them. tests/evidence/signing_test.cc checks Lockstep against them. Kept to
# show how they were made; running it again makes new keys and signatures (ECDSA
# signatures are randomized), so the tests would need no change but the files would.
set -euo pipefail
cd "$(dirname "$0")"
for k in signer other; do
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$k.key"
  openssl pkey -in "$k.key" -pubout -out "$k.pub"
done
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out p384.key
openssl pkey -in p384.key -pubout -out p384.pub

subject=ab12000000000000000000000000000000000000000000000000000000000000
spec=5e0c000000000000000000000000000000000000000000000000000000000000
printf '%s' '{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"registry.example/models/gpt2-small","digest":{"sha256":"'$subject'"}}],"predicateType":"https://in-toto.io/attestation/test-result/v0.1","predicate":{"result":"PASSED","configuration":[{"name":"stage/eval","digest":{"sha256":"'$spec'"},"mediaType":"application/vnd.lockstep.stage-spec.v1+json"}],"passedTests":["accuracy"],"warnedTests":[],"failedTests":[],"lockstep":{"stage":"eval","metrics":[{"metric":"accuracy","value":0.84,"comparator":">=","threshold":0.82,"passed":true}]}}}' >statement.json
type=application/vnd.in-toto+json
# PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body
printf 'DSSEv1 %d %s %d ' "${#type}" "$type" "$(wc -c <statement.json)" >statement.pae
cat statement.json >>statement.pae
openssl dgst -sha256 -sign signer.key -out statement.sig statement.pae
openssl dgst -sha256 -verify signer.pub -signature statement.sig statement.pae
hint=$(openssl pkey -pubin -in signer.pub -outform DER | openssl dgst -sha256 -binary | base64 -w0)
printf '%s\n' "$hint" >signer.hint
cat >bundle.json <<JSON
{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"$hint"}},"dsseEnvelope":{"payload":"$(base64 -w0 statement.json)","payloadType":"$type","signatures":[{"keyid":"$hint","sig":"$(base64 -w0 statement.sig)"}]}}
JSON
