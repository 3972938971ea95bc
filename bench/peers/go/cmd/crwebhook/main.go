// crwebhook: Lockstep's pod check as a controller-runtime validating webhook,
// the way a kubebuilder project writes it: the pod decoded with
// admission.Decoder into corev1.Pod, the RuntimeEnv and the Namespace read
// from the manager's informer cache (no API call on the admission path).
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"net/http"
	"os"
	"runtime"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"lockstep.dev/bench/peers/check"
)

var runtimeEnvGVK = schema.GroupVersionKind{Group: "lockstep.dev", Version: "v1alpha1", Kind: "RuntimeEnv"}

type podValidator struct {
	cache   client.Reader
	decoder admission.Decoder
}

func (v *podValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != "CREATE" {
		return admission.Allowed("")
	}
	pod := &corev1.Pod{}
	if err := v.decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	ns := &corev1.Namespace{}
	if err := v.cache.Get(ctx, types.NamespacedName{Name: req.Namespace}, ns); err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	p := &check.Pod{Namespace: req.Namespace, Labels: pod.Labels, Annotations: pod.Annotations}
	for _, c := range pod.Spec.InitContainers {
		p.Containers = append(p.Containers, check.Container{Kind: "init container", Name: c.Name, Image: c.Image})
	}
	for _, c := range pod.Spec.Containers {
		p.Containers = append(p.Containers, check.Container{Kind: "container", Name: c.Name, Image: c.Image})
	}
	for _, c := range pod.Spec.EphemeralContainers {
		p.Containers = append(p.Containers, check.Container{Kind: "ephemeral container", Name: c.Name, Image: c.Image})
	}
	var env *check.Env
	if name := pod.Labels[check.RuntimeEnvLabel]; name != "" {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(runtimeEnvGVK)
		if err := v.cache.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: name}, u); err == nil {
			e := &check.Env{Name: name}
			e.ClosureHash, _, _ = unstructured.NestedString(u.Object, "status", "closureHash")
			e.Image, _, _ = unstructured.NestedString(u.Object, "spec", "image")
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]interface{}); ok && m["type"] == "Ready" && m["status"] == "True" {
					e.Ready = true
				}
			}
			env = e
		}
	}
	if vs := check.Validate(p, ns.Labels[check.EnforceLabel] == "enforce", env); len(vs) > 0 {
		return admission.Denied(check.Message(p, vs))
	}
	return admission.Allowed("")
}

func main() {
	port := flag.Int("port", 9443, "webhook port")
	host := flag.String("host", "127.0.0.1", "webhook bind host")
	certDir := flag.String("cert-dir", "", "directory with tls.crt and tls.key")
	threads := flag.Int("threads", 2, "GOMAXPROCS")
	flag.Parse()
	runtime.GOMAXPROCS(*threads)
	ctrl.SetLogger(zap.New(zap.UseDevMode(false)))

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 clientgoscheme.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: *host, Port: *port, CertDir: *certDir,
			TLSOpts: []func(*tls.Config){check.TLSConfig},
		}),
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		ctrl.Log.Error(err, "manager")
		os.Exit(1)
	}
	mgr.GetWebhookServer().Register("/validate/pods", &webhook.Admission{
		Handler: &podValidator{cache: mgr.GetCache(), decoder: admission.NewDecoder(mgr.GetScheme())},
	})
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		ctrl.Log.Error(err, "manager")
		os.Exit(1)
	}
}
