package body

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

// Scalar is a value a replica may or may not expose.
type Scalar = exposition.Value

// Sample is what one replica's response says, before any state from
// earlier samples (the CPU rate) is applied.
type Sample struct {
	Activations, CPUSeconds, CPULimit, Memory, MemoryLimit Scalar
	WAL                                                    pressure.WalSaturationState
	Splits                                                 Scalar
	SplitsErr                                              error
	trees                                                  map[string]*treeSample // nil when none reported
	queue                                                  []queueSeries          // nil when none reported
}

type treeSample struct {
	retained, ceiling Scalar
	state             pressure.WalSaturationState
	partitions        map[int]string
}

// ReadSample reads the contract's families from one response's series.
// Series of one family are summed (a replica may split a count by label),
// except the state gauges, which take the worst. A response with no series
// of the families is an error: it is the wrong endpoint, or garbage the text
// filter dropped line by line.
func ReadSample(ss []Series, f *Families, n *exposition.Names) (Sample, error) {
	var s Sample
	if len(ss) == 0 {
		return s, fmt.Errorf("none of the exposition contract's metrics in the response (%s, ...)", strings.Join(n.All()[:4], ", "))
	}
	s.Activations = sum(ss, f.activations)
	s.CPUSeconds = sum(ss, f.cpuSeconds)
	s.CPULimit = sum(ss, f.cpuLimit).Limit()
	s.Memory = sum(ss, f.memory)
	s.MemoryLimit = sum(ss, f.memoryLimit).Limit()
	s.Splits = sum(ss, f.splits)
	if v := s.Splits.V; s.Splits.OK && (math.IsNaN(v) || math.IsInf(v, 0) || v < 0) {
		s.SplitsErr = fmt.Errorf("%s is %v", n.SplitsInFlight, v)
		s.Splits = Scalar{}
	}
	var err error
	if s.WAL, err = worstState(ss, f.walState); err != nil {
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
func sum(ss []Series, family int) Scalar {
	var s Scalar
	for i := range ss {
		if x := &ss[i]; x.family == family && x.hasValue {
			s.Add(x.value)
		}
	}
	return s
}

// worstState folds a state gauge's series to the worst. An out-of-range
// value is an error, so a broken exporter is seen rather than read as
// Healthy.
func worstState(ss []Series, family int) (pressure.WalSaturationState, error) {
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
func seriesState(x *Series) (pressure.WalSaturationState, error) {
	if !x.hasValue {
		return pressure.Healthy, nil
	}
	return pressure.WalStateFromGauge(x.value)
}

// readTrees reads the storage series, keyed by their tree label. A series
// without a tree label is not placed on any tree and is skipped; a NaN
// byte count names its tree but adds nothing to it.
func readTrees(ss []Series, f *Families, n *exposition.Names) (map[string]*treeSample, error) {
	var trees map[string]*treeSample
	get := func(x *Series) *treeSample {
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
		dst    func(*treeSample) *Scalar
	}{
		{f.treeRetained, func(t *treeSample) *Scalar { return &t.retained }},
		{f.treeCeiling, func(t *treeSample) *Scalar { return &t.ceiling }},
	} {
		for i := range ss {
			x := &ss[i]
			if x.family != r.family {
				continue
			}
			if t := get(x); t != nil && x.hasValue && !math.IsNaN(x.value) { // NaN: no report
				d := r.dst(t)
				d.V, d.OK = d.V+x.value, true
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
func readPlacement(x *Series, get func(*Series) *treeSample, n *exposition.Names) error {
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

// FeedTrees adds the replica's storage series to the sample's fold. A
// report the replica did not make reads 0, which adds nothing.
func (x *Sample) FeedTrees(f *exposition.TreeFold) {
	for name, t := range x.trees {
		f.Saturation(name, t.state)
		f.Retained(name, t.retained.V)
		f.Ceiling(name, t.ceiling.V)
		for p, account := range t.partitions {
			f.Place(name, p, account)
		}
	}
}
