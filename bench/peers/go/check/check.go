// Package check is the pod admission check of Lockstep's pod webhook
// (webhooks/admission/pod_validator.h), restated in Go for the benchmark
// peers: on CREATE, a pod that names a RuntimeEnv (label
// lockstep.dev/runtime-env) or lives in an enforcing namespace must carry the
// RuntimeEnv's status.closureHash in annotation lockstep.dev/closure-hash, and
// every init, regular and ephemeral container image must be pinned to the
// RuntimeEnv's repository and digest. Only what the benchmark exercises is
// restated (CREATE, enforce mode); denials name what was expected and found.
package check

import (
	"fmt"
	"strings"

	"github.com/distribution/reference"
)

const (
	RuntimeEnvLabel   = "lockstep.dev/runtime-env"
	ClosureAnnotation = "lockstep.dev/closure-hash"
	EnforceLabel      = "lockstep.dev/enforce"
)

// Env is what the check needs of a RuntimeEnv.
type Env struct {
	Name        string
	ClosureHash string // status.closureHash
	Image       string // spec.image, repo@sha256:<hex>
	Ready       bool
}

// Container is one container's name and image, whatever its kind.
type Container struct {
	Kind, Name, Image string
}

// Pod is what the check reads of a pod.
type Pod struct {
	Namespace   string
	Labels      map[string]string
	Annotations map[string]string
	Containers  []Container
}

// Validate returns the violations (empty: admitted). env is nil when the
// named RuntimeEnv does not exist; enforcing says the namespace enforces.
func Validate(p *Pod, enforcing bool, env *Env) []string {
	envName, labelled := p.Labels[RuntimeEnvLabel]
	if !labelled && !enforcing {
		return nil
	}
	if envName == "" {
		return []string{fmt.Sprintf("namespace %q requires label %s naming the pod's RuntimeEnv", p.Namespace, RuntimeEnvLabel)}
	}
	if env == nil {
		return []string{fmt.Sprintf("RuntimeEnv %q does not exist", p.Namespace+"/"+envName)}
	}
	if !env.Ready || env.ClosureHash == "" {
		return []string{fmt.Sprintf("RuntimeEnv %q is not Ready", p.Namespace+"/"+envName)}
	}
	var out []string
	if h := p.Annotations[ClosureAnnotation]; h != env.ClosureHash {
		out = append(out, fmt.Sprintf("annotation %s is %q; expected %q", ClosureAnnotation, h, env.ClosureHash))
	}
	wantRepo, wantDigest, err := pinned(env.Image)
	if err != nil {
		return append(out, fmt.Sprintf("RuntimeEnv spec.image %q: %v", env.Image, err))
	}
	for _, c := range p.Containers {
		repo, digest, err := pinned(c.Image)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s %q image %q: %v; expected %q", c.Kind, c.Name, c.Image, err, wantRepo+"@"+wantDigest))
		case repo != wantRepo || digest != wantDigest:
			out = append(out, fmt.Sprintf("%s %q image %q is not %q", c.Kind, c.Name, c.Image, wantRepo+"@"+wantDigest))
		}
	}
	return out
}

// pinned normalizes an image reference (docker.io/library/… for Hub names)
// and returns its repository and digest; unpinned references are errors.
func pinned(image string) (string, string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", "", err
	}
	d, ok := named.(reference.Digested)
	if !ok {
		return "", "", fmt.Errorf("not pinned by digest")
	}
	return named.Name(), d.Digest().String(), nil
}

// Message joins violations the way Lockstep's denial does.
func Message(p *Pod, violations []string) string {
	return "lockstep: pod in namespace \"" + p.Namespace + "\": " + strings.Join(violations, "; ")
}
