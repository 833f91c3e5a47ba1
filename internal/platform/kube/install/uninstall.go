package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/manifest"
	"github.com/meshbench/meshbench/internal/platform/kube/client"
)

// RecordName is the ConfigMap (in istio-system) where meshbench's Istio
// install records what it did beside `istioctl install`, so that
// Uninstall removes exactly that: the CRDs the cluster had before the
// first install (keyed RecordCRDsBefore, one name a line) and every object
// it applied (RecordApplied, one "group/version/Kind namespace/name" a
// line). A later install (another profile) keeps the first install's CRD
// list and adds its objects.
const (
	RecordName       = "meshbench-mesh-install"
	RecordCRDsBefore = "crds-before"
	RecordApplied    = "applied"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CRDNames lists the cluster's CustomResourceDefinitions, sorted.
func CRDNames(ctx context.Context, c *client.Client) ([]string, error) {
	l, err := c.Dynamic.Resource(crdGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing CRDs: %w", err)
	}
	var names []string
	for _, it := range l.Items {
		names = append(names, it.GetName())
	}
	slices.Sort(names)
	return names, nil
}

// WriteRecord records in ns/RecordName that meshbench installed a mesh
// there, with crdsBefore (the CRDs before this install; an existing
// record's list is kept) and the objects it applied (ObjectLines; added
// to the record's).
func WriteRecord(ctx context.Context, c *client.Client, ns string, crdsBefore []string, applied []string) error {
	cms := c.Core.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, RecordName, metav1.GetOptions{})
	create := apierrors.IsNotFound(err)
	if err != nil && !create {
		return fmt.Errorf("reading %s/%s: %w", ns, RecordName, err)
	}
	if create {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: RecordName, Namespace: ns,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "meshbench"}},
			Data: map[string]string{RecordCRDsBefore: strings.Join(crdsBefore, "\n")}}
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	lines := splitLines(cm.Data[RecordApplied])
	for _, l := range applied {
		if !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	cm.Data[RecordApplied] = strings.Join(lines, "\n")
	if create {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	} else {
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing %s/%s: %w", ns, RecordName, err)
	}
	return nil
}

// ObjectLines are objs as the record keeps them: "group/version/Kind
// namespace/name" each ("namespace" empty for cluster-scoped objects).
func ObjectLines(objs []runtime.Object) ([]string, error) {
	var out []string
	for _, o := range objs {
		u, gvk, err := client.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		out = append(out, gvk.Group+"/"+gvk.Version+"/"+gvk.Kind+" "+u.GetNamespace()+"/"+u.GetName())
	}
	return out, nil
}

// parseObjectLine reads objectLine's form back.
func parseObjectLine(l string) (gvk schema.GroupVersionKind, ns, name string, err error) {
	k, o, ok := strings.Cut(l, " ")
	parts := strings.Split(k, "/")
	ns, name, ok2 := strings.Cut(o, "/")
	if !ok || !ok2 || len(parts) != 3 || name == "" {
		return gvk, "", "", fmt.Errorf("record line %q: want group/version/Kind namespace/name", l)
	}
	return schema.GroupVersionKind{Group: parts[0], Version: parts[1], Kind: parts[2]}, ns, name, nil
}

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// UninstallOptions say how to remove a mesh.
type UninstallOptions struct {
	// CLI is the mesh's CLI ("": istioctl or linkerd on PATH).
	CLI string
	// Kubeconfig and Context are passed to the CLI as given.
	Kubeconfig, Context string
	// Timeout bounds each wait: for the mesh's namespace to be gone
	// (istio-cni's pods take their plugin out of the nodes' CNI chains as
	// they stop) and for its CRDs to be gone.
	Timeout time.Duration
	// Log gets one line per step (nil: none).
	Log io.Writer
}

func (o UninstallOptions) cli(def string) string {
	if o.CLI != "" {
		return o.CLI
	}
	return def
}

func (o UninstallOptions) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return 3 * time.Minute
}

// Step is one thing Uninstall did, with what it found.
type Step struct {
	What   string `json:"what"`
	Detail string `json:"detail"`
	Err    string `json:"error,omitempty"`
}

// uninstall is one uninstall's steps so far, logged as they are taken.
type uninstall struct {
	c     *client.Client
	o     UninstallOptions
	steps []Step
	errs  []error
}

func (u *uninstall) step(what, detail string, err error) {
	s := Step{What: what, Detail: detail}
	if err != nil {
		s.Err = err.Error()
		u.errs = append(u.errs, fmt.Errorf("%s: %w", what, err))
	}
	u.steps = append(u.steps, s)
	if u.o.Log != nil {
		st := "ok"
		if err != nil {
			st = "FAIL: " + err.Error()
		}
		fmt.Fprintf(u.o.Log, "%s: %s (%s)\n", what, detail, st)
	}
}

