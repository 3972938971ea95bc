// Package rte holds what the scale benchmark's Go programs share about a
// RuntimeEnv: its group/version/resource, and the status the Lockstep
// operator writes for a resolved lock (controllers/runtimeenv/runtimeenv_plan.cc),
// restated so the controller-runtime peer and the bare status writer send the
// same document (same fields, same conditions, same messages).
package rte

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"lockstep.dev/bench/peers/uvlock"
)

var (
	GVR = schema.GroupVersionResource{Group: "lockstep.dev", Version: "v1alpha1", Resource: "runtimeenvs"}
	GVK = schema.GroupVersionKind{Group: "lockstep.dev", Version: "v1alpha1", Kind: "RuntimeEnv"}
)

var digestPinned = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// ImagePinned is a cheap stand-in for api/image_ref's check (the benchmark's
// images are all repo@sha256:<64 hex>).
func ImagePinned(image string) bool { return digestPinned.MatchString(image) }

// Resolved is a computed closure plus what the status needs beside it.
type Resolved struct {
	Closure         uvlock.Closure
	Image           string
	Generation      int64
	CompatibleNodes int64
}

func condition(typ, status, reason, message string, gen int64, now string, old []interface{}) map[string]interface{} {
	ltt := now
	for _, o := range old {
		if m, ok := o.(map[string]interface{}); ok && m["type"] == typ && m["status"] == status {
			if t, ok := m["lastTransitionTime"].(string); ok {
				ltt = t
			}
		}
	}
	return map[string]interface{}{"type": typ, "status": status, "reason": reason, "message": message,
		"observedGeneration": gen, "lastTransitionTime": ltt}
}

// ReadyMessage is the Ready condition's message (also the Resolved Event's).
func ReadyMessage(c uvlock.Closure) string {
	return fmt.Sprintf("closure %s: %d packages (uv)", c.Hash, c.PackageCount)
}

// Status is the status of a resolved uv.lock RuntimeEnv; old conditions keep
// their lastTransitionTime when their status did not change.
func Status(r Resolved, now string, oldConditions []interface{}) map[string]interface{} {
	c := r.Closure
	gen := r.Generation
	st := map[string]interface{}{
		"observedGeneration": gen,
		"closureHash":        c.Hash,
		"shortHash":          c.Hash[7:19],
		"format":             "uv",
		"platform":           "",
		"packageCount":       int64(c.PackageCount),
		"weak":               false,
		"image":              r.Image,
	}
	conds := []interface{}{
		condition("Ready", "True", "Resolved", ReadyMessage(c), gen, now, oldConditions),
		condition("Stalled", "False", "Resolved", "", gen, now, oldConditions),
	}
	if c.Cuda != "" {
		st["cuda"] = c.Cuda
		if c.MinDriver != "" {
			st["minDriver"] = c.MinDriver
		}
		st["compatibleNodes"] = r.CompatibleNodes
		if r.CompatibleNodes == 0 {
			md := c.MinDriver
			if md == "" {
				md = "any"
			}
			conds = append(conds, condition("Degraded", "True", "NoCompatibleNodes",
				"no schedulable node reports an NVIDIA driver >= "+md+" (CUDA "+c.Cuda+
					"); GPU feature discovery labels nvidia.com/cuda.driver.* are read", gen, now, oldConditions))
		} else {
			conds = append(conds, condition("Degraded", "False", "CompatibleNodesFound",
				fmt.Sprintf("%d GPU node(s) satisfy driver >= %s", r.CompatibleNodes, c.MinDriver), gen, now, oldConditions))
		}
	} else {
		conds = append(conds, condition("Degraded", "False", "NoAcceleratorRequired", "", gen, now, oldConditions))
	}
	st["conditions"] = conds
	return st
}

// Failed is the status of a RuntimeEnv whose lock did not resolve.
func Failed(reason, message string, gen int64, now string, old map[string]interface{}) map[string]interface{} {
	st := map[string]interface{}{}
	for k, v := range old {
		st[k] = v
	}
	oldConds, _ := old["conditions"].([]interface{})
	st["observedGeneration"] = gen
	st["conditions"] = []interface{}{
		condition("Ready", "False", reason, message, gen, now, oldConds),
		condition("Stalled", "True", reason, message, gen, now, oldConds),
	}
	return st
}

// Expected is one created object as rtecreate records it: what its status
// must carry, and everything the bare writer needs to write it.
type Expected struct {
	Name            string `json:"name"`
	Generation      int64  `json:"generation"`
	Hash            string `json:"hash"`
	PackageCount    int    `json:"packageCount"`
	Cuda            string `json:"cuda,omitempty"`
	MinDriver       string `json:"minDriver,omitempty"`
	CompatibleNodes int64  `json:"compatibleNodes"`
	LockBytes       int    `json:"lockBytes"`
}

// ExpectedFile is rtecreate's output.
type ExpectedFile struct {
	Namespace string     `json:"namespace"`
	Image     string     `json:"image"`
	Objects   []Expected `json:"objects"`
}

// ReadExpected reads the file rtecreate wrote; errors name the file.
func ReadExpected(path string) (ExpectedFile, error) {
	var exp ExpectedFile
	raw, err := os.ReadFile(path)
	if err != nil {
		return exp, err
	}
	if err := json.Unmarshal(raw, &exp); err != nil {
		return exp, fmt.Errorf("%s: %v", path, err)
	}
	return exp, nil
}
