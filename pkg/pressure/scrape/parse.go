package scrape

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// maxPartitions bounds the partition label, so one broken exporter cannot
// make the fold allocate a huge placement slice.
const maxPartitions = exposition.MaxPartitions

// scalar is a value a replica may or may not expose.
type scalar struct {
	v  float64
	ok bool
}

// replicaSample is what one replica's response says, before any state from
// earlier samples (the CPU rate) is applied.
type replicaSample struct {
	activations, cpuSeconds, cpuLimit, memory, memoryLimit scalar
	wal                                                    pressure.WalSaturationState
	splits                                                 scalar
	splitsErr                                              error
	trees                                                  map[string]*treeSample // nil when none reported
	queue                                                  []queueSeries          // nil when none reported
}

type treeSample struct {
	retained, ceiling scalar
	state             pressure.WalSaturationState
	partitions        map[int]string
}

// readSample reads the contract's families. Series of one family are summed
// (a replica may split a count by label), except the state gauges, which take
// the worst. A response with none of the families is an error: it is the
// wrong endpoint, or garbage the text filter dropped line by line. want is
// n's family names (n.Families), precomputed once by New.
func readSample(fams map[string]*dto.MetricFamily, n *exposition.Names, want wantSet) (replicaSample, error) {
	var s replicaSample
	found := false
	for name := range want {
		if fams[name] != nil {
			found = true
			break
		}
	}
	if !found {
		return s, fmt.Errorf("none of the exposition contract's metrics in the response (%s, ...)", strings.Join(n.All()[:4], ", "))
	}
	s.activations = sum(fams[n.Activations])
	s.cpuSeconds = sum(fams[n.CPUSeconds])
	s.cpuLimit = positive(sum(fams[n.CPULimitCores]))
	s.memory = sum(fams[n.MemoryBytes])
	s.memoryLimit = positive(sum(fams[n.MemoryLimitBytes]))
	s.splits = sum(fams[n.SplitsInFlight])
	if v := s.splits.v; s.splits.ok && (math.IsNaN(v) || math.IsInf(v, 0) || v < 0) {
		s.splitsErr = fmt.Errorf("%s is %v", n.SplitsInFlight, v)
		s.splits = scalar{}
	}
	var err error
	if s.wal, err = worstState(fams[n.WalState]); err != nil {
		return s, fmt.Errorf("%s: %w", n.WalState, err)
	}
	if s.trees, err = readTrees(fams, n); err != nil {
		return s, err
	}
	s.queue = readQueue(fams, n)
	return s, nil
}

// value reads a gauge, counter or untyped sample; histograms and summaries
// are not part of the contract and read as absent.
func value(m *dto.Metric) (float64, bool) {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue(), true
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue(), true
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

func sum(f *dto.MetricFamily) scalar {
	var s scalar
	for _, m := range f.GetMetric() {
		if v, ok := value(m); ok {
			s.v += v
			s.ok = true
		}
	}
	return s
}

// positive drops a limit that is not a finite number above zero: such a
// limit says nothing, and dividing by it would make up a pressure.
func positive(s scalar) scalar {
	if !s.ok || math.IsNaN(s.v) || math.IsInf(s.v, 0) || s.v <= 0 {
		return scalar{}
	}
	return s
}

// worstState folds a state gauge's series to the worst. An out-of-range
// value is an error, so a broken exporter is seen rather than read as
// Healthy.
func worstState(f *dto.MetricFamily) (pressure.WalSaturationState, error) {
	worst := pressure.Healthy
	for _, m := range f.GetMetric() {
		st, err := metricState(m)
		if err != nil {
			return worst, err
		}
		worst = pressure.Worse(worst, st)
	}
	return worst, nil
}

// metricState reads one state gauge series; a series that is not a gauge,
// counter or untyped sample reads Healthy.
func metricState(m *dto.Metric) (pressure.WalSaturationState, error) {
	v, ok := value(m)
	if !ok {
		return pressure.Healthy, nil
	}
	return pressure.WalStateFromGauge(v)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// readTrees reads the storage series, keyed by their tree label. A series
// without a tree label is not placed on any tree and is skipped; a NaN
// byte count names its tree but adds nothing to it.
func readTrees(fams map[string]*dto.MetricFamily, n *exposition.Names) (map[string]*treeSample, error) {
	var trees map[string]*treeSample
	get := func(m *dto.Metric) *treeSample {
		name := label(m, exposition.LabelTree)
		if name == "" {
			return nil
		}
		if trees == nil {
			trees = map[string]*treeSample{}
		}
		t := trees[name]
		if t == nil {
			t = &treeSample{}
			trees[name] = t
		}
		return t
	}
	for _, x := range []struct {
		fam *dto.MetricFamily
		dst func(*treeSample) *scalar
	}{
		{fams[n.TreeRetainedBytes], func(t *treeSample) *scalar { return &t.retained }},
		{fams[n.TreeRetainedBytesCeiling], func(t *treeSample) *scalar { return &t.ceiling }},
	} {
		for _, m := range x.fam.GetMetric() {
			v, ok := value(m)
			if t := get(m); t != nil && ok && !math.IsNaN(v) { // NaN: no report
				d := x.dst(t)
				d.v, d.ok = d.v+v, true
			}
		}
	}
	for _, m := range fams[n.TreeSaturationState].GetMetric() {
		t := get(m)
		if t == nil {
			continue
		}
		st, err := metricState(m)
		if err != nil {
			return nil, fmt.Errorf("%s{tree=%q}: %w", n.TreeSaturationState, label(m, exposition.LabelTree), err)
		}
		t.state = pressure.Worse(t.state, st)
	}
	for _, m := range fams[n.PartitionAccount].GetMetric() {
		if err := readPlacement(m, get, n); err != nil {
			return nil, err
		}
	}
	return trees, nil
}

// readPlacement reads one partition-to-account series. A value above 0
// (1 by convention) places a partition; 0, a negative value or NaN does
// not (exposition.Placed), so an exporter can zero a placement it no longer
// holds. The prometheus source reads placements by the same rule.
func readPlacement(m *dto.Metric, get func(*dto.Metric) *treeSample, n *exposition.Names) error {
	v, ok := value(m)
	account := label(m, exposition.LabelAccount)
	if !ok || !exposition.Placed(v) || account == "" {
		return nil
	}
	t := get(m)
	if t == nil {
		return nil
	}
	raw := label(m, exposition.LabelPartition)
	p, err := strconv.Atoi(raw)
	if err != nil || p < 0 || p >= maxPartitions {
		return fmt.Errorf("%s: partition %q: %w", n.PartitionAccount, raw, errBadPartition)
	}
	if t.partitions == nil {
		t.partitions = map[int]string{}
	}
	// Within one replica as across them (exposition.TreeFold), a
	// partition on two accounts goes to the smaller name.
	if cur, ok := t.partitions[p]; !ok || account < cur {
		t.partitions[p] = account
	}
	return nil
}

var errBadPartition = errors.New("not a whole number from 0 to 4095")
