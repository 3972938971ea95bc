// crcontroller: the controller-runtime peer of Lockstep's RuntimeEnv
// controller for the scale benchmark, written the way a kubebuilder project
// would: a level-based reconciler over the manager's informer cache
// (RuntimeEnvs as unstructured, Nodes typed), closure hash v1 of the inline
// uv.lock in Go (package uvlock), the same status document as Lockstep's
// operator applied server-side through the status subresource, and a Normal
// "Resolved" Event when the hash changed (Lockstep records one too).
// Only inline uv.lock locks are supported: that is what the benchmark creates.
//
//	crcontroller --namespace NS --workers 2     # run against $KUBECONFIG
//	crcontroller --hash FILE...                 # print each uv.lock's hash (cross-check)
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"lockstep.dev/bench/peers/rte"
	"lockstep.dev/bench/peers/uvlock"
)

const fieldManager = "crcontroller"

type reconciler struct {
	client.Client
	events record.EventRecorder
}

func newRTE() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(rte.GVK)
	return u
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	u := newRTE()
	if err := r.Get(ctx, req.NamespacedName, u); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	gen := u.GetGeneration()
	oldStatus, _, _ := unstructured.NestedMap(u.Object, "status")
	oldHash, _, _ := unstructured.NestedString(u.Object, "status", "closureHash")
	oldConds, _ := oldStatus["conditions"].([]interface{})
	image, _, _ := unstructured.NestedString(u.Object, "spec", "image")
	inline, hasInline, _ := unstructured.NestedString(u.Object, "spec", "lock", "inline")

	var status map[string]interface{}
	var closure uvlock.Closure
	resolved := false
	switch {
	case !rte.ImagePinned(image):
		status = rte.Failed("ImageNotPinned", fmt.Sprintf("spec.image %q is not pinned by digest", image), gen, now, oldStatus)
	case !hasInline:
		status = rte.Failed("LockParseError", "this peer resolves spec.lock.inline only", gen, now, oldStatus)
	default:
		c, err := uvlock.Hash([]byte(inline))
		if err != nil {
			status = rte.Failed("LockParseError", err.Error(), gen, now, oldStatus)
			break
		}
		closure, resolved = c, true
		var compatible int64
		if c.Cuda != "" {
			nodes := &corev1.NodeList{}
			if err := r.List(ctx, nodes); err != nil {
				return reconcile.Result{}, fmt.Errorf("list nodes from the cache: %w", err)
			}
			for _, n := range nodes.Items {
				if n.Spec.Unschedulable {
					continue
				}
				if d, ok := uvlock.DriverFromGfdLabels(n.Labels); ok && uvlock.DriverSatisfies(d, c.MinDriver) {
					compatible++
				}
			}
		}
		status = rte.Status(rte.Resolved{Closure: c, Image: image, Generation: gen, CompatibleNodes: compatible}, now, oldConds)
	}
	if same(status, oldStatus) {
		return reconcile.Result{}, nil
	}
	apply := newRTE()
	apply.SetName(u.GetName())
	apply.SetNamespace(u.GetNamespace())
	apply.Object["status"] = status
	if err := r.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(apply),
		client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return reconcile.Result{}, fmt.Errorf("apply status of %s: %w", req.NamespacedName, err)
	}
	if resolved && closure.Hash != oldHash {
		r.events.Event(u, corev1.EventTypeNormal, "Resolved", rte.ReadyMessage(closure))
	}
	return reconcile.Result{}, nil
}

// same compares two status documents as JSON (the cache's numbers are int64, ours too).
func same(a, b map[string]interface{}) bool {
	if b == nil {
		return false
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

func hashFiles(files []string) int {
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "crcontroller: --hash: %v\n", err)
			return 1
		}
		c, err := uvlock.Hash(b)
		if err != nil {
			fmt.Fprintf(os.Stderr, "crcontroller: %s: %v\n", f, err)
			return 1
		}
		fmt.Printf("%s %s %d %s\n", f, c.Hash, c.PackageCount, c.Cuda)
	}
	return 0
}

func main() {
	ns := flag.String("namespace", "", "namespace whose RuntimeEnvs to reconcile (required)")
	workers := flag.Int("workers", 2, "MaxConcurrentReconciles (Lockstep: --workers)")
	threads := flag.Int("threads", 2, "GOMAXPROCS")
	hash := flag.Bool("hash", false, "print the closure hash of each uv.lock argument and exit")
	flag.Parse()
	if *hash {
		os.Exit(hashFiles(flag.Args()))
	}
	if *ns == "" || *workers < 1 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "crcontroller: --namespace is required, --workers >= 1, no arguments")
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*threads)
	ctrl.SetLogger(zap.New(zap.UseDevMode(false)))
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "crcontroller: kubeconfig: %v\n", err)
		os.Exit(1)
	}
	// Lockstep's client has no client-side rate limit; neither has this one.
	cfg.QPS, cfg.Burst = 100000, 100000
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 clientgoscheme.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			newRTE(): {Namespaces: map[string]cache.Config{*ns: {}}},
		}},
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "crcontroller: manager: %v\n", err)
		os.Exit(1)
	}
	r := &reconciler{Client: mgr.GetClient(), events: mgr.GetEventRecorderFor(fieldManager)} //nolint:staticcheck
	// Any Node change re-counts compatible nodes for every RuntimeEnv, as Lockstep's controller does.
	allRTEs := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(rte.GVK.GroupVersion().WithKind("RuntimeEnvList"))
		if err := mgr.GetClient().List(ctx, l, client.InNamespace(*ns)); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(l.Items))
		for _, it := range l.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&it)})
		}
		return out
	})
	err = ctrl.NewControllerManagedBy(mgr).Named("runtimeenv").For(newRTE()).
		Watches(&corev1.Node{}, allRTEs).
		WithOptions(controller.Options{MaxConcurrentReconciles: *workers}).
		Complete(r)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crcontroller: controller: %v\n", err)
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintf(os.Stderr, "crcontroller: %v\n", err)
		os.Exit(1)
	}
}
