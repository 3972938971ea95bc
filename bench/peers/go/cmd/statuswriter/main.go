// statuswriter: the limit of the scale benchmark. For RuntimeEnvs that
// already exist, it only writes each one's precomputed status (the document
// Lockstep's operator writes, package rte) by server-side apply to the status
// subresource, with as many writes in flight as the controllers have workers,
// and times first write to last. No cache, no parsing, no hashing, no Events.
//
//	statuswriter -expected expected.json -workers 2
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"lockstep.dev/bench/peers/rte"
	"lockstep.dev/bench/peers/uvlock"
)

func die(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "statuswriter: "+format+"\n", a...)
	os.Exit(1)
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig")
	expected := flag.String("expected", "", "rtecreate's -out file")
	workers := flag.Int("workers", 2, "writes in flight (the controllers' workers)")
	manager := flag.String("field-manager", "statuswriter", "field manager")
	flag.Parse()
	if *expected == "" || *workers < 1 {
		die("need -expected and -workers >= 1")
	}
	exp, err := rte.ReadExpected(*expected)
	if err != nil {
		die("-expected: %v", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		die("-kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 100000, 100000
	res := dynamic.NewForConfigOrDie(cfg).Resource(rte.GVR).Namespace(exp.Namespace)
	now := time.Now().UTC().Format(time.RFC3339)
	bodies := make([]*unstructured.Unstructured, len(exp.Objects))
	for i, o := range exp.Objects {
		c := uvlock.Closure{Hash: o.Hash, PackageCount: o.PackageCount, Cuda: o.Cuda, MinDriver: o.MinDriver}
		st := rte.Status(rte.Resolved{Closure: c, Image: exp.Image, Generation: o.Generation,
			CompatibleNodes: o.CompatibleNodes}, now, nil)
		bodies[i] = &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "lockstep.dev/v1alpha1", "kind": "RuntimeEnv",
			"metadata": map[string]interface{}{"name": o.Name, "namespace": exp.Namespace},
			"status":   st,
		}}
	}
	next := make(chan int, len(bodies))
	for i := range bodies {
		next <- i
	}
	close(next)
	ctx := context.Background()
	var mu sync.Mutex
	var firstErr error
	errs := 0
	var first, last time.Time
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t0 := time.Now()
				_, err := res.ApplyStatus(ctx, bodies[i].GetName(), bodies[i],
					metav1.ApplyOptions{FieldManager: *manager, Force: true})
				t1 := time.Now()
				mu.Lock()
				if first.IsZero() || t0.Before(first) {
					first = t0
				}
				if t1.After(last) {
					last = t1
				}
				if err != nil {
					errs++
					if firstErr == nil {
						firstErr = fmt.Errorf("apply status of %s: %w", bodies[i].GetName(), err)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	out := map[string]interface{}{"writes": len(bodies), "errors": errs, "workers": *workers,
		"first_write_unix": unix(first), "last_write_unix": unix(last),
		"seconds": last.Sub(first).Seconds(), "writes_per_second": float64(len(bodies)) / last.Sub(first).Seconds()}
	if firstErr != nil {
		out["first_error"] = firstErr.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
	if firstErr != nil {
		die("%v", firstErr)
	}
}
