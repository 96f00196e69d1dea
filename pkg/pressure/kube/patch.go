package kube

import (
	"context"
	"encoding/json"
	"strconv"
)

// deletionCost is the annotation victim hints write (package victim).
const deletionCost = "controller.kubernetes.io/pod-deletion-cost"

// Patcher writes pod-deletion-cost annotations with a JSON merge patch of
// the annotation alone: no read first, and no other field of the pod is
// touched, so RBAC needs patch on pods and nothing more.
type Patcher struct {
	client *Client
}

// NewPatcher returns a Patcher that writes through client.
func NewPatcher(client *Client) *Patcher { return &Patcher{client: client} }

// SetDeletionCost sets pod's deletion cost.
func (p *Patcher) SetDeletionCost(ctx context.Context, namespace, pod string, cost int) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{deletionCost: strconv.Itoa(cost)}}})
	if err != nil {
		return err
	}
	return p.client.patchPod(ctx, namespace, pod, patch)
}
