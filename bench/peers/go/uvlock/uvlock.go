// Package uvlock restates closure hash v1 (docs/closure-hash.md) for the
// uv.lock format only, in Go, for the controller-runtime peer of the scale
// benchmark: parse the TOML, one entry per installed package (the project's
// editable/virtual/directory sources left out), PEP 503 names, sha256 digests
// of the sdist and every wheel, git:<commit> for git sources, canonical lines
// sorted and de-duplicated, sha256 over the domain string and the text. It
// also restates the CUDA detection and the minimum-driver table of
// closure/cuda.cc for PyPI packages, so the peer writes the same status.
// bench/run.py checks its hashes against `lockstep closure-hash`.
package uvlock

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

const hashDomain = "lockstep-closure-v1\n"

// Closure is what the RuntimeEnv status reports of a lock.
type Closure struct {
	Hash          string
	PackageCount  int
	Cuda          string
	MinDriver     string
	CanonicalText string
}

type artifact struct {
	Hash *string `toml:"hash"`
}

type pkg struct {
	Name    *string                `toml:"name"`
	Version *string                `toml:"version"`
	Source  map[string]interface{} `toml:"source"`
	Sdist   *artifact              `toml:"sdist"`
	Wheels  []artifact             `toml:"wheels"`
}

type lockFile struct {
	Package []pkg `toml:"package"`
}

type entry struct {
	name, version string
	digests       []string
}

// Hash computes closure hash v1 of a uv.lock. Unhashed packages are errors
// (the peer has no allowUnhashed).
func Hash(text []byte) (Closure, error) {
	var lf lockFile
	if _, err := toml.Decode(string(text), &lf); err != nil {
		return Closure{}, fmt.Errorf("uv.lock: toml: %w", err)
	}
	var entries []entry
	for i, p := range lf.Package {
		if p.Source != nil {
			_, ed := p.Source["editable"]
			_, vi := p.Source["virtual"]
			_, di := p.Source["directory"]
			if ed || vi || di {
				continue
			}
		}
		if p.Name == nil {
			return Closure{}, fmt.Errorf("uv.lock: package %d: name: missing", i+1)
		}
		if p.Version == nil {
			return Closure{}, fmt.Errorf("uv.lock: package %q: version: missing", *p.Name)
		}
		e := entry{name: normalizePypiName(*p.Name), version: *p.Version}
		if g, ok := p.Source["git"]; ok {
			gs, _ := g.(string)
			c, ok := gitCommit(gs)
			if !ok {
				return Closure{}, fmt.Errorf("uv.lock: package %q: source.git: not pinned to a full commit", *p.Name)
			}
			e.digests = append(e.digests, "git:"+c)
		}
		arts := append([]artifact{}, p.Wheels...)
		if p.Sdist != nil {
			arts = append(arts, *p.Sdist)
		}
		for _, a := range arts {
			if a.Hash == nil || !hasSha256Prefix(*a.Hash) {
				continue
			}
			d, ok := canonicalSha256(*a.Hash)
			if !ok {
				return Closure{}, fmt.Errorf("uv.lock: package %q: malformed sha256 %q", *p.Name, *a.Hash)
			}
			e.digests = append(e.digests, d)
		}
		if e.name == "" || !cleanField(e.name) || !cleanField(e.version) {
			return Closure{}, fmt.Errorf("uv.lock: package %q: name or version has whitespace or control characters", *p.Name)
		}
		e.digests = sortedUnique(e.digests)
		if len(e.digests) == 0 {
			return Closure{}, fmt.Errorf("uv.lock: package %q %s has no artifact digest", e.name, e.version)
		}
		entries = append(entries, e)
	}
	lines := make([]string, 0, len(entries))
	for _, e := range entries {
		lines = append(lines, "pypi\t"+e.name+"\t"+e.version+"\t"+strings.Join(e.digests, ",")+"\n")
	}
	lines = sortedUnique(lines)
	text2 := strings.Join(lines, "")
	sum := sha256.Sum256([]byte(hashDomain + text2))
	c := Closure{Hash: "sha256:" + hex.EncodeToString(sum[:]), PackageCount: len(lines), CanonicalText: text2}
	c.Cuda = detectCuda(entries)
	if c.Cuda != "" {
		c.MinDriver = MinDriverForCuda(c.Cuda)
	}
	return c, nil
}

func sortedUnique(xs []string) []string {
	sort.Strings(xs)
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func normalizePypiName(n string) string {
	var b strings.Builder
	inRun := false
	for i := 0; i < len(n); i++ {
		c := n[i]
		if c == '-' || c == '_' || c == '.' {
			if !inRun {
				b.WriteByte('-')
			}
			inRun = true
			continue
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
		inRun = false
	}
	return b.String()
}

func cleanField(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] == 0x7f {
			return false
		}
	}
	return true
}

