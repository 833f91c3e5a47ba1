package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/internal/platform/kube/metricsapi"
)

// FacesGUISelector selects the Faces chart's GUI workload by its component
// label (metricsapi.LabelFacesComponent=metricsapi.FacesGUIComponent). The
// chart's replica default (defaultReplicas) scales the GUI too, and the
// value that would hold it alone is not known here (the chart is fetched
// at run time), so meshbench scales it back through the API instead.
var FacesGUISelector = metricsapi.LabelFacesComponent + "=" + metricsapi.FacesGUIComponent

// FacesGUIWait is how long ScaleFacesGUI waits for the GUI to be at one
// replica: a pod to stop and the rest to stay ready, well within what
// helm's --wait allowed the install (10 min).
const FacesGUIWait = 3 * time.Minute

// ScaleFacesGUI scales every Deployment in ns that carries the Faces GUI's
// component label (on itself or on its pod template) to one replica through the scale subresource, then
// waits until each has rolled to exactly one pod, ready (its status
// observed at its generation, one replica, one ready). It returns the
// Deployments' names, sorted; none found is not an error (the caller says
// so: the GUI's pods, if any, would then count as the app). The GUI's pods
// are classified out of the app's figures either way (metricsapi's
// "faces-gui (not measured)").
func ScaleFacesGUI(ctx context.Context, cs kubernetes.Interface, ns string, timeout time.Duration) ([]string, error) {
	deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the Deployments of %s for the Faces GUI (%s): %w", ns, FacesGUISelector, err)
	}
	var names []string
	for _, d := range deps.Items {
		// The label on the Deployment or on its pods (what the classifier
		// reads): either way its pods are the GUI's.
		if d.Labels[metricsapi.LabelFacesComponent] != metricsapi.FacesGUIComponent &&
			d.Spec.Template.Labels[metricsapi.LabelFacesComponent] != metricsapi.FacesGUIComponent {
			continue
		}
		names = append(names, d.Name)
		sc, err := cs.AppsV1().Deployments(ns).GetScale(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return names, fmt.Errorf("reading the scale of Deployment %s/%s (Faces GUI): %w", ns, d.Name, err)
		}
		if sc.Spec.Replicas == 1 {
			continue
		}
		want := &autoscalingv1.Scale{ObjectMeta: sc.ObjectMeta, Spec: autoscalingv1.ScaleSpec{Replicas: 1}}
		if _, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, d.Name, want, metav1.UpdateOptions{}); err != nil {
			return names, fmt.Errorf("scaling Deployment %s/%s (Faces GUI) to 1 replica: %w", ns, d.Name, err)
		}
	}
	sort.Strings(names)
	var last string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var waiting []string
		for _, name := range names {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := d.Status
			if st.ObservedGeneration < d.Generation || st.Replicas != 1 || st.ReadyReplicas != 1 || st.UpdatedReplicas != 1 {
				waiting = append(waiting, fmt.Sprintf("%s (%d replicas, %d ready)", name, st.Replicas, st.ReadyReplicas))
			}
		}
		last = strings.Join(waiting, ", ")
		return len(waiting) == 0, nil
	})
	if err != nil {
		return names, fmt.Errorf("waiting for the Faces GUI at one replica in %s: %s: %w", ns, last, err)
	}
	return names, nil
}
