package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/platform/kube/client"
	"github.com/meshbench/meshbench/internal/platform/kube/metricsapi"
)

// A cluster cell's kernel CPU: one node reader per ready node, a pod of
// meshbench's image running the hidden `meshbench nodestat` (pinned to
// its node by nodeName, tolerating every taint), reading each second the
// node's /proc/stat (the host's: it is not namespaced), its boot ID and
// the CPU split of the node's pods' cgroup (the host's cgroup tree
// mounted read-only, the reader's own pod UID picking its node's
// kubepods). The readers start before the idle gate and are read and
// deleted after the drain; they live in a namespace of their own
// (NodeReaderNamespace: no mesh enrols it, and no check of the app's or
// the load's pods meets them), made with the run's labels and so deleted
// with its other namespaces at the cell's end, on failure and on Ctrl-C;
// they carry the meshes' opt-outs all the same (the hog's), are
// classified as overhead by their label
// (metricsapi.LabelNodeReader), and bounded by their own --for and
// activeDeadlineSeconds, so a reader a killed meshbench left stops by
// itself. sample.NodeKernelOver turns their readings into the window's
// figures, per machine.

const (
	nodeReaderContainer = "nodestat"
	// nodeReaderCgroupMount is where the host's /sys/fs/cgroup is
	// mounted, read-only, in a reader.
	nodeReaderCgroupMount = "/host/sys/fs/cgroup"
	// nodeReaderEvery is the readers' period: the window's figures lose
	// at most this much at each edge.
	nodeReaderEvery = time.Second
	// nodeReaderStart bounds the wait for every reader to run.
	nodeReaderStart = time.Minute
	// nodeReaderMemory is a reader's memory request, nodeReaderMemoryLimit
	// its limit (its working set, the binary's pages included, was
	// 33–36Mi on the test nodes); its CPU request is nodeReaderCPU (it
	// reads three small files a second: 1.6m on the test nodes).
	nodeReaderMemory      = "64Mi"
	nodeReaderMemoryLimit = "128Mi"
	nodeReaderCPU         = "10m"
)

// NodeReaderNamespace is the namespace of spec s's node readers: the load
// namespace's name with "-nodes".
func NodeReaderNamespace(s Spec) string { return s.WithDefaults().LoadNamespace + "-nodes" }

// nodeReaderNamespace makes the readers' namespace, with the run's labels
// (Cluster.DeleteRun deletes it) and no mesh's; one that is there already
// must be meshbench's.
func (c *Cluster) nodeReaderNamespace(ctx context.Context, s Spec) (string, error) {
	name := NodeReaderNamespace(s)
	nss := c.Core.CoreV1().Namespaces()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: s.labels()}}
	_, err := nss.Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		got, gerr := nss.Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			return "", gerr
		}
		if got.Labels[LabelManagedBy] != ManagedBy {
			return "", fmt.Errorf("namespace %s is there and is not meshbench's", name)
		}
		return name, nil
	}
	return name, err
}

// nodeReaderPod is the reader's pod on node, bounded to bound.
func (s Spec) nodeReaderPod(node string, bound time.Duration) *corev1.Pod {
	l := s.labels()
	l[metricsapi.LabelNodeReader] = "true"
	maps.Copy(l, hogOptOutLabels)
	deadline := int64(bound/time.Second) + 30
	grace := int64(hogGrace)
	req := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(nodeReaderMemory), corev1.ResourceCPU: resource.MustParse(nodeReaderCPU)}
	res := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(nodeReaderMemoryLimit)}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-reader-", Namespace: NodeReaderNamespace(s), Labels: l,
			Annotations: maps.Clone(hogOptOutAnnotations)},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         &deadline,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  new(false),
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Volumes: []corev1.Volume{{Name: "cgroup", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/sys/fs/cgroup", Type: new(corev1.HostPathDirectory)}}}},
			Containers: []corev1.Container{{
				Name: nodeReaderContainer, Image: s.Image,
				Args: []string{"nodestat", "--pod-uid", "$(POD_UID)", "--cgroup-root", nodeReaderCgroupMount,
					"--every", nodeReaderEvery.String(), "--for", bound.String(), "--report", corev1.TerminationMessagePathDefault},
				Env: []corev1.EnvVar{{Name: "POD_UID", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}}},
				VolumeMounts:    []corev1.VolumeMount{{Name: "cgroup", MountPath: nodeReaderCgroupMount, ReadOnly: true}},
				Resources:       corev1.ResourceRequirements{Requests: req, Limits: res},
				SecurityContext: restricted(),
			}},
		},
	}
}