func hasSha256Prefix(s string) bool {
	if len(s) < 7 {
		return false
	}
	p := strings.ToLower(s[:7])
	return p == "sha256:" || p == "sha256="
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func canonicalSha256(s string) (string, bool) {
	if hasSha256Prefix(s) {
		s = s[7:]
	}
	if len(s) != 64 || !isHex(s) {
		return "", false
	}
	return "sha256:" + strings.ToLower(s), true
}

func isFullCommit(s string) bool { return (len(s) == 40 || len(s) == 64) && isHex(s) }

// gitCommit: the fragment after '#', else "@<commit>" ending the path, else rev=<commit>.
func gitCommit(url string) (string, bool) {
	if i := strings.IndexByte(url, '#'); i >= 0 {
		if f := url[i+1:]; isFullCommit(f) {
			return strings.ToLower(f), true
		}
		url = url[:i]
	}
	path, query, hasQuery := strings.Cut(url, "?")
	if at := strings.LastIndexByte(path, '@'); at >= 0 && isFullCommit(path[at+1:]) {
		return strings.ToLower(path[at+1:]), true
	}
	if hasQuery {
		for _, kv := range strings.Split(query, "&") {
			if strings.HasPrefix(kv, "rev=") && isFullCommit(kv[4:]) {
				return strings.ToLower(kv[4:]), true
			}
		}
	}
	return "", false
}

// ---- CUDA (closure/cuda.cc, PyPI part) ----------------------------------------

var driverTable = [][2]string{
	{"9.0", "384.81"}, {"9.1", "390.46"}, {"9.2", "396.26"}, {"10.0", "410.48"},
	{"10.1", "418.39"}, {"10.2", "440.33"}, {"11.0", "450.51.05"}, {"11.1", "455.23"},
	{"11.2", "460.27.03"}, {"11.3", "465.19.01"}, {"11.4", "470.42.01"}, {"11.5", "495.29.05"},
	{"11.6", "510.39.01"}, {"11.7", "515.43.04"}, {"11.8", "520.61.05"}, {"12.0", "525.60.13"},
	{"12.1", "530.30.02"}, {"12.2", "535.54.03"}, {"12.3", "545.23.06"}, {"12.4", "550.54.14"},
	{"12.5", "555.42.02"}, {"12.6", "560.28.03"}, {"12.8", "570.26"}, {"12.9", "575.51.03"},
	{"13.0", "580.65.06"},
}

func components(v string) ([]int64, bool) {
	if v == "" {
		return nil, false
	}
	var out []int64
	for _, part := range strings.Split(v, ".") {
		if part == "" || len(part) > 9 {
			return nil, false
		}
		n, err := strconv.ParseInt(part, 10, 64)
		if err != nil || strings.ContainsAny(part, "+-") {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}

func lessInts(a, b []int64) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

func majorMinor(v string) string {
	end, dots := 0, 0
	for end < len(v) {
		c := v[end]
		if c == '.' {
			dots++
			if dots == 2 {
				break
			}
		} else if c < '0' || c > '9' {
			break
		}
		end++
	}
	mm := v[:end]
	if dots == 0 || mm == "" || mm[len(mm)-1] == '.' || mm[0] == '.' {
		return ""
	}
	return mm
}

func fromTorchLocal(v string) string {
	i := strings.Index(v, "+cu")
	if i < 0 {
		return ""
	}
	d := v[i+3:]
	n := 0
	for n < len(d) && d[n] >= '0' && d[n] <= '9' {
		n++
	}
	d = d[:n]
	if len(d) < 2 || len(d) > 4 {
		return ""
	}
	return d[:len(d)-1] + "." + d[len(d)-1:]
}

func lessVersion(a, b string) bool {
	ca, oka := components(a)
	cb, okb := components(b)
	if !oka || !okb {
		return a < b
	}
	return lessInts(ca, cb)
}

func detectCuda(es []entry) string {
	var runtime, framework string
	keepMax := func(cur *string, v string) {
		if v != "" && (*cur == "" || lessVersion(*cur, v)) {
			*cur = v
		}
	}
	for _, e := range es {
		switch {
		case e.name == "nvidia-cuda-runtime" || strings.HasPrefix(e.name, "nvidia-cuda-runtime-cu") ||
			e.name == "cuda-toolkit":
			keepMax(&runtime, majorMinor(e.version))
		case e.name == "torch" || e.name == "torchvision" || e.name == "torchaudio":
			keepMax(&framework, fromTorchLocal(e.version))
		}
	}
	if runtime != "" {
		return runtime
	}
	return framework
}

// MinDriverForCuda: the toolkit's minimum Linux driver, "" when not in the table.
func MinDriverForCuda(cuda string) string {
	mm := majorMinor(cuda)
	for _, r := range driverTable {
		if r[0] == mm {
			return r[1]
		}
	}
	return ""
}

// DriverFromGfdLabels: major.minor[.rev] from nvidia.com/cuda.driver.* labels.
func DriverFromGfdLabels(labels map[string]string) (string, bool) {
	major, minor, rev := labels["nvidia.com/cuda.driver.major"], labels["nvidia.com/cuda.driver.minor"],
		labels["nvidia.com/cuda.driver.rev"]
	single := func(s string) bool { _, ok := components(s); return ok && !strings.Contains(s, ".") }
	if !single(major) || !single(minor) {
		return "", false
	}
	v := major + "." + minor
	if rev != "" {
		if !single(rev) {
			return "", false
		}
		v += "." + rev
	}
	return v, true
}

// DriverSatisfies compares dotted versions numerically per component.
func DriverSatisfies(have, want string) bool {
	if want == "" {
		return true
	}
	h, ok1 := components(have)
	w, ok2 := components(want)
	if !ok1 || !ok2 {
		return false
	}
	for len(h) < len(w) {
		h = append(h, 0)
	}
	for len(w) < len(h) {
		w = append(w, 0)
	}
	return !lessInts(h, w)
}
