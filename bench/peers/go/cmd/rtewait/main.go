// rtewait: the scale benchmark's observer. Lists the namespace's RuntimeEnvs,
// writes --ready-file once its watch is open, then records the moment each
// object's status first carries its expected closure hash (Ready=True for its
// generation) and exits when all have it. A status with any other hash is
// counted as wrong: the run fails loudly (exit 1) rather than time a wrong
// answer. Events are decoded into the few fields read (encoding/json skips the
// rest), so the observer costs the same whichever controller is measured.
//
//	rtewait -expected expected.json -ready-file F -timeout 30m
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"lockstep.dev/bench/peers/rte"
)

type object struct {
	Metadata struct {
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Status struct {
		ClosureHash        string `json:"closureHash"`
		ObservedGeneration int64  `json:"observedGeneration"`
		Conditions         []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

type state struct {
	want        map[string]rte.Expected
	matched     map[string]time.Time
	wrong       int
	firstWrong  string
	first, last time.Time
}

func (s *state) see(o *object, now time.Time) {
	e, ok := s.want[o.Metadata.Name]
	if !ok || o.Status.ClosureHash == "" {
		return
	}
	if _, done := s.matched[o.Metadata.Name]; done {
		return
	}
	if o.Status.ClosureHash != e.Hash {
		s.wrong++
		if s.firstWrong == "" {
			s.firstWrong = fmt.Sprintf("%s: status.closureHash %s, expected %s", o.Metadata.Name, o.Status.ClosureHash, e.Hash)
		}
		return
	}
	ready := false
	for _, c := range o.Status.Conditions {
		if c.Type == "Ready" && c.Status == "True" {
			ready = true
		}
	}
	if !ready || o.Status.ObservedGeneration != e.Generation {
		return
	}
	s.matched[o.Metadata.Name] = now
	if s.first.IsZero() {
		s.first = now
	}
	s.last = now
}

func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig")
	expected := flag.String("expected", "", "rtecreate's -out file")
	readyFile := flag.String("ready-file", "", "written once the watch is open")
	timeout := flag.Duration("timeout", 30*time.Minute, "give up after")
	flag.Parse()
	die := func(format string, a ...interface{}) {
		fmt.Fprintf(os.Stderr, "rtewait: "+format+"\n", a...)
		os.Exit(1)
	}
	if *expected == "" {
		die("need -expected")
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
	rc := kubernetes.NewForConfigOrDie(cfg).CoreV1().RESTClient()
	path := "/apis/lockstep.dev/v1alpha1/namespaces/" + exp.Namespace + "/runtimeenvs"
	s := &state{want: map[string]rte.Expected{}, matched: map[string]time.Time{}}
	for _, o := range exp.Objects {
		s.want[o.Name] = o
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []object `json:"items"`
	}
	body, err := rc.Get().AbsPath(path).DoRaw(ctx)
	if err != nil {
		die("list %s: %v", path, err)
	}
	if err := json.Unmarshal(body, &list); err != nil {
		die("list %s: %v", path, err)
	}
	now := time.Now()
	for i := range list.Items {
		s.see(&list.Items[i], now)
	}
	if len(s.matched) > 0 {
		die("%d objects already carry their hash before the controller started", len(s.matched))
	}
	rv := list.Metadata.ResourceVersion
	readyWritten := false
	for len(s.matched) < len(s.want) && s.wrong == 0 {
		stream, err := rc.Get().AbsPath(path).Param("watch", "true").Param("resourceVersion", rv).
			Param("allowWatchBookmarks", "true").Stream(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			die("watch %s: %v", path, err)
		}
		if !readyWritten && *readyFile != "" {
			if err := os.WriteFile(*readyFile, []byte("watching\n"), 0o644); err != nil {
				die("-ready-file: %v", err)
			}
			readyWritten = true
		}
		dec := json.NewDecoder(stream)
		for len(s.matched) < len(s.want) && s.wrong == 0 {
			var ev struct {
				Type   string `json:"type"`
				Object object `json:"object"`
			}
			if err := dec.Decode(&ev); err != nil {
				if err != io.EOF && ctx.Err() == nil {
					fmt.Fprintf(os.Stderr, "rtewait: watch ended (%v); resuming from %s\n", err, rv)
				}
				break
			}
			if ev.Type == "ERROR" {
				die("watch error event (resourceVersion %s too old?)", rv)
			}
			if ev.Object.Metadata.ResourceVersion != "" {
				rv = ev.Object.Metadata.ResourceVersion
			}
			if ev.Type == "ADDED" || ev.Type == "MODIFIED" {
				s.see(&ev.Object, time.Now())
			}
		}
		stream.Close()
		if ctx.Err() != nil {
			break
		}
	}
	out := map[string]interface{}{"expected": len(s.want), "matched": len(s.matched), "wrong": s.wrong,
		"first_match_unix": unix(s.first), "last_match_unix": unix(s.last)}
	if s.firstWrong != "" {
		out["first_wrong"] = s.firstWrong
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
	if s.wrong > 0 {
		die("wrong hash: %s", s.firstWrong)
	}
	if len(s.matched) < len(s.want) {
		die("timed out after %s: %d of %d statuses carry their hash", *timeout, len(s.matched), len(s.want))
	}
}
