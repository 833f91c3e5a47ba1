package proxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestParseStats reads the metrics of two real proxies, kept from a run
// of internal/mesh/linkerd's end-to-end test (MESHBENCH_LINKERD_FIXTURES): the
// client made 20 requests to the server service's VIP, 1 to server-0's
// pod IP and 1 gRPC call to the grpc service; server-0 took 20 of them,
// and refused one from the attacker and one from an unmeshed pod.
func TestParseStats(t *testing.T) {
	const (
		clientID = "client.default.serviceaccount.identity.linkerd.cluster.local"
		serverID = "server.default.serviceaccount.identity.linkerd.cluster.local"
		grpcID   = "grpc.default.serviceaccount.identity.linkerd.cluster.local"
		attacker = "attacker.default.serviceaccount.identity.linkerd.cluster.local"
	)
	tests := []struct {
		file  string
		check func(s Stats) bool
	}{
		// the client: everything outbound over mTLS, to two identities,
		// two balancers (server with 2 endpoints, grpc with 1)
		{"metrics-client.txt", func(s Stats) bool {
			return s.OutboundTLS == 22 && s.OutboundPlain == 0 && s.InboundTLS == 0 && s.InboundPlain == 0 &&
				s.ServerIDs[serverID] == 21 && s.ServerIDs[grpcID] == 1 && len(s.Denied) == 0 &&
				s.Endpoints["default/server"] == 2 && s.Endpoints["default/grpc"] == 1
		}},
		// an app pod of a cluster run (run --platform kube --mesh linkerd
		// --policies 4, Linkerd edge-26.8.3's control plane): the load's
		// requests over mTLS, the kubelet's plaintext probes of the app
		// port apart, the attacker's requests refused; the API server's
		// reads of the admin port left out
		{"metrics-cluster-static.txt", func(s Stats) bool {
			return s.InboundTLS == 243 && s.InboundPlain == 0 && s.Probes == 23 &&
				s.ClientIDs["client.meshbench-load.serviceaccount.identity.linkerd.cluster.local"] == 243 && len(s.ClientIDs) == 1 &&
				s.Denied["attacker.meshbench-load.serviceaccount.identity.linkerd.cluster.local"] == 7 && len(s.Denied) == 1 &&
				// its control plane over TLS, each controller's identity
				// verified: destination 1 + policy 2, identity 1
				s.ControlServerIDs["linkerd-destination.linkerd.serviceaccount.identity.linkerd.cluster.local"] == 3 &&
				s.ControlServerIDs["linkerd-identity.linkerd.serviceaccount.identity.linkerd.cluster.local"] == 1 && len(s.ControlServerIDs) == 2
		}},
		// server-0: inbound over mTLS from the client only (its own admin
		// port's plaintext /ready checks left out), two refusals
		{"metrics-server-0.txt", func(s Stats) bool {
			return s.InboundTLS == 20 && s.InboundPlain == 0 && s.OutboundTLS == 0 &&
				s.ClientIDs[clientID] == 20 && len(s.ClientIDs) == 1 &&
				s.Denied[attacker] == 1 && s.Denied[""] == 1 && len(s.Denied) == 2 &&
				// its certificate, issued once for 24 h, and its control
				// plane on the pod's loopback
				s.CertExpiry == 1795603126 && s.CertExpiry-s.CertRefreshed > 86399 && s.CertRefreshes == 1 &&
				s.Control["127.0.0.1:8090"] == 3 && len(s.Control) == 1 && len(s.ControlServerIDs) == 0
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			s, err := ParseStats(f)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(s) {
				t.Errorf("unexpected stats: %+v", s)
			}
		})
	}
	if _, err := ParseStats(strings.NewReader("request_total{direction=\"inbound\" 1\n")); err == nil {
		t.Error("a broken exposition parsed")
	}
}

// FuzzParseStats: any input parses or fails, never panics.
func FuzzParseStats(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "metrics-server-0.txt"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b[:4096]))
	f.Add(`request_total{direction="outbound",tls="true",server_id="a"} 3` + "\n")
	f.Add(`outbound_http_balancer_endpoints{endpoint_state="ready",backend_namespace="x",backend_name="y"} 2` + "\n")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseStats(strings.NewReader(s))
	})
}