func (u *uninstall) done() ([]Step, error) { return u.steps, errors.Join(u.errs...) }

// record reads the install record in ns (before anything goes): the CRDs
// the cluster had before meshbench's first install, and the objects it
// applied. ok is false without one.
func (u *uninstall) record(ctx context.Context, ns, mesh string) (crdsBefore, applied []string, ok bool) {
	cm, err := u.c.Core.CoreV1().ConfigMaps(ns).Get(ctx, RecordName, metav1.GetOptions{})
	switch {
	case err == nil:
		crdsBefore, applied = splitLines(cm.Data[RecordCRDsBefore]), splitLines(cm.Data[RecordApplied])
		u.step("meshbench's install record", fmt.Sprintf("%s/%s: %d objects applied, %d CRDs before", ns, RecordName, len(applied), len(crdsBefore)), nil)
		return crdsBefore, applied, true
	case apierrors.IsNotFound(err):
		u.step("meshbench's install record", "none in "+ns+": "+mesh+" was not installed by meshbench (or is gone); no CRD will be deleted", nil)
	default:
		u.step("meshbench's install record", ns+"/"+RecordName, err)
	}
	return nil, nil, false
}

// deleteObjects deletes the objects of lines (ObjectLines' form) but the
// CRDs and those whose kind is in skip, while their kinds are still
// served; it returns the CRDs among them and how many it deleted (or
// found gone).
func (u *uninstall) deleteObjects(ctx context.Context, lines []string, skip ...string) (crds []string, n int, err error) {
	var errs []error
	for _, l := range lines {
		gvk, ns, name, err := parseObjectLine(l)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if gvk.Group == crdGVR.Group && gvk.Kind == "CustomResourceDefinition" {
			crds = append(crds, name)
			continue
		}
		if slices.Contains(skip, gvk.Kind) {
			continue
		}
		ri, err := u.c.Resource(gvk, ns)
		if err == nil {
			err = ri.Delete(ctx, name, metav1.DeleteOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) && !strings.Contains(err.Error(), "not serve") {
			errs = append(errs, fmt.Errorf("%s: %w", l, err))
			continue
		}
		n++
	}
	return crds, n, errors.Join(errs...)
}

// deleteNamespace deletes ns and waits until it is gone.
func (u *uninstall) deleteNamespace(ctx context.Context, ns string) {
	timeout := u.o.timeout()
	start := time.Now()
	err := u.c.Core.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	if err == nil {
		err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
			_, err := u.c.Core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			err = fmt.Errorf("still there after %s: %w", timeout, err)
		}
	}
	u.step("namespace "+ns+" deleted", fmt.Sprintf("gone after %.1f s", time.Since(start).Seconds()), err)
}

// deleteCRDs deletes the CRDs of crds the cluster did not have before
// meshbench's first install (never one of crdsBefore) and waits until they
// are gone (the API server first removes their objects).
func (u *uninstall) deleteCRDs(ctx context.Context, crds, crdsBefore []string) {
	var gone []string
	var errs []error
	kept := 0
	for _, name := range crds {
		if slices.Contains(crdsBefore, name) {
			kept++
			continue
		}
		if slices.Contains(gone, name) {
			continue
		}
		err := u.c.Dynamic.Resource(crdGVR).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		gone = append(gone, name)
	}
	if len(gone) > 0 {
		timeout := u.o.timeout()
		var left []string
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			left = left[:0]
			for _, name := range gone {
				if _, err := u.c.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					left = append(left, name)
				}
			}
			return len(left) == 0, nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("still there after %s: %s", timeout, strings.Join(left, ", ")))
		}
	}
	u.step("CRDs meshbench applied", fmt.Sprintf("%d deleted (%d it applied existed before and stay)", len(gone), kept), errors.Join(errs...))
}

