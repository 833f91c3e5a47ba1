package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// The record's object lines read back as written: a namespaced
// EnvoyFilter and a cluster-scoped CRD; malformed lines are errors.
func TestObjectLine(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind, ns, name string
		want                       string
	}{
		// namespaced, a group with a version
		{"networking.istio.io/v1alpha1", "EnvoyFilter", "istio-system", "upstream-envoy", "networking.istio.io/v1alpha1/EnvoyFilter istio-system/upstream-envoy"},
		// cluster-scoped: no namespace
		{"apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "gateways.gateway.networking.k8s.io", "apiextensions.k8s.io/v1/CustomResourceDefinition /gateways.gateway.networking.k8s.io"},
		// the core group is empty
		{"v1", "ConfigMap", "a", "b", "/v1/ConfigMap a/b"},
	} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(tc.apiVersion)
		u.SetKind(tc.kind)
		u.SetNamespace(tc.ns)
		u.SetName(tc.name)
		ls, err := ObjectLines([]runtime.Object{u})
		if err != nil || len(ls) != 1 || ls[0] != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.kind, ls, err, tc.want)
			continue
		}
		l := ls[0]
		gvk, ns, name, err := parseObjectLine(l)
		if err != nil || gvk.Kind != tc.kind || ns != tc.ns || name != tc.name || gvk.GroupVersion().String() != tc.apiVersion {
			t.Errorf("%q read back as %v %q %q %v", l, gvk, ns, name, err)
		}
	}
	for _, bad := range []string{"", "EnvoyFilter a/b", "a/v1/K noslash", "a/v1/K a/"} {
		if _, _, _, err := parseObjectLine(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