// TestParseVersion reads the release line of the proxy's log.
func TestParseVersion(t *testing.T) {
	tests := []struct {
		name, log string
		want      Version
		ok        bool
	}{
		// the build from source: no git sha, no vendor
		{"source build", "[     0.000127s]  INFO ThreadId(01) linkerd2_proxy: release 0.0.0-dev () by  on 2026-11-24T05:53:06Z\n",
			Version{Release: "0.0.0-dev", Date: "2026-11-24T05:53:06Z"}, true},
		// an official build
		{"official", "INFO ThreadId(01) linkerd2_proxy: release v2.366.0 (29637b6) by linkerd on 2026-08-21T10:00:00Z",
			Version{Release: "v2.366.0", GitSHA: "29637b6", Vendor: "linkerd", Date: "2026-08-21T10:00:00Z"}, true},
		// something else
		{"no line", "Invalid configuration: no destination service configured\n", Version{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := ParseVersion(tc.log)
			if (err == nil) != tc.ok || v != tc.want {
				t.Errorf("ParseVersion = %+v, %v; want %+v, ok %v", v, err, tc.want, tc.ok)
			}
		})
	}
}

// FuzzParseVersion: never panics.
func FuzzParseVersion(f *testing.F) {
	f.Add("linkerd2_proxy: release 0.0.0-dev () by  on 2026-11-24T05:53:06Z")
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseVersion(s) })
}

// realBinary returns the proxy binary, or skips.
func realBinary(t *testing.T) string {
	t.Helper()
	bin, err := Find("", ".")
	if err != nil {
		testutil.SkipOrFail(t, "linkerd proxy: "+err.Error())
	}
	return bin
}

