package kube

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KubeconfigEnvVar names the kubeconfig file the scaler reads when it runs
// outside a cluster (the end-to-end suite, a developer's machine). It is
// the scaler's own setting rather than KUBECONFIG, so a shell that happens
// to point kubectl somewhere never points the scaler there unasked.
const KubeconfigEnvVar = "BAROMETER_KUBECONFIG"

// ErrNoConfig is returned by Connect when the scaler has no way to reach
// Kubernetes: it runs outside a pod and no kubeconfig is set.
var ErrNoConfig = errors.New("no Kubernetes configuration: the scaler runs outside a pod and " + KubeconfigEnvVar + " is unset")

// Connect builds the client from the kubeconfig file at path when path is
// set, else from the pod's service account (in-cluster). It does no I/O
// beyond reading those files.
func Connect(path string) (*Client, error) {
	var (
		cfg *rest.Config
		err error
	)
	if path != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", KubeconfigEnvVar, err)
		}
	} else {
		cfg, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			return nil, ErrNoConfig
		}
		if err != nil {
			return nil, fmt.Errorf("in-cluster Kubernetes configuration: %w", err)
		}
	}
	cfg.UserAgent = "barometer"
	return NewClient(cfg)
}
