package promsource

import (
	"strconv"

	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// foldTrees returns the storage view: every tree any storage query named,
// sorted by name; nil when none did, which the sampler reads as no storage
// view, as it does the scrape source's when no replica reports storage.
// Series are merged by the scrape source's rules (exposition.TreeFold): the
// largest bytes and ceiling (NaN and negatives read 0), the worst
// saturation, a placement wherever its value is above 0, and a partition on
// two accounts on the smaller name. Unlike a replica's, a tree's unreadable
// value fails the sample: there is no "missing tree" to report it by.
func (s *Source) foldTrees(res *[numDimensions]result) ([]pressure.TreeObservation, error) {
	var f exposition.TreeFold
	for d := dimTreeBytes; d <= dimPartitionAccount; d++ {
		for _, smp := range res[d].vec {
			v := float64(smp.Value)
			if d == dimPartitionAccount && !exposition.Placed(v) {
				continue // a placement that does not hold: 0, negative or NaN
			}
			name := string(smp.Metric[exposition.LabelTree])
			if name == "" {
				return nil, s.errorf(d, "series %s has no %s label", smp.Metric, exposition.LabelTree)
			}
			if err := s.applyTree(&f, d, name, smp); err != nil {
				return nil, err
			}
		}
	}
	return f.Trees(), nil
}

func (s *Source) applyTree(f *exposition.TreeFold, d dimension, name string, smp *model.Sample) error {
	v := float64(smp.Value)
	switch d {
	case dimTreeBytes:
		f.Retained(name, v)
	case dimTreeCeiling:
		f.Ceiling(name, v)
	case dimTreeSaturation:
		st, err := pressure.WalStateFromGauge(v)
		if err != nil {
			return s.errorf(d, "tree %s: %w", name, err)
		}
		f.Saturation(name, st)
	case dimPartitionAccount:
		idx, err := strconv.Atoi(string(smp.Metric[exposition.LabelPartition]))
		if err != nil || idx < 0 || idx >= maxPartitions {
			return s.errorf(d, "series %s: label %s must be a partition index from 0 to %d", smp.Metric, exposition.LabelPartition, maxPartitions-1)
		}
		account := string(smp.Metric[exposition.LabelAccount])
		if account == "" {
			return s.errorf(d, "series %s has no %s label", smp.Metric, exposition.LabelAccount)
		}
		// Mid-move a partition may show on two accounts; the fold gives it
		// the smaller name so the same answer always folds the same way.
		f.Place(name, idx, account)
	}
	return nil
}