// TestGetVersion runs the real binary.
func TestGetVersion(t *testing.T) {
	bin := realBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := GetVersion(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := FileSHA256(bin)
	if v.Release == "" || v.Date == "" || v.SHA256 != sum {
		t.Errorf("version %+v (binary sha256 %s)", v, sum)
	}
	if !strings.HasPrefix(v.String(), "linkerd2-proxy "+v.Release) {
		t.Errorf("String() = %q", v.String())
	}
}

// TestFind: an explicit path or $MESHBENCH_LINKERD_PROXY wins; the shared
// build is taken only when its sha256 matches.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "linkerd2-proxy")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvBinary, "")
	if got, err := Find(fake, "/"); err != nil || got != fake {
		t.Errorf("explicit: %q %v", got, err)
	}
	if _, err := Find(filepath.Join(dir, "missing"), "/"); err == nil || !strings.Contains(err.Error(), "not a file") {
		t.Errorf("missing explicit: %v", err)
	}
	t.Setenv(EnvBinary, fake)
	if got, err := Find("", "/"); err != nil || got != fake {
		t.Errorf("env: %q %v", got, err)
	}
	t.Setenv(EnvBinary, "")
	// A shared/bin copy with the wrong sha256 is refused.
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(filepath.Join(dir, "shared", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shared", "bin", "linkerd2-proxy"), []byte("not the build"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Find("", work); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("wrong sha256: %v", err)
	}
	// A .tools install wins over the shared copy.
	tools := filepath.Join(work, ".tools", "linkerd2-proxy", "linkerd2-proxy")
	if err := os.MkdirAll(filepath.Dir(tools), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tools, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Find("", work); err != nil || got != tools {
		t.Errorf(".tools: %q %v", got, err)
	}
}

// TestWriteIdentity writes a key and a CSR that match, owned by the
// proxy's user, the key private.
func TestWriteIdentity(t *testing.T) {
	testutil.RequireRoot(t, "linkerd proxy: chown needs root")
	const name = "client.default.serviceaccount.identity.linkerd.cluster.local"
	dir := filepath.Join(t.TempDir(), "id")
	f, err := WriteIdentity(dir, name, "tok", UID)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := os.ReadFile(filepath.Join(f.Dir, "key.p8"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := x509.ParsePKCS8PrivateKey(keyDER)
	if err != nil {
		t.Fatal(err)
	}
	csrDER, err := os.ReadFile(filepath.Join(f.Dir, "csr.der"))
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.ParseCertificateRequest(csrDER)
	if err != nil {
		t.Fatal(err)
	}
	if err := csr.CheckSignature(); err != nil {
		t.Error(err)
	}
	if !key.(*ecdsa.PrivateKey).PublicKey.Equal(csr.PublicKey) {
		t.Error("the CSR is not for the key")
	}
	if len(csr.DNSNames) != 1 || csr.DNSNames[0] != name || csr.Subject.CommonName != name {
		t.Errorf("CSR names %v / %q, want %s", csr.DNSNames, csr.Subject.CommonName, name)
	}
	if tok, _ := os.ReadFile(f.TokenFile); string(tok) != "tok" {
		t.Errorf("token %q", tok)
	}
	for file, mode := range map[string]os.FileMode{"key.p8": 0o600, "token": 0o600, "csr.der": 0o644} {
		st, err := os.Stat(filepath.Join(f.Dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != mode || st.Sys().(*syscall.Stat_t).Uid != UID {
			t.Errorf("%s: mode %v uid %d, want %v and %d", file, st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Uid, mode, UID)
		}
	}
}

// TestEnv: the variables the proxy requires, and the optional ones only
// when set.
func TestEnv(t *testing.T) {
	s := Spec{Name: "a.default.serviceaccount.identity.linkerd.cluster.local", Workload: "default:a",
		ControlAddr: netip.MustParseAddrPort("127.0.0.1:8090"), TrustAnchorsPEM: "PEM",
		Identity: IdentityFiles{Dir: "/id", TokenFile: "/id/token"}}
	env := strings.Join(s.Env(), "\n")
	for _, want := range []string{
		"LINKERD2_PROXY_IDENTITY_SVC_ADDR=127.0.0.1:8090",
		"LINKERD2_PROXY_DESTINATION_SVC_ADDR=127.0.0.1:8090",
		"LINKERD2_PROXY_POLICY_SVC_ADDR=127.0.0.1:8090",
		"LINKERD2_PROXY_POLICY_WORKLOAD=default:a",
		"LINKERD2_PROXY_IDENTITY_LOCAL_NAME=a.default.serviceaccount.identity.linkerd.cluster.local",
		"LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS=PEM",
		"LINKERD2_PROXY_IDENTITY_DIR=/id",
		"LINKERD2_PROXY_IDENTITY_TOKEN_FILE=/id/token",
		"LINKERD2_PROXY_OUTBOUND_LISTEN_ADDR=127.0.0.1:4140",
		"LINKERD2_PROXY_INBOUND_LISTEN_ADDR=0.0.0.0:4143",
		"LINKERD2_PROXY_ADMIN_LISTEN_ADDR=0.0.0.0:4191",
		"LINKERD2_PROXY_INBOUND_DEFAULT_POLICY=all-authenticated",
	} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s", want)
		}
	}
	for _, absent := range []string{"LINKERD2_PROXY_CORES", "LINKERD2_PROXY_INBOUND_PORTS", "LINKERD2_PROXY_DESTINATION_PROFILE_NETWORKS",
		"_SVC_NAME=", "_REQUIRE_TLS"} {
		if strings.Contains(env, absent) {
			t.Errorf("env has %s unasked", absent)
		}
	}
	s.Cores, s.InboundPorts, s.ProfileNetworks = 2, []int{8080, 9090}, []netip.Prefix{netip.MustParsePrefix("10.97.0.0/16")}
	env = strings.Join(s.Env(), "\n")
	for _, want := range []string{"LINKERD2_PROXY_CORES=2", "LINKERD2_PROXY_INBOUND_PORTS=8080,9090", "LINKERD2_PROXY_DESTINATION_PROFILE_NETWORKS=10.97.0.0/16"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s", want)
		}
	}
	// Linkerd's own controllers: one address per API; a controller
	// pod's proxy as the chart has it (all-unauthenticated, identity's
	// port TLS only).
	s.IdentityAddr, s.DestinationAddr, s.PolicyAddr = netip.MustParseAddrPort("127.0.0.1:8080"),
		netip.MustParseAddrPort("10.98.0.5:8086"), netip.MustParseAddrPort("10.98.0.5:8090")
	s.DefaultInboundPolicy, s.RequireTLSPorts = "all-unauthenticated", []int{8080}
	env = strings.Join(s.Env(), "\n")
	for _, want := range []string{"LINKERD2_PROXY_IDENTITY_SVC_ADDR=127.0.0.1:8080", "LINKERD2_PROXY_DESTINATION_SVC_ADDR=10.98.0.5:8086",
		"LINKERD2_PROXY_POLICY_SVC_ADDR=10.98.0.5:8090", "LINKERD2_PROXY_INBOUND_DEFAULT_POLICY=all-unauthenticated",
		"LINKERD2_PROXY_INBOUND_PORTS_REQUIRE_TLS=8080"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s", want)
		}
	}
	// Each API's server identity, as Linkerd's injector names them
	// (charts/partials/templates/_proxy.tpl): each only when set.
	const dst = "linkerd-destination.linkerd.serviceaccount.identity.linkerd.cluster.local"
	s.DestinationSvcName, s.PolicySvcName = dst, dst
	env = strings.Join(s.Env(), "\n")
	for _, want := range []string{"LINKERD2_PROXY_DESTINATION_SVC_NAME=" + dst, "LINKERD2_PROXY_POLICY_SVC_NAME=" + dst} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s", want)
		}
	}
	if strings.Contains(env, "LINKERD2_PROXY_IDENTITY_SVC_NAME") {
		t.Error("env has LINKERD2_PROXY_IDENTITY_SVC_NAME unasked")
	}
	s.IdentitySvcName = "linkerd-identity.linkerd.serviceaccount.identity.linkerd.cluster.local"
	if env = strings.Join(s.Env(), "\n"); !strings.Contains(env, "LINKERD2_PROXY_IDENTITY_SVC_NAME="+s.IdentitySvcName) {
		t.Errorf("env lacks LINKERD2_PROXY_IDENTITY_SVC_NAME=%s", s.IdentitySvcName)
	}
}