// nodeReaders are a cell's running readers: pod name by node, and why
// each node that has none has none.
type nodeReaders struct {
	ns      string
	pods    map[string]string
	missing map[string]string
	// notes are what collect saw that does not lose a node (a reader that
	// had ended when read: its readings may still cover the window).
	notes   []string
	deleted bool
}

// startNodeReaders makes a reader on every ready node, bounded to bound,
// and waits until each runs. A node whose reader does not run is
// missing, with why; an error is one about every node (none made).
func (c *Cluster) startNodeReaders(ctx context.Context, s Spec, bound time.Duration) (*nodeReaders, error) {
	s = s.WithDefaults()
	list, err := c.Core.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the nodes: %w", err)
	}
	ns, err := c.nodeReaderNamespace(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("the readers' namespace: %w", err)
	}
	nr := &nodeReaders{ns: ns, pods: map[string]string{}, missing: map[string]string{}}
	pods := c.Core.CoreV1().Pods(ns)
	for _, n := range list.Items {
		if !client.NodeReady(&n) {
			continue
		}
		made, err := pods.Create(ctx, s.nodeReaderPod(n.Name, bound), metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil {
			nr.missing[n.Name] = fmt.Sprintf("its reader pod was not made: %v", err)
			continue
		}
		nr.pods[n.Name] = made.Name
	}
	if len(nr.pods) == 0 && len(nr.missing) == 0 {
		return nil, fmt.Errorf("no ready node to read")
	}
	waiting := maps.Clone(nr.pods)
	err = wait.PollUntilContextTimeout(ctx, faultPollEvery, nodeReaderStart, true, func(ctx context.Context) (bool, error) {
		for node, name := range waiting {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				continue
			}
			switch {
			case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
				nr.missing[node] = fmt.Sprintf("its reader %s ended before the window: %s", name, readerEnd(p))
				delete(nr.pods, node)
				delete(waiting, node)
			case containerStarted(p, nodeReaderContainer):
				delete(waiting, node)
			}
		}
		return len(waiting) == 0, nil
	})
	for node, name := range waiting {
		nr.missing[node] = fmt.Sprintf("its reader %s did not run within %s (%v)", name, nodeReaderStart, err)
		delete(nr.pods, node)
	}
	return nr, ctx.Err()
}

// readerEnd is what a reader's pod says of its end: its phase, reason
// and termination message.
func readerEnd(p *corev1.Pod) string {
	out := strings.TrimSpace(string(p.Status.Phase) + " " + p.Status.Reason + " " + p.Status.Message)
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == nodeReaderContainer && st.State.Terminated != nil {
			out += fmt.Sprintf(", exit %d: %s", st.State.Terminated.ExitCode, strings.TrimSpace(st.State.Terminated.Message))
		}
	}
	return out
}

// collect reads every reader's output (its log) and deletes the readers
// (not waiting: the namespace's deletion does at the cell's end). A
// reader that ended early, or whose log cannot be read, makes its node
// missing; readings are returned by node, raw lines too (kept by the
// cell).
func (nr *nodeReaders) collect(ctx context.Context, c *Cluster) (map[string][]sample.NodeReading, []byte) {
	readings := map[string][]sample.NodeReading{}
	var raw bytes.Buffer
	pods := c.Core.CoreV1().Pods(nr.ns)
	for _, node := range slices.Sorted(maps.Keys(nr.pods)) {
		name := nr.pods[node]
		if p, err := pods.Get(ctx, name, metav1.GetOptions{}); err == nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
			// Its readings may still cover the window: say so, and keep them.
			nr.notes = append(nr.notes, fmt.Sprintf("node %s: its reader %s had ended when read: %s", node, name, readerEnd(p)))
		}
		b, err := pods.GetLogs(name, &corev1.PodLogOptions{Container: nodeReaderContainer}).DoRaw(ctx)
		if err != nil {
			nr.missing[node] = fmt.Sprintf("its reader's log could not be read: %v", err)
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			var x sample.NodeReading
			if err := json.Unmarshal(sc.Bytes(), &x); err != nil {
				nr.missing[node] = fmt.Sprintf("its reader's log has a line that is no reading: %q", sc.Text())
				delete(readings, node)
				break
			}
			readings[node] = append(readings[node], x)
			fmt.Fprintf(&raw, "{\"node\":%q,\"reading\":%s}\n", node, sc.Bytes())
		}
	}
	nr.delete(ctx, c)
	return readings, raw.Bytes()
}

