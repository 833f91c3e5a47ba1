package kube

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/platform/kube/loadjob"
	"github.com/meshbench/meshbench/internal/results"
)

// The attacker: after the measured load of a cell with policies, a meshed
// client whose identity no policy allows (the lab's
// topology.IdentityAttacker, here a service account of the load
// namespace) sends AttackerRequests to the app's service through its own
// proxy, and the run keeps what it got: the mesh must refuse every one
// (403 from a sidecar's or Linkerd's HTTP authorization, a closed
// connection from an L4 proxy such as ztunnel). It runs after the
// resource sampling, so it is in no figure.
const (
	// AttackerServiceAccount is the attacker's identity in the load
	// namespace.
	AttackerServiceAccount = "attacker"
	// AttackerJobName names its one-pod Job.
	AttackerJobName = "attacker"
	// AttackerRequests are sent at 5 per second, one connection.
	AttackerRequests = 10
	// AttackerFile keeps what it got (an AttackerReport) under k8s/.
	AttackerFile = "attacker.json"
)

// AttackerReport is what the attacker got.
type AttackerReport struct {
	// Identity is the attacker's service account, namespace/name.
	Identity string `json:"identity"`
	// Target is the URL it called.
	Target string `json:"target"`
	Sent   int64  `json:"sent"`
	// StatusCodes and Errors are the answers, as a load result has them.
	StatusCodes map[string]int64     `json:"status_codes"`
	Errors      []results.ErrorCount `json:"errors"`
	// Allowed counts 2xx and 3xx answers: requests the policies let
	// through. Refused is true when every request was refused.
	Allowed int64 `json:"allowed"`
	Refused bool  `json:"refused"`
}

// String says it in a line: "10 of 10 refused (403 ×10)", "10 of 10
// refused (reset ×6, closed ×4)".
func (a AttackerReport) String() string {
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(a.StatusCodes)) {
		if c != "0" { // no HTTP answer: the errors say what happened
			parts = append(parts, fmt.Sprintf("%s ×%d", c, a.StatusCodes[c]))
		}
	}
	for _, e := range a.Errors {
		if e.Kind != loadgen.KindStatus { // the status codes' own
			parts = append(parts, fmt.Sprintf("%s ×%d", e.Kind, e.Count))
		}
	}
	return fmt.Sprintf("%d of %d refused (%s)", a.Sent-a.Allowed, a.Sent, strings.Join(parts, ", "))
}

// attackerRuns: the cell has policies on a mesh with proxies.
func attackerRuns(s Spec) bool {
	return s.Mesh.Policies > 0 && mesh.HasProxies(string(s.Mesh.Mode))
}

// probeAttacker runs the attacker of a cell with policies (nothing
// otherwise) and keeps its report (k8s/attacker.json, the manifest's
// "attacker", a log line); an allowed request makes the cell invalid: its
// policies were not enforced.
func (r *run) probeAttacker(ctx context.Context) error {
	o, c := r.o, r.c
	if !attackerRuns(o.Spec) {
		return nil
	}
	end := r.phase("attacker")
	defer end()
	rep, err := runAttacker(ctx, c, o.Spec, func(name string, body []byte) {
		r.kept(name, r.dir.WriteFile(name, body))
	})
	if err != nil {
		r.logf("attacker: %v", err)
		r.invalid("the attacker (a foreign identity, to check the policies) did not run: " + err.Error())
		return nil
	}
	r.keepJSON(filepath.Join("k8s", AttackerFile), rep)
	r.mu.Lock()
	r.manifest.Options["attacker"] = rep.String()
	r.mu.Unlock()
	r.logf("policies: the attacker %s (an identity no policy allows) calling %s: %s", rep.Identity, rep.Target, rep)
	if !rep.Refused {
		r.invalid(fmt.Sprintf("policies not enforced: the attacker %s got %d of %d requests through", rep.Identity, rep.Allowed, rep.Sent))
	}
	return nil
}

// runAttacker runs the attacker's Job in s's load namespace and reads its
// result; keep gets its log (loadjob.Collect).
func runAttacker(ctx context.Context, c *Cluster, s Spec, keep func(name string, log []byte)) (*AttackerReport, error) {
	s = s.WithDefaults()
	spec := loadjob.Spec{Load: loadgen.OpenLoopPerSecond(5), Workers: 1, Duration: AttackerRequests / 5 * time.Second,
		Timeout: 2 * time.Second, Connections: 1, Target: LoadTarget(s)}
	p := loadjob.Pod{
		Namespace: s.LoadNamespace, Name: AttackerJobName, Labels: s.labels(),
		PodLabels: s.podLabels(AttackerJobName, AttackerJobName), PodAnnotations: maps.Clone(s.desc().Cluster.LoadPodAnnotations),
		Image: s.Image, ServiceAccount: AttackerServiceAccount, Resources: requests(), SecurityContext: restricted(),
	}
	job := loadjob.Job(spec, p)
	if err := c.Apply(ctx, []runtime.Object{s.serviceAccount(s.LoadNamespace, AttackerServiceAccount), job}); err != nil {
		return nil, err
	}
	if err := loadjob.Wait(ctx, c.Client, s.LoadNamespace, job.Name, "", 2*time.Minute); err != nil {
		return nil, err
	}
	parts, err := loadjob.Collect(ctx, c.Core, job, 1, keep)
	if err != nil {
		return nil, err
	}
	lr := parts[0]
	rep := &AttackerReport{Identity: s.LoadNamespace + "/" + AttackerServiceAccount, Target: spec.Target,
		Sent: lr.Sent, StatusCodes: lr.StatusCodes, Errors: lr.Errors}
	for code, n := range lr.StatusCodes {
		if strings.HasPrefix(code, "2") || strings.HasPrefix(code, "3") {
			rep.Allowed += n
		}
	}
	rep.Refused = rep.Sent > 0 && rep.Allowed == 0
	return rep, nil
}
