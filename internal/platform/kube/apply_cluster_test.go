package kube

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

// TestApplyWaitsForWebhookCache: an admission webhook that refuses an
// object because it has not seen the object's namespace yet (Linkerd's
// proxy-injector just after a cell's namespace was made again, seen on
// the test nodes) gets the object again until it allows it; any other
// refusal is Apply's error at once. The webhook is a real HTTPS server
// the test cluster's API server calls.
func TestApplyWaitsForWebhookCache(t *testing.T) {
	kc := kubetest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Connect(ctx, ConnectOptions{Kubeconfig: kc.Kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	const ns = "mbwh"
	const (
		allow = iota
		notCached
		refuse
	)
	var mode, calls, denials atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rev admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&rev); err != nil || rev.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		resp := &admissionv1.AdmissionResponse{UID: rev.Request.UID, Allowed: true}
		if rev.Request.Name == "kube-root-ca.crt" {
			// kube-controller-manager's root CA publisher writes this
			// ConfigMap into every new namespace, whenever it gets to it
			// (once in the middle of the counted calls, on the test
			// nodes): not the test's, always allowed, not counted.
			rev.Request, rev.Response = nil, resp
			_ = json.NewEncoder(w).Encode(rev)
			return
		}
		calls.Add(1)
		switch mode.Load() {
		case notCached:
			if denials.Add(1) <= 2 {
				resp.Allowed, resp.Result = false, &metav1.Status{Message: fmt.Sprintf("namespaces %q not found", rev.Request.Namespace)}
			}
		case refuse:
			resp.Allowed, resp.Result = false, &metav1.Status{Message: "refused by the test's webhook"}
		}
		rev.Request, rev.Response = nil, resp
		_ = json.NewEncoder(w).Encode(rev)
	}))
	srv.StartTLS()
	defer srv.Close()

	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	url := srv.URL + "/"
	timeout := int32(5)
	hook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "meshbench-test-ns-cache"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "ns-cache.meshbench.test",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url,
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          &timeout,
		}},
	}
	t.Cleanup(func() {
		bg := context.Background()
		_ = c.Core.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(bg, hook.Name, metav1.DeleteOptions{})
		_ = c.Core.CoreV1().Namespaces().Delete(bg, ns, metav1.DeleteOptions{})
	})
	if err := c.Apply(ctx, []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, hook}); err != nil {
		t.Fatal(err)
	}
	cm := func(name string) []runtime.Object {
		return []runtime.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}}
	}
	// The API server takes up the webhook shortly after it is made.
	mode.Store(refuse)
	for c.Apply(ctx, cm("probe")) == nil {
		if ctx.Err() != nil {
			t.Fatal("the API server never called the test's webhook")
		}
		time.Sleep(200 * time.Millisecond)
	}

	calls.Store(0)
	mode.Store(notCached)
	if err := c.Apply(ctx, cm("after-cache")); err != nil {
		t.Errorf("refused twice as not cached, then allowed: %v; want applied", err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("the webhook was called %d times, want 3 (two refusals, then allowed)", n)
	}

	calls.Store(0)
	mode.Store(refuse)
	err = c.Apply(ctx, cm("refused"))
	if err == nil || !strings.Contains(err.Error(), "refused by the test's webhook") {
		t.Errorf("refused for another reason: %v; want that refusal", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("another refusal: the webhook was called %d times, want 1 (not applied again)", n)
	}
}