// TestStatsSub: a cell's requests are the end scrape minus the start's,
// per direction, TLS and peer; peers without new requests drop out and
// the balancers' gauges are the end's own.
func TestStatsSub(t *testing.T) {
	base := Stats{InboundTLS: 10, OutboundTLS: 5, OutboundPlain: 1, ClientIDs: map[string]float64{"a": 10},
		ServerIDs: map[string]float64{"s": 5}, Denied: map[string]float64{"x": 2}, Endpoints: map[string]float64{"default/server": 2}}
	end := Stats{InboundTLS: 25, InboundPlain: 3, OutboundTLS: 5, OutboundPlain: 1, ClientIDs: map[string]float64{"a": 20, "b": 5},
		ServerIDs: map[string]float64{"s": 5}, Denied: map[string]float64{"x": 2}, Endpoints: map[string]float64{"default/server": 3}}
	d := end.Sub(base)
	if d.InboundTLS != 15 || d.InboundPlain != 3 || d.OutboundTLS != 0 || d.OutboundPlain != 0 {
		t.Errorf("counts %+v", d)
	}
	if len(d.ClientIDs) != 2 || d.ClientIDs["a"] != 10 || d.ClientIDs["b"] != 5 || len(d.ServerIDs) != 0 || len(d.Denied) != 0 {
		t.Errorf("peers %v %v denied %v", d.ClientIDs, d.ServerIDs, d.Denied)
	}
	if d.Endpoints["default/server"] != 3 {
		t.Errorf("endpoints %v, want the end's", d.Endpoints)
	}
	// A proxy killed and started again in between (a fault): its
	// counters went down and count from 0.
	restarted := Stats{InboundTLS: 4, ClientIDs: map[string]float64{"a": 4}}
	if d := restarted.Sub(base); d.InboundTLS != 4 || d.ClientIDs["a"] != 4 || d.OutboundTLS != 0 {
		t.Errorf("after a restart: %+v, want the new process's own counts", d)
	}
}
