package kube

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

// TestDoctorRBACForFaults: a user granted what a run needs (rbacVerbs)
// but nothing of faultVerbs passes the RBAC row and gets a warning for
// faults naming each denied permission; granted both, both rows pass.
// The user is the test cluster's admin impersonating another (the
// kubeconfig's `as`), which SelfSubjectAccessReviews evaluate.
func TestDoctorRBACForFaults(t *testing.T) {
	kc := kubetest.Require(t)
	ctx := context.Background()
	cs, _ := clusterClients(t, kc)
	const user = "meshbench-doctor-nofaults"
	rules := func(verbs []authv1.ResourceAttributes) []rbacv1.PolicyRule {
		var out []rbacv1.PolicyRule
		for _, ra := range verbs {
			r := ra.Resource
			if ra.Subresource != "" {
				r += "/" + ra.Subresource
			}
			out = append(out, rbacv1.PolicyRule{Verbs: []string{ra.Verb}, APIGroups: []string{ra.Group}, Resources: []string{r}})
		}
		return out
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules(rbacVerbs)}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{}) })
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
	})

	cfg, err := clientcmd.LoadFromFile(kc.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	c, err := Connect(ctx, ConnectOptions{Kubeconfig: path})
	if err != nil {
		t.Fatal(err)
	}
	// The API server's authorizer sees a new or changed role a moment
	// later: wait for the grant before judging the rows.
	eventually := func(what string, check func() DoctorCheck) {
		t.Helper()
		var chk DoctorCheck
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if chk = check(); chk.OK {
				return
			}
		}
		t.Errorf("%s: %+v, want OK within 20 s", what, chk)
	}
	eventually("RBAC row for a user granted rbacVerbs", func() DoctorCheck { return rbacCheck(ctx, c) })
	chk := faultRBACCheck(ctx, c)
	if chk.OK || !chk.Warn || !strings.Contains(chk.Detail, "delete pods") || !strings.Contains(chk.Detail, "create pods/portforward") ||
		!strings.Contains(chk.Detail, "update pods/resize") || !strings.Contains(chk.Detail, "plans with faults cannot run") {
		t.Errorf("faults row for a user without them: %+v, want a warning naming each", chk)
	}

	role.Rules = append(role.Rules, rules(faultVerbs)...)
	if _, err := cs.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("faults row once granted", func() DoctorCheck { return faultRBACCheck(ctx, c) })
}
