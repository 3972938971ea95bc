// rtecreate: creates N RuntimeEnvs in bulk for the scale benchmark, each with
// a different inline uv.lock, and records what every status must carry.
//
// Object i takes fixture i mod F and drops the registry packages selected by
// the bits of i div F (among the first --drop-bits of them), so every object's
// closure hash differs while the lock stays a real one of realistic size.
// Hashes are computed in Go (package uvlock) before any create; bench/run.py
// checks them against `lockstep closure-hash` on the dumped variants, and the
// Lockstep operator's run checks every one of them.
//
//	rtecreate -namespace NS -n 1000 -fixtures a.uv.lock,b.uv.lock -image IMG -out expected.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"lockstep.dev/bench/peers/rte"
	"lockstep.dev/bench/peers/uvlock"
)

func die(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "rtecreate: "+format+"\n", a...)
	os.Exit(1)
}

// fixture: the text before the first [[package]] and each [[package]] block;
// droppable marks the registry/git/url packages (not the project itself).
type fixture struct {
	head      string
	blocks    []string
	droppable []int
}

func split(text string) fixture {
	parts := strings.Split(text, "\n[[package]]\n")
	f := fixture{head: parts[0]}
	for i, p := range parts[1:] {
		f.blocks = append(f.blocks, p)
		src := ""
		for _, line := range strings.Split(p, "\n") {
			if strings.HasPrefix(line, "source = ") {
				src = line
				break
			}
		}
		if !strings.Contains(src, "virtual") && !strings.Contains(src, "editable") &&
			!strings.Contains(src, "directory") {
			f.droppable = append(f.droppable, i)
		}
	}
	return f
}

func (f fixture) variant(k, bits int) string {
	drop := map[int]bool{}
	for b := 0; b < bits && b < len(f.droppable); b++ {
		if k&(1<<b) != 0 {
			drop[f.droppable[b]] = true
		}
	}
	var sb strings.Builder
	sb.WriteString(f.head)
	for i, blk := range f.blocks {
		if !drop[i] {
			sb.WriteString("\n[[package]]\n")
			sb.WriteString(blk)
		}
	}
	return sb.String()
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig")
	ns := flag.String("namespace", "", "namespace (must exist)")
	n := flag.Int("n", 1000, "RuntimeEnvs to create")
	fixtures := flag.String("fixtures", "", "comma-separated uv.lock files")
	image := flag.String("image", "", "spec.image (repo@sha256:...)")
	conc := flag.Int("concurrency", 16, "creates in flight")
	bits := flag.Int("drop-bits", 12, "registry packages that variants may drop")
	out := flag.String("out", "", "expected statuses (JSON) written here")
	dump := flag.String("dump", "", "directory for a sample of variant locks (cross-check)")
	dumpEvery := flag.Int("dump-every", 97, "dump every k-th variant")
	flag.Parse()
	if *ns == "" || *fixtures == "" || *out == "" || !rte.ImagePinned(*image) || *n < 1 || *conc < 1 {
		die("need -namespace, -fixtures, -out, -n >= 1, -concurrency >= 1 and -image pinned by digest")
	}
	var fx []fixture
	for _, p := range strings.Split(*fixtures, ",") {
		b, err := os.ReadFile(p)
		if err != nil {
			die("-fixtures: %v", err)
		}
		f := split(string(b))
		if len(f.droppable) < *bits {
			die("%s: %d droppable packages, fewer than -drop-bits %d", p, len(f.droppable), *bits)
		}
		fx = append(fx, f)
	}
	if *n > len(fx)<<*bits {
		die("-n %d: at most %d distinct variants with %d fixtures and -drop-bits %d", *n, len(fx)<<*bits, len(fx), *bits)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		die("-kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 100000, 100000
	dyn := dynamic.NewForConfigOrDie(cfg)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		die("list nodes: %v", err)
	}

	locks := make([]string, *n)
	exp := rte.ExpectedFile{Namespace: *ns, Image: *image, Objects: make([]rte.Expected, *n)}
	seen := map[string]int{}
	var bytes, maxBytes int
	if *dump != "" {
		if err := os.MkdirAll(*dump, 0o755); err != nil {
			die("-dump: %v", err)
		}
	}
	for i := 0; i < *n; i++ {
		locks[i] = fx[i%len(fx)].variant(i/len(fx), *bits)
		c, err := uvlock.Hash([]byte(locks[i]))
		if err != nil {
			die("variant %d: %v", i, err)
		}
		var compatible int64
		if c.Cuda != "" {
			for _, nd := range nodes.Items {
				if d, ok := uvlock.DriverFromGfdLabels(nd.Labels); ok && !nd.Spec.Unschedulable &&
					uvlock.DriverSatisfies(d, c.MinDriver) {
					compatible++
				}
			}
		}
		name := fmt.Sprintf("rte-%05d", i)
		exp.Objects[i] = rte.Expected{Name: name, Hash: c.Hash, PackageCount: c.PackageCount, Cuda: c.Cuda,
			MinDriver: c.MinDriver, CompatibleNodes: compatible, LockBytes: len(locks[i])}
		if j, dup := seen[c.Hash]; dup {
			die("variants %d and %d have the same hash %s", j, i, c.Hash)
		}
		seen[c.Hash] = i
		bytes += len(locks[i])
		if len(locks[i]) > maxBytes {
			maxBytes = len(locks[i])
		}
		if *dump != "" && i%*dumpEvery == 0 {
			p := filepath.Join(*dump, name+".uv.lock")
			if err := os.WriteFile(p, []byte(locks[i]), 0o644); err != nil {
				die("-dump: %v", err)
			}
		}
	}

	res := dyn.Resource(rte.GVR).Namespace(*ns)
	next := make(chan int, *n)
	for i := 0; i < *n; i++ {
		next <- i
	}
	close(next)
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				o := exp.Objects[i]
				u := &unstructured.Unstructured{Object: map[string]interface{}{
					"apiVersion": "lockstep.dev/v1alpha1", "kind": "RuntimeEnv",
					"metadata": map[string]interface{}{"name": o.Name, "namespace": *ns},
					"spec": map[string]interface{}{"image": *image,
						"lock": map[string]interface{}{"inline": locks[i], "format": "uv"}},
				}}
				got, err := res.Create(ctx, u, metav1.CreateOptions{})
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("create %s/%s: %w", *ns, o.Name, err)
				}
				if err == nil {
					exp.Objects[i].Generation = got.GetGeneration()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		die("%v", firstErr)
	}
	b, _ := json.Marshal(exp)
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		die("-out: %v", err)
	}
	_ = json.NewEncoder(os.Stdout).Encode(map[string]interface{}{
		"created": *n, "seconds": elapsed.Seconds(), "creates_per_second": float64(*n) / elapsed.Seconds(),
		"distinct_hashes": len(seen), "lock_bytes_mean": bytes / *n, "lock_bytes_max": maxBytes,
		"lock_bytes_total": bytes, "concurrency": *conc,
	})
}
