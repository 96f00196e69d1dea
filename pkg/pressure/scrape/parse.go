package scrape

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

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

// readSample reads the contract's families from one response's series.
// Series of one family are summed (a replica may split a count by label),
// except the state gauges, which take the worst. A response with no series
// of the families is an error: it is the wrong endpoint, or garbage the text
// filter dropped line by line.
func readSample(ss []series, f *families, n *exposition.Names) (replicaSample, error) {
	var s replicaSample
	if len(ss) == 0 {
		return s, fmt.Errorf("none of the exposition contract's metrics in the response (%s, ...)", strings.Join(n.All()[:4], ", "))
	}
	s.activations = sum(ss, f.activations)
	s.cpuSeconds = sum(ss, f.cpuSeconds)
	s.cpuLimit = positive(sum(ss, f.cpuLimit))
	s.memory = sum(ss, f.memory)
	s.memoryLimit = positive(sum(ss, f.memoryLimit))
	s.splits = sum(ss, f.splits)
	if v := s.splits.v; s.splits.ok && (math.IsNaN(v) || math.IsInf(v, 0) || v < 0) {
		s.splitsErr = fmt.Errorf("%s is %v", n.SplitsInFlight, v)
		s.splits = scalar{}
	}
	var err error
	if s.wal, err = worstState(ss, f.walState); err != nil {
		return s, fmt.Errorf("%s: %w", n.WalState, err)
	}
	if s.trees, err = readTrees(ss, f, n); err != nil {
		return s, err
	}
	s.queue = readQueue(ss, f)
	return s, nil
}

// sum adds a family's values; histograms and summaries are not part of the
// contract's plain series and add nothing.
func sum(ss []series, family int) scalar {
	var s scalar
	for i := range ss {
		if x := &ss[i]; x.family == family && x.hasValue {
			s.v += x.value
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
func worstState(ss []series, family int) (pressure.WalSaturationState, error) {
	worst := pressure.Healthy
	for i := range ss {
		if x := &ss[i]; x.family == family {
			st, err := seriesState(x)
			if err != nil {
				return worst, err
			}
			worst = pressure.Worse(worst, st)
		}
	}
	return worst, nil
}

// seriesState reads one state gauge series; a series that is not a gauge,
// counter or untyped sample reads Healthy.
func seriesState(x *series) (pressure.WalSaturationState, error) {
	if !x.hasValue {
		return pressure.Healthy, nil
	}
	return pressure.WalStateFromGauge(x.value)
}

// readTrees reads the storage series, keyed by their tree label. A series
// without a tree label is not placed on any tree and is skipped; a NaN
// byte count names its tree but adds nothing to it.
func readTrees(ss []series, f *families, n *exposition.Names) (map[string]*treeSample, error) {
	var trees map[string]*treeSample
	get := func(x *series) *treeSample {
		name := x.labels[labelTree]
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
	for _, r := range []struct {
		family int
		dst    func(*treeSample) *scalar
	}{
		{f.treeRetained, func(t *treeSample) *scalar { return &t.retained }},
		{f.treeCeiling, func(t *treeSample) *scalar { return &t.ceiling }},
	} {
		for i := range ss {
			x := &ss[i]
			if x.family != r.family {
				continue
			}
			if t := get(x); t != nil && x.hasValue && !math.IsNaN(x.value) { // NaN: no report
				d := r.dst(t)
				d.v, d.ok = d.v+x.value, true
			}
		}
	}
	for i := range ss {
		x := &ss[i]
		if x.family != f.treeState {
			continue
		}
		t := get(x)
		if t == nil {
			continue
		}
		st, err := seriesState(x)
		if err != nil {
			return nil, fmt.Errorf("%s{tree=%q}: %w", n.TreeSaturationState, x.labels[labelTree], err)
		}
		t.state = pressure.Worse(t.state, st)
	}
	for i := range ss {
		if x := &ss[i]; x.family == f.partitionAccount {
			if err := readPlacement(x, get, n); err != nil {
				return nil, err
			}
		}
	}
	return trees, nil
}

// readPlacement reads one partition-to-account series. A value above 0
// (1 by convention) places a partition; 0, a negative value or NaN does
// not (exposition.Placed), so an exporter can zero a placement it no longer
// holds. The prometheus source reads placements by the same rule.
func readPlacement(x *series, get func(*series) *treeSample, n *exposition.Names) error {
	account := x.labels[labelAccount]
	if !x.hasValue || !exposition.Placed(x.value) || account == "" {
		return nil
	}
	t := get(x)
	if t == nil {
		return nil
	}
	raw := x.labels[labelPartition]
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
