package exposition

import (
	"math"
	"slices"
	"strings"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// MaxPartitions bounds a partition index, so one broken exporter or bad
// label cannot make a fold allocate a huge placement slice. Both sources
// refuse an index outside [0, MaxPartitions) with their own error.
const MaxPartitions = 4096

// Placed says a partition-to-account value places its partition: above 0
// (1 by convention). 0, a negative value or NaN does not, so an exporter
// can zero a placement it no longer holds.
func Placed(v float64) bool { return v > 0 }

// TreeFold gathers one sample's storage series, from every replica a scrape
// read or every series a Prometheus query returned, into the storage view.
// Both sources feed it series by series, so they fold alike:
//
//   - bytes and ceiling are read as byte counts (NaN and negatives are 0,
//     anything past int64 saturates) and the largest is kept;
//   - saturation keeps the worst;
//   - a partition on two accounts (mid-move, or replicas that disagree)
//     goes to the smaller account name, whatever order the reports came in;
//   - partitions are laid out by index; an index nobody reported stays "",
//     which the storage collector charges to no account.
//
// Every call names its tree, which is then part of the view even when the
// value adds nothing. Checking series (a missing tree label, a bad
// partition index, a placement that does not hold, see Placed) is the
// caller's. A TreeFold is for one sample; the zero value is ready to use.
type TreeFold struct {
	trees map[string]*foldTree
}

type foldTree struct {
	obs       pressure.TreeObservation
	placement map[int]string // partition index -> account
}

func (f *TreeFold) tree(name string) *foldTree {
	if f.trees == nil {
		f.trees = map[string]*foldTree{}
	}
	t := f.trees[name]
	if t == nil {
		t = &foldTree{obs: pressure.TreeObservation{Tree: name}}
		f.trees[name] = t
	}
	return t
}

// Retained adds one report of a tree's retained bytes.
func (f *TreeFold) Retained(tree string, v float64) {
	t := f.tree(tree)
	t.obs.RetainedBytes = max(t.obs.RetainedBytes, ToBytes(v))
}

// Ceiling adds one report of a tree's retained bytes ceiling.
func (f *TreeFold) Ceiling(tree string, v float64) {
	t := f.tree(tree)
	t.obs.RetainedBytesCeiling = max(t.obs.RetainedBytesCeiling, ToBytes(v))
}

// Saturation adds one report of a tree's saturation state.
func (f *TreeFold) Saturation(tree string, st pressure.WalSaturationState) {
	t := f.tree(tree)
	t.obs.Saturation = pressure.Worse(t.obs.Saturation, st)
}

// Place adds one placement of a tree's partition on an account. An index
// outside [0, MaxPartitions) is ignored.
func (f *TreeFold) Place(tree string, partition int, account string) {
	t := f.tree(tree)
	if partition < 0 || partition >= MaxPartitions {
		return
	}
	if t.placement == nil {
		t.placement = map[int]string{}
	}
	if cur, ok := t.placement[partition]; !ok || account < cur {
		t.placement[partition] = account
	}
}

// Trees returns every tree named, sorted by name; nil when none was, which
// the sampler reads as no storage view.
func (f *TreeFold) Trees() []pressure.TreeObservation {
	if len(f.trees) == 0 {
		return nil
	}
	out := make([]pressure.TreeObservation, 0, len(f.trees))
	for _, t := range f.trees {
		obs := t.obs
		if len(t.placement) > 0 {
			n := 0
			for idx := range t.placement {
				n = max(n, idx+1)
			}
			obs.PartitionAccounts = make([]string, n)
			for idx, account := range t.placement {
				obs.PartitionAccounts[idx] = account
			}
		}
		out = append(out, obs)
	}
	slices.SortFunc(out, func(a, b pressure.TreeObservation) int { return strings.Compare(a.Tree, b.Tree) })
	return out
}

// ToBytes reads a gauge as a byte count: NaN and negatives are 0, and
// anything past int64 saturates rather than wrapping.
func ToBytes(v float64) int64 {
	switch {
	case math.IsNaN(v) || v <= 0:
		return 0
	case v >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(v)
}