// UninstallIstio removes Istio from c and what meshbench's install added:
// the objects the record lists (the overlay's EnvoyFilters) first, then
// `istioctl uninstall --purge`, istio-system (waited for until gone: its
// istio-cni pods undo the nodes' CNI chains as they stop, as istio-cni's
// own cleanup does), the CRDs meshbench applied that the cluster did not
// have before (Gateway API; never one that existed before), and the
// istio-ca-root-cert/istio-ca-crl ConfigMaps istiod copied into every
// namespace (only once istiod is gone: it writes them again while it
// runs). Without a record (Istio not installed by meshbench) it purges
// Istio and its ConfigMaps but deletes no CRD. It goes on past a failed
// step and returns every step and their errors joined.
func UninstallIstio(ctx context.Context, c *client.Client, o UninstallOptions) ([]Step, error) {
	u := &uninstall{c: c, o: o}
	ns := mesh.IstioNamespace
	crdsBefore, applied, haveRecord := u.record(ctx, ns, "Istio")

	// The applied objects that are not CRDs (EnvoyFilters), while their
	// kinds are still served.
	crds, n, err := u.deleteObjects(ctx, applied)
	if haveRecord {
		u.step("objects meshbench applied", fmt.Sprintf("%d deleted", n), err)
	}

	// istioctl uninstall --purge.
	args := append([]string{o.cli("istioctl"), "uninstall", "--purge", "-y"}, connArgs(o.Kubeconfig, o.Context)...)
	start := time.Now()
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%v: %s", err, oneLine(string(out)))
	}
	u.step("$ "+shellJoin(args), fmt.Sprintf("%.1f s", time.Since(start).Seconds()), err)

	u.deleteNamespace(ctx, ns)
	if haveRecord {
		u.deleteCRDs(ctx, crds, crdsBefore)
	}

	// istiod's ConfigMaps in every namespace.
	nss, err := c.Core.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	n = 0
	if err == nil {
		var cmErrs []error
		for _, nsi := range nss.Items {
			for _, name := range []string{"istio-ca-root-cert", "istio-ca-crl"} {
				err := c.Core.CoreV1().ConfigMaps(nsi.Name).Delete(ctx, name, metav1.DeleteOptions{})
				switch {
				case err == nil:
					n++
				case !apierrors.IsNotFound(err):
					cmErrs = append(cmErrs, fmt.Errorf("%s/%s: %w", nsi.Name, name, err))
				}
			}
		}
		err = errors.Join(cmErrs...)
	}
	u.step("istiod's istio-ca-root-cert/istio-ca-crl ConfigMaps", fmt.Sprintf("%d deleted", n), err)
	return u.done()
}

// UninstallLinkerd removes Linkerd from c as `linkerd uninstall | kubectl
// delete -f -` does, and exactly what meshbench's install applied:
// `linkerd uninstall` lists Linkerd's objects (it refuses while meshed pods
// other than the control plane's run: then nothing is deleted); its
// webhook configurations go first (no pod is injected while the rest goes),
// then every other object but the namespace and the CRDs, then the linkerd
// namespace (waited for until gone), then the CRDs — those it lists and
// those the install record says meshbench applied — but never one the
// cluster had before meshbench's first install (the Gateway API's when
// another installer brought them). Without a record (Linkerd not
// installed by meshbench) no CRD is deleted. It goes on past a failed step
// and returns every step and their errors joined.
func UninstallLinkerd(ctx context.Context, c *client.Client, o UninstallOptions) ([]Step, error) {
	u := &uninstall{c: c, o: o}
	ns := mesh.LinkerdNamespace
	crdsBefore, applied, haveRecord := u.record(ctx, ns, "Linkerd")

	args := append([]string{o.cli("linkerd"), "uninstall"}, connArgs(o.Kubeconfig, o.Context)...)
	start := time.Now()
	var stdout, stderr bytes.Buffer
	x := exec.CommandContext(ctx, args[0], args[1:]...)
	x.Stdout, x.Stderr = &stdout, &stderr
	err := x.Run()
	var lines []string
	if err == nil {
		var objs []runtime.Object
		if objs, err = manifest.Decode(stdout.Bytes()); err == nil {
			lines, err = ObjectLines(objs)
		}
	} else {
		err = fmt.Errorf("%v: %s", err, oneLine(stderr.String()))
	}
	u.step("$ "+shellJoin(args), fmt.Sprintf("%d objects listed in %.1f s", len(lines), time.Since(start).Seconds()), err)
	if err != nil {
		return u.done()
	}
	var hooks []string
	for _, l := range lines {
		if strings.Contains(l, "WebhookConfiguration ") {
			hooks = append(hooks, l)
		}
	}
	_, n, err := u.deleteObjects(ctx, hooks)
	u.step("Linkerd's webhook configurations", fmt.Sprintf("%d deleted", n), err)
	crds, n, err := u.deleteObjects(ctx, lines, "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Namespace")
	u.step("Linkerd's other objects (namespace and CRDs last)", fmt.Sprintf("%d deleted", n), err)
	u.deleteNamespace(ctx, ns)
	// What the record lists and `linkerd uninstall` did not (objects
	// outside the namespace, CRDs of another bundle).
	recCRDs, n, err := u.deleteObjects(ctx, applied, "Namespace")
	if haveRecord {
		u.step("objects meshbench applied", fmt.Sprintf("%d deleted or gone", n), err)
		u.deleteCRDs(ctx, append(crds, recCRDs...), crdsBefore)
	}
	return u.done()
}
