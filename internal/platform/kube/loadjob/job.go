// Package loadjob is the load of one cell on a cluster: the Indexed Job
// of `meshbench load` workers (what each worker runs, and the Job that
// runs them), waiting for it to finish, and reading every worker's JSON
// result back from its pod's log. What the Job's pods are placed on and
// labelled with is platform/kube's (Pod); the cell's orchestration stays
// there too.
package loadjob

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/load/extgen"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// Container names the load workers' container (a mesh adds its own
// beside it); its log is the worker's result.
const Container = "load"

// CompletionIndexEnv is the variable an Indexed Job's pods hold their
// index in (`meshbench load` reads it too).
const CompletionIndexEnv = "JOB_COMPLETION_INDEX"

// Spec is the load of one cell: W workers (the pods of an Indexed Job)
// that each run `meshbench load` with their share of the rate and the
// connections (loadgen.WorkerShare, loadgen.WorkerConnections), so the W
// results merged are the whole load.
type Spec struct {
	// Load is the total load: an open-loop rate, split among the workers,
	// or loadgen.ClosedLoop; required.
	Load loadgen.Load
	// Workers is the number of load pods, 1 or more.
	Workers int
	// Duration is the measured window (required), Warmup the load sent
	// before it (0: none), Timeout the per-request timeout (0: the CLI's
	// default, 30 s).
	Duration, Warmup, Timeout time.Duration
	// Connections is the total number of connections (0: the CLI's
	// default, 16 per worker).
	Connections int
	// Target is the URL to load; Problems accepts "" (the platform fills
	// in its default), CheckGenerator, Args and Job need it.
	Target string
	// Generator is the load generator the workers run (`meshbench load
	// --generator`): "" or extgen.Meshbench for meshbench's engine,
	// extgen.Oha or extgen.Wrk2 (in the image beside meshbench).
	Generator string
	// Interval, when > 0, is the length of the result's per-interval
	// histograms and failed answers (`meshbench load --interval`, its
	// engine only; a cell with a fault: fault.LoadInterval); 0: the CLI's
	// second.
	Interval time.Duration
	// RequestsPerConnection closes each connection after this many
	// requests (`meshbench load --requests-per-connection`; 1: a new
	// connection per request, TCP_CRR-like); 0 keeps them.
	RequestsPerConnection int
	// Arrivals spaces an open loop's requests (`--arrivals`; "" or
	// constant: evenly); with loadgen.ArrivalsPoisson, Seed is the
	// schedule's seed (`--seed`; each worker adds its index, so the W
	// workers draw W schedules, the same ones for every mesh).
	Arrivals loadgen.Arrivals
	Seed     uint64
	// SendTick lets each worker's pacer wake at most once per tick
	// (`--send-tick`, meshbench's engine's open loop only); 0: each
	// request at its own time.
	SendTick time.Duration
}