// delete deletes the readers' pods, once.
func (nr *nodeReaders) delete(ctx context.Context, c *Cluster) {
	if nr.deleted {
		return
	}
	nr.deleted = true
	grace := int64(hogGrace)
	for _, name := range nr.pods {
		_ = c.Core.CoreV1().Pods(nr.ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	}
}

// NodeReadingsFile keeps every reading of a cluster cell's node readers,
// one JSON line each ({"node":…,"reading":sample.NodeReading}).
const NodeReadingsFile = "node-readings.jsonl"

// startNodeReaders starts the kernel CPU readers (Cluster.startNodeReaders),
// bounded to the cell's longest possible life. A failure loses the kernel
// figures only, never the cell: it is said, and the cell goes on.
func (r *run) startNodeReaders(ctx context.Context) error {
	o := r.o
	bound := o.IdleTimeout + o.Warmup + o.Duration + o.Timeout + o.ReadyTimeout + max(o.Drain, 0) + time.Minute
	start := time.Now()
	nr, err := r.c.startNodeReaders(ctx, o.Spec, bound)
	r.readers = nr // deleted by the run's end whatever happens
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.readersNote = "no node reader ran: " + err.Error()
		r.logf("kernel CPU not measured: %s", r.readersNote)
		return nil
	}
	for _, node := range slices.Sorted(maps.Keys(nr.missing)) {
		r.logf("kernel CPU: node %s not measured: %s", node, nr.missing[node])
	}
	r.logf("kernel CPU: a node reader runs on %d node(s), %.1fs after their create", len(nr.pods), time.Since(start).Seconds())
	return nil
}

// readNodeReaders reads the readers' output after the drain and deletes
// them, keeping every reading (NodeReadingsFile).
func (r *run) readNodeReaders(ctx context.Context) error {
	if r.readers == nil {
		return nil
	}
	start := time.Now()
	readings, raw := r.readers.collect(context.WithoutCancel(ctx), r.c)
	r.readings = readings
	r.logf("kernel CPU: %d reader(s) read and deleted in %.1fs", len(r.readers.pods), time.Since(start).Seconds())
	r.kept(NodeReadingsFile, r.dir.WriteFile(NodeReadingsFile, raw))
	for _, n := range r.readers.notes {
		r.logf("kernel CPU: %s", n)
	}
	return nil
}

// deleteNodeReaders deletes the readers if a step failed before they
// were read (the load namespace's deletion would too, but --keep keeps
// it).
func (r *run) deleteNodeReaders() {
	if r.readers == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.readers.delete(ctx, r.c)
}

// nodeKernel is the readers' kernel CPU over the measured window
// (sample.NodeKernelOver): resources.json's node_kernel, the Result's
// rows, and the manifest's derived figures when every node has one. A
// node without one is said (the manifest's node_kernel_note), never
// counted as zero.
func (r *run) nodeKernel(context.Context) error {
	if r.loadRes == nil {
		return nil
	}
	var notes []string
	if r.readersNote != "" {
		notes = append(notes, r.readersNote)
	}
	if r.readers != nil {
		rep := sample.NodeKernelOver(r.readings, r.from, r.to)
		for _, node := range slices.Sorted(maps.Keys(r.readers.missing)) {
			rep.Missing = append(rep.Missing, sample.NodeKernelMissing{Node: node, Why: r.readers.missing[node]})
		}
		slices.SortFunc(rep.Missing, func(a, b sample.NodeKernelMissing) int { return strings.Compare(a.Node, b.Node) })
		for _, m := range rep.Missing {
			notes = append(notes, fmt.Sprintf("node %s: %s", m.Node, m.Why))
		}
		r.resources.NodeKernel, r.measured.NodeKernel = &rep, &rep
		r.mu.Lock()
		if d := rep.Derived(); d != nil {
			if r.manifest.Derived == nil {
				r.manifest.Derived = map[string]float64{}
			}
			maps.Copy(r.manifest.Derived, d)
		}
		r.mu.Unlock()
		for _, mk := range rep.Machines {
			r.logf("kernel CPU, %s: node kernel %.0fm (softirq %.0fm), pods' system %.0fm, kernel outside the pods %.0fm (the kubelet's, the runtime's, kube-proxy's and the host's own kernel time included), over %.1fs",
				mk.Name(), mk.NodeKernelCPUm, mk.SoftIRQCPUm, mk.PodsSystemCPUm, mk.OutsidePodsCPUm, mk.Seconds)
		}
	}
	if len(notes) > 0 {
		note := "kernel CPU not measured on every node, so no cell figure: " + strings.Join(notes, "; ")
		r.measured.NodeKernelNote = note
		r.logf("%s", note)
		r.mu.Lock()
		r.manifest.Options["node_kernel_note"] = note
		r.mu.Unlock()
	}
	return nil
}
