package kubelet

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseRecorded(t *testing.T) {
	ms := func(v int64) time.Time { return time.UnixMilli(v).UTC() }
	for _, tc := range []struct {
		file string
		// want: every container as "key cpu mem" plus the checks below.
		containers int
		key        string
		cpu, mem   float64
		cpuTS      time.Time // zero: the exposition has no timestamps
		start      float64
		pods       int
		nodeCPU    float64
	}{
		// Recorded from kubetest's kwok node through the API server's
		// node proxy (kwok emulates the kubelet's endpoint; no
		// timestamps, and its start time is seconds since the start).
		{file: "kwok-metrics-resource.txt", containers: 2, key: "rec/app-0/app", cpu: 0.61068189225, mem: 67108864,
			start: 4.573329325, pods: 1, nodeCPU: 6.22079518662},
		// Recorded from a real kubelet: timestamps on every sample (the
		// start times excepted), the swap series beside them.
		{file: "kubelet-metrics-resource.txt", containers: 2, key: "kubemetrics-real/app/app", cpu: 1.267833321,
			mem: 12374016, cpuTS: ms(1795505078662), start: 1.7955050397061112e9, pods: 1, nodeCPU: 4835.851945728},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open("testdata/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc, err := Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(sc.Containers) != tc.containers || len(sc.Pods) != tc.pods {
				t.Fatalf("%d containers, %d pods; want %d, %d", len(sc.Containers), len(sc.Pods), tc.containers, tc.pods)
			}
			var c *Container
			for i := range sc.Containers {
				if sc.Containers[i].Key() == tc.key {
					c = &sc.Containers[i]
				}
			}
			if c == nil {
				t.Fatalf("no container %s in %+v", tc.key, sc.Containers)
			}
			if c.CPUSeconds == nil || c.CPUSeconds.Value != tc.cpu || !c.CPUSeconds.Timestamp.Equal(tc.cpuTS) {
				t.Errorf("cpu %+v, want %v at %v", c.CPUSeconds, tc.cpu, tc.cpuTS)
			}
			if c.MemoryBytes == nil || c.MemoryBytes.Value != tc.mem {
				t.Errorf("memory %+v, want %v", c.MemoryBytes, tc.mem)
			}
			if c.StartTime == nil || c.StartTime.Value != tc.start {
				t.Errorf("start %+v, want %v", c.StartTime, tc.start)
			}
			if sc.NodeCPU == nil || sc.NodeCPU.Value != tc.nodeCPU || sc.NodeMemory == nil {
				t.Errorf("node %+v %+v, want cpu %v", sc.NodeCPU, sc.NodeMemory, tc.nodeCPU)
			}
		})
	}
}

func TestParseProblems(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// A container series must say whose it is.
		{"container_cpu_usage_seconds_total{namespace=\"a\",pod=\"b\"} 1\n", `without a "container" label`},
		// A counter never goes below zero.
		{"container_cpu_usage_seconds_total{namespace=\"a\",pod=\"b\",container=\"c\"} -1\n", "want a finite value >= 0"},
		// NaN is not a CPU time.
		{"node_cpu_usage_seconds_total NaN\n", "want a finite value >= 0"},
		// The same series twice would make one of them disappear.
		{"node_cpu_usage_seconds_total 1\nnode_cpu_usage_seconds_total 2\n", "same series twice"},
		// A histogram where the kubelet serves a counter.
		{"# TYPE node_cpu_usage_seconds_total histogram\nnode_cpu_usage_seconds_total_count 1\n", "want a counter or gauge"},
		// Not the text format at all.
		{"<html>forbidden</html>\n", "parsing /metrics/resource"},
	} {
		_, err := Parse(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
	// Other metrics are ignored; an empty answer is an empty scrape.
	sc, err := Parse(strings.NewReader("scrape_error 0\n"))
	if err != nil || len(sc.Containers) != 0 || sc.NodeCPU != nil {
		t.Errorf("Parse(other metrics) = %+v, %v; want an empty scrape", sc, err)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"kwok-metrics-resource.txt", "kubelet-metrics-resource.txt"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("container_cpu_usage_seconds_total{container=\"a\",namespace=\"b\",pod=\"c\"} 1e3 -5\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, err := Parse(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		for _, c := range sc.Containers {
			if c.Namespace == "" || c.Pod == "" || c.Container == "" {
				t.Fatalf("container without a name: %+v", c)
			}
			for _, v := range []*Value{c.CPUSeconds, c.MemoryBytes, c.StartTime} {
				if v != nil && !(v.Value >= 0) {
					t.Fatalf("value %v accepted", v.Value)
				}
			}
		}
	})
}
