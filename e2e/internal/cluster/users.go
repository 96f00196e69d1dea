package cluster

import (
	"context"
	"fmt"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/barometer-scaler/barometer/e2e/internal/pki"
)

// UserKubeconfig makes a client certificate for the user name, gives that
// user exactly rules (a ClusterRole of the same name, bound cluster-wide),
// and writes a kubeconfig for it under the work directory. It returns the
// kubeconfig's path.
//
// A client certificate, not a ServiceAccount token: the processes that use
// it run on this machine, not in a pod, and the certificate needs no token
// controller or projected volume.
func (c *Cluster) UserKubeconfig(ctx context.Context, name string, rules []rbacv1.PolicyRule) (string, error) {
	user, err := c.certs.ca.Issue(pki.Leaf{CommonName: name, Client: true})
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.cfg.WorkDir, name+".kubeconfig")
	if err := c.certs.userKubeconfig(path, c.server, user); err != nil {
		return "", err
	}
	rbac := c.Client.RbacV1()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("cluster role %s: %w", name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}},
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("cluster role binding %s: %w", name, err)
	}
	return path, nil
}
