// Package client is meshbench's access to a Kubernetes cluster: the
// clients built from a kubeconfig (Connect) and server-side apply of typed
// or unstructured objects (Apply). What meshbench runs on a cluster lives
// in platform/kube, which builds on it.
package client

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/mesh"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
)

// ConnectOptions choose the cluster: the usual kubeconfig rules
// (--kubeconfig, else $KUBECONFIG, else ~/.kube/config) and a context
// (empty: the current one).
type ConnectOptions struct {
	Kubeconfig string
	Context    string
	// Timeout bounds every API request (0: 30 s).
	Timeout time.Duration
}

// Client is a connection to one cluster: its typed, dynamic and
// metrics clients and a REST mapper.
type Client struct {
	Config  *rest.Config
	Core    kubernetes.Interface
	Dynamic dynamic.Interface
	Metrics metricsclient.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	// Context is the kubeconfig context used, Server the API server's URL
	// and Version its version (e.g. v1.36.3).
	Context, Server, Version string
}

// Connect reads the kubeconfig and checks that the API server answers.
func Connect(ctx context.Context, o ConnectOptions) (*Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	cfg.Timeout = o.Timeout
	cfg.UserAgent = "meshbench"
	// The defaults (5 QPS, burst 10) make a 90-replica setup crawl.
	cfg.QPS, cfg.Burst = 50, 100
	c := &Client{Config: cfg, Context: raw.CurrentContext, Server: cfg.Host}
	if o.Context != "" {
		c.Context = o.Context
	}
	if c.Core, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Metrics, err = metricsclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	v, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("API server %s (context %q) does not answer: %w", cfg.Host, c.Context, err)
	}
	c.Version = v.GitVersion
	return c, nil
}

// FieldManager is the server-side apply field manager of everything
// meshbench applies.
const FieldManager = "meshbench"

// Apply creates or updates objs with server-side apply, in order. Typed
// objects (a Deployment) and unstructured ones (a mesh's CRDs) are both
// accepted; a kind the cluster does not serve is an error naming it and
// the mesh that would have installed it. An object an admission webhook
// refused because it has not seen the object's namespace yet
// (NamespaceNotCached) is applied again for up to WebhookCacheWait.
func (c *Client) Apply(ctx context.Context, objs []runtime.Object) error {
	for _, obj := range objs {
		u, gvk, err := ToUnstructured(obj)
		if err != nil {
			return err
		}
		ri, err := c.Resource(gvk.GroupVersion().WithKind(gvk.Kind), u.GetNamespace())
		if err != nil {
			return err
		}
		deadline := time.Now().Add(WebhookCacheWait)
		for {
			_, err = ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
			if err == nil || !NamespaceNotCached(err, u.GetNamespace()) || time.Now().After(deadline) {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
			if ctx.Err() != nil {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("applying %s %s: %w", gvk.Kind, objectName(u), err)
		}
	}
	return nil
}

// WebhookCacheWait bounds how long Apply applies again an object that an
// admission webhook refused because its namespace is not in the webhook's
// cache yet.
var WebhookCacheWait = 30 * time.Second

// NamespaceNotCached reports whether err is an admission webhook's refusal
// of an object in namespace ns because the webhook has not seen ns:
// Linkerd's proxy-injector reads the namespace from its informer's cache,
// which lags a namespace just made (a cell's namespaces are deleted and
// made again between cells), and its webhook fails closed ("admission
// webhook "linkerd-proxy-injector.linkerd.io" denied the request:
// namespaces "NS" not found"). The API server says so only in the
// message.
func NamespaceNotCached(err error, ns string) bool {
	if err == nil || ns == "" {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "admission webhook") && strings.Contains(msg, "denied the request") &&
		strings.Contains(msg, fmt.Sprintf("namespaces %q not found", ns))
}

// Resource is the dynamic client for kind gvk in namespace ns; a kind
// the cluster does not serve is an error naming what installs it.
func (c *Client) Resource(gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		// The discovery cache may predate a mesh install: refresh once.
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, &notServedError{fmt.Sprintf("the cluster does not serve %s (%s)%s", gvk.Kind, gvk.GroupVersion(), crdHint(gvk.Group)), err}
		}
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.Dynamic.Resource(m.Resource).Namespace(ns), nil
	}
	return c.Dynamic.Resource(m.Resource), nil
}

// notServedError is Resource's error for a kind the cluster does not
// serve: its message names what installs the kind, and meta.IsNoMatchError
// holds for it.
type notServedError struct {
	msg string
	err error
}

func (e *notServedError) Error() string { return e.msg }
func (e *notServedError) Unwrap() error { return e.err }

// crdHint names what installs a group's CRDs: the mesh whose descriptor
// claims the group, or the Gateway API.
func crdHint(group string) string {
	if group == "gateway.networking.k8s.io" {
		return ": are the Gateway API CRDs installed (Istio ambient's waypoints need them)?"
	}
	for _, m := range mesh.All() {
		if g := m.Cluster.APIGroup; g != "" && strings.HasSuffix(group, g) {
			return ": is " + m.Product + " installed?"
		}
	}
	return ""
}

// ToUnstructured is obj as an unstructured object ready for server-side
// apply (its kind filled in from the scheme, no status or null
// creationTimestamp).
func ToUnstructured(obj runtime.Object) (*unstructured.Unstructured, schema.GroupVersionKind, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		kinds, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil || len(kinds) == 0 {
			return nil, gvk, fmt.Errorf("object %T: unknown kind: %v", obj, err)
		}
		gvk = kinds[0]
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, gvk, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, gvk, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	// Server-side apply rejects a status and a creationTimestamp of null.
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, gvk, nil
}

func objectName(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}
