// podcreate: pod-create latency through the real API server. Creates N pods
// from a template (one at a time, or --concurrency at once), times each
// create call, deletes them, prints one JSON object. The pods name a node
// that does not exist, so no scheduler or kubelet work follows a create.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"lockstep.dev/bench/peers/stats"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig")
	ns := flag.String("namespace", "", "namespace")
	tmpl := flag.String("pod", "", "pod JSON template (metadata.generateName is used)")
	n := flag.Int("n", 1000, "pods to create")
	warm := flag.Int("warmup", 50, "creates before timing (not counted)")
	conc := flag.Int("concurrency", 1, "creates in flight")
	run := flag.String("run", "bench", "label value lockstep.dev/bench-run on every pod (cleanup)")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("--kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 100000, 100000 // the client's rate limiter must not be what is measured
	cs := kubernetes.NewForConfigOrDie(cfg)
	raw, err := os.ReadFile(*tmpl)
	if err != nil {
		log.Fatalf("--pod: %v", err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(raw, &pod); err != nil {
		log.Fatalf("--pod %s: %v", *tmpl, err)
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels["lockstep.dev/bench-run"] = *run
	pod.Spec.NodeName = "bench-no-such-node"
	ctx := context.Background()
	pods := cs.CoreV1().Pods(*ns)

	create := func() (time.Duration, error) {
		p := pod.DeepCopy()
		t := time.Now()
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		return time.Since(t), err
	}
	for i := 0; i < *warm; i++ {
		if _, err := create(); err != nil {
			log.Fatalf("warm-up create: %v", err)
		}
	}
	var mu sync.Mutex
	lat := make([]time.Duration, 0, *n)
	var firstErr error
	errs := 0
	next := make(chan struct{}, *n)
	for i := 0; i < *n; i++ {
		next <- struct{}{}
	}
	close(next)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				d, err := create()
				mu.Lock()
				if err != nil {
					errs++
					if firstErr == nil {
						firstErr = err
					}
				} else {
					lat = append(lat, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	zero := int64(0)
	sel := metav1.ListOptions{LabelSelector: "lockstep.dev/bench-run=" + *run}
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, sel); err != nil {
		log.Printf("cleanup: %v", err)
	}
	out := struct {
		Creates    int           `json:"creates"`
		Errors     int           `json:"errors"`
		FirstError string        `json:"first_error,omitempty"`
		PerSecond  float64       `json:"creates_per_second"`
		Latency    stats.Summary `json:"latency"`
	}{*n, errs, fmt.Sprint(firstErr), float64(len(lat)) / elapsed.Seconds(), stats.Summarize(lat)}
	if firstErr == nil {
		out.FirstError = ""
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}
