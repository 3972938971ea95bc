// plainwebhook: Lockstep's pod check on Go's net/http + encoding/json, with
// the RuntimeEnvs and namespace modes read once from the same lookups file
// lockstep-webhook-dev takes. The floor of a Go webhook: no framework, no
// informer, the pod decoded into the few fields the check reads.
package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"

	"lockstep.dev/bench/peers/check"
)

type lookups struct {
	RuntimeEnvs []struct {
		Namespace, Name, ClosureHash, Image string
		Ready                               bool
	} `json:"runtimeEnvs"`
	Namespaces map[string]string `json:"namespaces"`
}

type container struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}

type review struct {
	Request *struct {
		UID       string `json:"uid"`
		Namespace string `json:"namespace"`
		Operation string `json:"operation"`
		Object    struct {
			Metadata struct {
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Spec struct {
				InitContainers      []container `json:"initContainers"`
				Containers          []container `json:"containers"`
				EphemeralContainers []container `json:"ephemeralContainers"`
			} `json:"spec"`
		} `json:"object"`
	} `json:"request"`
}

type status struct {
	Code    int    `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

type response struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Response   struct {
		UID     string  `json:"uid"`
		Allowed bool    `json:"allowed"`
		Status  *status `json:"status,omitempty"`
	} `json:"response"`
}

func main() {
	config := flag.String("config", "", "lookups JSON (lockstep-webhook-dev's format)")
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	portFile := flag.String("port-file", "", "write the bound port here once serving")
	cert := flag.String("cert", "", "serving certificate (PEM)")
	key := flag.String("key", "", "serving key (PEM)")
	threads := flag.Int("threads", 2, "GOMAXPROCS")
	flag.Parse()
	runtime.GOMAXPROCS(*threads)

	raw, err := os.ReadFile(*config)
	if err != nil {
		log.Fatalf("--config: %v", err)
	}
	var l lookups
	if err := json.Unmarshal(raw, &l); err != nil {
		log.Fatalf("--config %s: %v", *config, err)
	}
	envs := map[string]*check.Env{}
	for _, e := range l.RuntimeEnvs {
		envs[e.Namespace+"/"+e.Name] = &check.Env{Name: e.Name, ClosureHash: e.ClosureHash, Image: e.Image, Ready: e.Ready}
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/validate/pods", func(w http.ResponseWriter, r *http.Request) {
		var in review
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, fmt.Sprintf("bad AdmissionReview: %v", err), http.StatusBadRequest)
			return
		}
		req := in.Request
		var out response
		out.APIVersion, out.Kind = "admission.k8s.io/v1", "AdmissionReview"
		out.Response.UID, out.Response.Allowed = req.UID, true
		if req.Operation == "CREATE" {
			mode := l.Namespaces[req.Namespace]
			pod := &check.Pod{Namespace: req.Namespace, Labels: req.Object.Metadata.Labels,
				Annotations: req.Object.Metadata.Annotations}
			for _, c := range req.Object.Spec.InitContainers {
				pod.Containers = append(pod.Containers, check.Container{Kind: "init container", Name: c.Name, Image: c.Image})
			}
			for _, c := range req.Object.Spec.Containers {
				pod.Containers = append(pod.Containers, check.Container{Kind: "container", Name: c.Name, Image: c.Image})
			}
			for _, c := range req.Object.Spec.EphemeralContainers {
				pod.Containers = append(pod.Containers, check.Container{Kind: "ephemeral container", Name: c.Name, Image: c.Image})
			}
			env := envs[req.Namespace+"/"+pod.Labels[check.RuntimeEnvLabel]]
			if v := check.Validate(pod, mode == "enforce", env); len(v) > 0 {
				out.Response.Allowed = false
				out.Response.Status = &status{Code: 403, Reason: "Forbidden", Message: check.Message(pod, v)}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&out)
	})

	pair, err := tls.LoadX509KeyPair(*cert, *key)
	if err != nil {
		log.Fatalf("--cert/--key: %v", err)
	}
	tcfg := &tls.Config{Certificates: []tls.Certificate{pair}}
	check.TLSConfig(tcfg)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("listen %s: %v", *addr, err)
	}
	if *portFile != "" {
		port := ln.Addr().(*net.TCPAddr).Port
		if err := os.WriteFile(*portFile, []byte(fmt.Sprintf("%d\n", port)), 0o644); err != nil {
			log.Fatalf("--port-file: %v", err)
		}
	}
	srv := &http.Server{Handler: mux, TLSConfig: tcfg}
	log.Fatal(srv.Serve(tls.NewListener(ln, tcfg)))
}
