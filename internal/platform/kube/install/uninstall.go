package install

import (
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

// WriteRecord records in ns/RecordName that meshbench installed Istio
// there, with crdsBefore (the CRDs before this install; an existing
// record's list is kept) and the objects it applied (added to the
// record's).
func WriteRecord(ctx context.Context, c *client.Client, ns string, crdsBefore []string, applied []runtime.Object) error {
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
	for _, o := range applied {
		if l, err := objectLine(o); err == nil && !slices.Contains(lines, l) {
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

// objectLine is "group/version/Kind namespace/name" ("namespace" empty
// for cluster-scoped objects).
func objectLine(o runtime.Object) (string, error) {
	u, gvk, err := client.ToUnstructured(o)
	if err != nil {
		return "", err
	}
	return gvk.Group + "/" + gvk.Version + "/" + gvk.Kind + " " + u.GetNamespace() + "/" + u.GetName(), nil
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

// UninstallOptions say how to remove Istio.
type UninstallOptions struct {
	// Istioctl runs `uninstall --purge` ("": istioctl on PATH).
	Istioctl string
	// Kubeconfig and Context are passed to istioctl as given.
	Kubeconfig, Context string
	// Timeout bounds the wait for istio-system to be gone (istio-cni's
	// pods take their plugin out of the nodes' CNI chains as they stop).
	Timeout time.Duration
	// Log gets one line per step (nil: none).
	Log io.Writer
}

// Step is one thing Uninstall did, with what it found.
type Step struct {
	What   string `json:"what"`
	Detail string `json:"detail"`
	Err    string `json:"error,omitempty"`
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
	ns := mesh.IstioNamespace
	var steps []Step
	var errs []error
	step := func(what, detail string, err error) {
		s := Step{What: what, Detail: detail}
		if err != nil {
			s.Err = err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
		steps = append(steps, s)
		if o.Log != nil {
			st := "ok"
			if err != nil {
				st = "FAIL: " + err.Error()
			}
			fmt.Fprintf(o.Log, "%s: %s (%s)\n", what, detail, st)
		}
	}

	// The record, read before anything goes.
	var crdsBefore, applied []string
	haveRecord := false
	cm, err := c.Core.CoreV1().ConfigMaps(ns).Get(ctx, RecordName, metav1.GetOptions{})
	switch {
	case err == nil:
		haveRecord = true
		crdsBefore, applied = splitLines(cm.Data[RecordCRDsBefore]), splitLines(cm.Data[RecordApplied])
		step("meshbench's install record", fmt.Sprintf("%s/%s: %d objects applied, %d CRDs before", ns, RecordName, len(applied), len(crdsBefore)), nil)
	case apierrors.IsNotFound(err):
		step("meshbench's install record", "none in "+ns+": Istio was not installed by meshbench (or is gone); no CRD will be deleted", nil)
	default:
		step("meshbench's install record", ns+"/"+RecordName, err)
	}

	// The applied objects that are not CRDs (EnvoyFilters), while their
	// kinds are still served.
	var crds []string
	var n int
	var objErrs []error
	for _, l := range applied {
		gvk, ons, name, err := parseObjectLine(l)
		if err != nil {
			objErrs = append(objErrs, err)
			continue
		}
		if gvk.Group == crdGVR.Group && gvk.Kind == "CustomResourceDefinition" {
			crds = append(crds, name)
			continue
		}
		ri, err := c.Resource(gvk, ons)
		if err == nil {
			err = ri.Delete(ctx, name, metav1.DeleteOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) && !strings.Contains(err.Error(), "not serve") {
			objErrs = append(objErrs, fmt.Errorf("%s: %w", l, err))
			continue
		}
		n++
	}
	if haveRecord {
		step("objects meshbench applied", fmt.Sprintf("%d deleted", n), errors.Join(objErrs...))
	}

	// istioctl uninstall --purge.
	bin := o.Istioctl
	if bin == "" {
		bin = "istioctl"
	}
	args := append([]string{bin, "uninstall", "--purge", "-y"}, connArgs(o.Kubeconfig, o.Context)...)
	start := time.Now()
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%v: %s", err, oneLine(string(out)))
	}
	step("$ "+shellJoin(args), fmt.Sprintf("%.1f s", time.Since(start).Seconds()), err)

	// istio-system, until it is gone.
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Minute
	}
	start = time.Now()
	err = c.Core.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	if err == nil {
		err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
			_, err := c.Core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, nil
		})
		if err != nil {
			err = fmt.Errorf("still there after %s: %w", timeout, err)
		}
	}
	step("namespace "+ns+" deleted", fmt.Sprintf("gone after %.1f s", time.Since(start).Seconds()), err)

	// The CRDs meshbench applied and the cluster did not have before.
	var gone []string
	var crdErrs []error
	kept := 0
	for _, name := range crds {
		if slices.Contains(crdsBefore, name) {
			kept++
			continue
		}
		err := c.Dynamic.Resource(crdGVR).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			crdErrs = append(crdErrs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		gone = append(gone, name)
	}
	// A CRD goes once the API server removed its objects (its
	// finalizer): wait, so that the cluster is as it was when this returns.
	if len(gone) > 0 {
		var left []string
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			left = left[:0]
			for _, name := range gone {
				if _, err := c.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					left = append(left, name)
				}
			}
			return len(left) == 0, nil
		})
		if err != nil {
			crdErrs = append(crdErrs, fmt.Errorf("still there after %s: %s", timeout, strings.Join(left, ", ")))
		}
	}
	if haveRecord {
		step("CRDs meshbench applied", fmt.Sprintf("%d deleted (%d it applied existed before and stay)", len(gone), kept), errors.Join(crdErrs...))
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
	step("istiod's istio-ca-root-cert/istio-ca-crl ConfigMaps", fmt.Sprintf("%d deleted", n), err)
	return steps, errors.Join(errs...)
}