// Problems lists every problem with the fields of s (the generator's
// checks aside: CheckGenerator), each an error of one line.
func (s Spec) Problems() []error {
	var errs []error
	bad := func(field, value, want string) {
		errs = append(errs, &topology.OptionError{Field: field, Value: value, Want: want})
	}
	if s.Workers < 1 {
		bad("workers", strconv.Itoa(s.Workers), "allowed: 1 or more")
	}
	switch {
	case s.Load.IsZero():
		bad("rate", `""`, "required: a rate per second or the closed loop")
	case !s.Load.Closed() && !s.Load.Bulk():
		if _, err := loadgen.WorkerRate(s.Load.Rate(), s.Workers, s.Workers-1); s.Workers >= 1 && err != nil {
			bad("rate", s.Load.String(), fmt.Sprintf("too low to split over %d workers (each needs at least %g per second)", s.Workers, loadgen.WorkerShareStep))
		}
	}
	if s.Duration <= 0 {
		bad("duration", s.Duration.String(), "allowed: more than 0")
	}
	if s.Warmup < 0 {
		bad("warmup", s.Warmup.String(), "allowed: 0 or more")
	}
	if s.Timeout < 0 {
		bad("timeout", s.Timeout.String(), "allowed: 0 (default) or more")
	}
	if s.Connections < 0 {
		bad("connections", strconv.Itoa(s.Connections), "allowed: 0 (default) or more")
	}
	if s.RequestsPerConnection < 0 {
		bad("requests-per-connection", strconv.Itoa(s.RequestsPerConnection), "allowed: 0 (keep every connection) or more")
	} else if s.RequestsPerConnection > 0 && s.Load.Bulk() {
		bad("requests-per-connection", strconv.Itoa(s.RequestsPerConnection), "with bulk: a bulk connection carries one endless answer")
	}
	if s.Load.Bulk() && s.External() {
		bad("generator", s.Generator, "with bulk: bulk throughput is meshbench's engine's")
	}
	if _, err := loadgen.ParseArrivals(string(s.Arrivals)); err != nil {
		bad("arrivals", string(s.Arrivals), "allowed: constant, poisson")
	} else if s.Arrivals == loadgen.ArrivalsPoisson && (s.Load.Closed() || s.Load.Bulk()) {
		bad("arrivals", string(s.Arrivals), "only an open loop has a schedule to space")
	}
	switch {
	case loadgen.ValidateSendTick(s.SendTick) != nil:
		bad("send-tick", s.SendTick.String(), fmt.Sprintf("allowed: 0 (exact spacing) or %v to %v", loadgen.MinSendTick, loadgen.MaxSendTick))
	case s.SendTick > 0 && (s.Load.Closed() || s.Load.Bulk()):
		bad("send-tick", s.SendTick.String(), "only an open loop has a schedule to tick")
	}
	if s.Target != "" {
		if _, err := loadgen.ParseTarget(s.Target, false); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// External reports whether the workers run an external generator.
func (s Spec) External() bool {
	return s.Generator != "" && s.Generator != extgen.Meshbench
}

// CheckGenerator checks, worker by worker, that the generator can run
// its share (wrk2 takes whole requests per second, HTTP/1.1 only…), so a
// run is refused before any pod starts rather than failing in them.
func (s Spec) CheckGenerator() error {
	if !slices.Contains(extgen.Names, cmp.Or(s.Generator, extgen.Meshbench)) {
		return &topology.OptionError{Field: "generator", Value: s.Generator, Want: "allowed: " + strings.Join(extgen.Names, ", ")}
	}
	if !s.External() {
		return nil
	}
	t, err := loadgen.ParseTarget(s.Target, false)
	if err != nil {
		return err
	}
	conns := cmp.Or(s.Connections, loadgen.DefaultConnections)
	for i := range s.Workers {
		c := extgen.Config{Generator: s.Generator, Load: loadgen.Config{Targets: []loadgen.Target{t}, Load: s.Load,
			Duration: s.Duration, Warmup: s.Warmup, Timeout: cmp.Or(s.Timeout, 30*time.Second),
			Connections:           max(loadgen.WorkerConnections(conns, s.Workers, i), 1),
			RequestsPerConnection: s.RequestsPerConnection, Arrivals: s.Arrivals, Seed: s.Seed, SendTick: s.SendTick}}
		if !s.Load.Closed() {
			r, err := loadgen.WorkerRate(s.Load.Rate(), s.Workers, i)
			if err != nil {
				return err
			}
			c.Load.Load = loadgen.OpenLoop(r)
		}
		if err := c.Validate(); err != nil {
			return fmt.Errorf("worker %d of %d: %w", i, s.Workers, err)
		}
	}
	return nil
}

// Args are the arguments of worker index's `meshbench load` (index
// "$(JOB_COMPLETION_INDEX)" in the Job, which Kubernetes expands from the
// container's environment). Its stdout, the pod's log, is exactly the
// JSON result (--output-format json --quiet); meshbench's engine also
// prints its running figures to stderr every second (--progress-log),
// which the platform follows for the live view (kube's followLoadProgress).
func Args(s Spec, index string) []string {
	args := append([]string{"load"}, s.Load.Flags()...)
	args = append(args, "--workers", strconv.Itoa(s.Workers), "--worker-index", index,
		"--duration", s.Duration.String(), "--warmup", s.Warmup.String())
	if s.Timeout > 0 {
		args = append(args, "--timeout", s.Timeout.String())
	}
	if s.Connections > 0 {
		args = append(args, "--connections", strconv.Itoa(s.Connections))
	}
	if s.RequestsPerConnection > 0 {
		args = append(args, "--requests-per-connection", strconv.Itoa(s.RequestsPerConnection))
	}
	if s.Arrivals == loadgen.ArrivalsPoisson {
		args = append(args, "--arrivals", string(loadgen.ArrivalsPoisson), "--seed", strconv.FormatUint(s.Seed, 10))
	}
	if s.SendTick > 0 {
		args = append(args, "--send-tick", s.SendTick.String())
	}
	if s.External() {
		args = append(args, "--generator", s.Generator)
	} else {
		args = append(args, "--progress-log")
		if s.Interval > 0 {
			args = append(args, "--interval", s.Interval.String())
		}
	}
	return append(args, "--output-format", "json", "--quiet", s.Target)
}

// Pod is where and as what the workers run: the Job's name, namespace and
// labels, the pod template's labels and annotations, the image, service
// account, resources, security context and placement. The platform
// decides them (platform/kube.LoadJob).
type Pod struct {
	Namespace, Name string
	// Labels are the Job's, PodLabels and PodAnnotations its pods'.
	Labels, PodLabels, PodAnnotations map[string]string
	Image, ServiceAccount             string
	Resources                         corev1.ResourceRequirements
	SecurityContext                   *corev1.SecurityContext
	Affinity                          *corev1.Affinity
	NodeSelector                      map[string]string
}

// Job returns the load Job of s as p: an Indexed Job of s.Workers pods
// (parallelism = completions = Workers), no retries (backoffLimit 0,
// restartPolicy Never: a failed worker is a failed run, never a silently
// repeated one), no TTL (the pods' logs are the results; deleting the
// namespace removes it). Worker I runs Args with I from its completion
// index. s must be valid (Problems, CheckGenerator) with its Target set.
func Job(s Spec, p Pod) *batchv1.Job {
	c := corev1.Container{
		Name: Container, Image: p.Image, Args: Args(s, "$("+CompletionIndexEnv+")"),
		// Declared so that $(JOB_COMPLETION_INDEX) expands on every
		// Kubernetes version; the Job controller adds the same otherwise.
		Env: []corev1.EnvVar{{Name: CompletionIndexEnv, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + batchv1.JobCompletionIndexAnnotation + "']"}}}},
		Resources:       p.Resources,
		SecurityContext: p.SecurityContext,
	}
	pod := corev1.PodSpec{
		ServiceAccountName: p.ServiceAccount,
		RestartPolicy:      corev1.RestartPolicyNever,
		Containers:         []corev1.Container{c},
		Affinity:           p.Affinity,
		NodeSelector:       p.NodeSelector,
	}
	if s.External() {
		// The tools' files (oha's per-request database) go to /tmp: the
		// root filesystem is read-only.
		pod.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		pod.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}
	}
	w := int32(s.Workers)
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels},
		Spec: batchv1.JobSpec{
			Parallelism:    new(w),
			Completions:    new(w),
			CompletionMode: new(batchv1.IndexedCompletion),
			BackoffLimit:   new(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: p.PodLabels, Annotations: p.PodAnnotations},
				Spec:       pod,
			},
		},
	}
}
