package promsource

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// tree is one WAL tree being folded from the storage queries.
type tree struct {
	obs       pressure.TreeObservation
	placement map[int]string // partition index -> account
}

// foldTrees returns the storage view: every tree any storage query named,
// sorted by name; nil when none did, which the sampler reads as no storage
// view, as it does the scrape source's when no replica reports storage.
// Series are merged by the scrape source's rules: the largest bytes and
// ceiling (NaN and negatives read 0), the worst saturation, a placement
// wherever its value is above 0, and a partition on two accounts on the
// smaller name. Unlike a replica's, a tree's unreadable value fails the
// sample: there is no "missing tree" to report it by.
func (s *Source) foldTrees(res *[numDimensions]result) ([]pressure.TreeObservation, error) {
	byName := map[string]*tree{}
	get := func(d dimension, smp *model.Sample) (*tree, error) {
		name := string(smp.Metric[exposition.LabelTree])
		if name == "" {
			return nil, s.errorf(d, "series %s has no %s label", smp.Metric, exposition.LabelTree)
		}
		t, ok := byName[name]
		if !ok {
			t = &tree{obs: pressure.TreeObservation{Tree: name}}
			byName[name] = t
		}
		return t, nil
	}
	for d := dimTreeBytes; d <= dimPartitionAccount; d++ {
		for _, smp := range res[d].vec {
			v := float64(smp.Value)
			if d == dimPartitionAccount && !(v > 0) {
				continue // a placement that does not hold: 0, negative or NaN
			}
			t, err := get(d, smp)
			if err != nil {
				return nil, err
			}
			if err := s.applyTree(d, t, smp); err != nil {
				return nil, err
			}
		}
	}
	if len(byName) == 0 {
		return nil, nil
	}
	out := make([]pressure.TreeObservation, 0, len(byName))
	for _, t := range byName {
		out = append(out, t.finish())
	}
	slices.SortFunc(out, func(a, b pressure.TreeObservation) int { return strings.Compare(a.Tree, b.Tree) })
	return out, nil
}

func (s *Source) applyTree(d dimension, t *tree, smp *model.Sample) error {
	v := float64(smp.Value)
	switch d {
	case dimTreeBytes:
		t.obs.RetainedBytes = max(t.obs.RetainedBytes, toBytes(v))
	case dimTreeCeiling:
		t.obs.RetainedBytesCeiling = max(t.obs.RetainedBytesCeiling, toBytes(v))
	case dimTreeSaturation:
		st, err := pressure.WalStateFromGauge(v)
		if err != nil {
			return s.errorf(d, "tree %s: %w", t.obs.Tree, err)
		}
		t.obs.Saturation = pressure.Worse(t.obs.Saturation, st)
	case dimPartitionAccount:
		idx, err := strconv.Atoi(string(smp.Metric[exposition.LabelPartition]))
		if err != nil || idx < 0 || idx >= maxPartitions {
			return s.errorf(d, "series %s: label %s must be a partition index from 0 to %d", smp.Metric, exposition.LabelPartition, maxPartitions-1)
		}
		account := string(smp.Metric[exposition.LabelAccount])
		if account == "" {
			return s.errorf(d, "series %s has no %s label", smp.Metric, exposition.LabelAccount)
		}
		if t.placement == nil {
			t.placement = map[int]string{}
		}
		// Mid-move a partition may show on two accounts; the smaller name
		// wins so the same answer always folds the same way, as the scrape
		// source merges replicas that disagree.
		if cur, ok := t.placement[idx]; !ok || account < cur {
			t.placement[idx] = account
		}
	}
	return nil
}

// finish lays the placement out by index; an index nobody reported stays
// "", which the storage collector charges to no account.
func (t *tree) finish() pressure.TreeObservation {
	if len(t.placement) == 0 {
		return t.obs
	}
	n := 0
	for idx := range t.placement {
		n = max(n, idx+1)
	}
	t.obs.PartitionAccounts = make([]string, n)
	for idx, account := range t.placement {
		t.obs.PartitionAccounts[idx] = account
	}
	return t.obs
}

// toBytes reads a byte count: NaN and negatives are 0, and anything past
// int64 saturates rather than wrapping.
func toBytes(v float64) int64 {
	switch {
	case math.IsNaN(v) || v <= 0:
		return 0
	case v >= math.MaxInt64:
		return math.MaxInt64
	default:
		return int64(v)
	}
}
