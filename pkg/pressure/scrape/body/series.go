package body

import (
	"fmt"

	dto "github.com/prometheus/client_model/go"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// A response is read into series: one a sample line (text) or Metric
// message (protobuf) of a family the source reads, holding only what
// ReadSample looks at. The parsers (textparse.go, protoparse.go) write them
// straight from the filtered body, so a sample allocates for the series it
// keeps, not for the bytes it received; a body they do not take is parsed
// by expfmt and read into the same series (fromFamilies).

// The labels the contract reads, as indexes of series.labels.
const (
	labelTree = iota
	labelPartition
	labelAccount
	labelClass
	labelReservation
	labelCount
)

var labelNames = [labelCount]string{
	labelTree:        exposition.LabelTree,
	labelPartition:   exposition.LabelPartition,
	labelAccount:     exposition.LabelAccount,
	labelClass:       exposition.LabelClass,
	labelReservation: exposition.LabelReservation,
}

// readLabel is the index of a label name the contract reads, -1 for any
// other.
func readLabel(name []byte) int {
	for i, l := range labelNames {
		if string(name) == l {
			return i
		}
	}
	return -1
}

// The aggregates a series may hold.
const (
	aggNone      = iota
	aggHistogram // a histogram's sum and count
	aggSummary   // a summary's sum and count
)

// Series is one series of a wanted family. A protobuf Metric may hold a
// value and an aggregate at once; each is read where the contract reads
// that kind.
type Series struct {
	family   int // index into Families.names
	hasValue bool
	value    float64 // a gauge's, else a counter's, else an untyped value
	agg      uint8
	// sum and count: of a histogram (its float count where it has one),
	// else of a summary.
	sum, count float64
	labels     [labelCount]string // the first label of each name, "" when none
}

// maxFamilies bounds the distinct family names a source reads (the
// contract's 21 names and the run duration's _sum and _count), so a parse
// keeps its per-family state in an array.
const maxFamilies = 32

// Families are the family names a source reads, each with an index, and the
// index of each of the contract's roles. Two roles renamed to one name share
// the family, and both read it.
type Families struct {
	names []string
	index wantSet

	activations, cpuSeconds, cpuLimit, memory, memoryLimit, walState, splits int
	treeRetained, treeCeiling, treeState, partitionAccount                   int
	queueArrivals, queueRunDuration, queueRunSum, queueRunCount              int
	queueReady, queueRetrying, queueDue, queueBusy, queueReserved            int
	reservationStart, reservationEnd, reservationSlots                       int
}

// NewFamilies indexes the families of n; more than maxFamilies distinct
// names are an error.
func NewFamilies(n *exposition.Names) (*Families, error) {
	f := &Families{index: wantSet{}}
	idx := func(name string) int {
		i, ok := f.index[name]
		if !ok {
			i = len(f.names)
			f.names = append(f.names, name)
			f.index[name] = i
		}
		return i
	}
	for _, x := range []struct {
		dst  *int
		name string
	}{
		{&f.activations, n.Activations},
		{&f.cpuSeconds, n.CPUSeconds},
		{&f.cpuLimit, n.CPULimitCores},
		{&f.memory, n.MemoryBytes},
		{&f.memoryLimit, n.MemoryLimitBytes},
		{&f.walState, n.WalState},
		{&f.splits, n.SplitsInFlight},
		{&f.treeRetained, n.TreeRetainedBytes},
		{&f.treeCeiling, n.TreeRetainedBytesCeiling},
		{&f.treeState, n.TreeSaturationState},
		{&f.partitionAccount, n.PartitionAccount},
		{&f.queueArrivals, n.QueueArrivals},
		{&f.queueRunDuration, n.QueueRunDuration},
		{&f.queueRunSum, n.QueueRunDuration + exposition.SumSuffix},
		{&f.queueRunCount, n.QueueRunDuration + exposition.CountSuffix},
		{&f.queueReady, n.QueueReady},
		{&f.queueRetrying, n.QueueRetrying},
		{&f.queueDue, n.QueueDue},
		{&f.queueBusy, n.QueueBusy},
		{&f.reservationStart, n.QueueReservationStart},
		{&f.reservationEnd, n.QueueReservationEnd},
		{&f.reservationSlots, n.QueueReservationSlots},
		{&f.queueReserved, n.QueueReserved},
	} {
		*x.dst = idx(x.name)
	}
	if len(f.names) > maxFamilies {
		return nil, fmt.Errorf("%d metric families, at most %d", len(f.names), maxFamilies)
	}
	return f, nil
}

// fromFamilies reads expfmt's families into series, in the order expfmt
// gives a family's metrics (the body's).
func fromFamilies(fams map[string]*dto.MetricFamily, f *Families, dst []Series) []Series {
	for i, name := range f.names {
		for _, m := range fams[name].GetMetric() {
			s := Series{family: i}
			var seen uint8
			for _, l := range m.GetLabel() {
				if k := readLabel([]byte(l.GetName())); k >= 0 && seen&(1<<k) == 0 {
					s.labels[k], seen = l.GetValue(), seen|1<<k
				}
			}
			switch {
			case m.GetGauge() != nil:
				s.hasValue, s.value = true, m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				s.hasValue, s.value = true, m.GetCounter().GetValue()
			case m.GetUntyped() != nil:
				s.hasValue, s.value = true, m.GetUntyped().GetValue()
			}
			switch {
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				s.agg, s.sum, s.count = aggHistogram, h.GetSampleSum(), float64(h.GetSampleCount())
				if h.SampleCountFloat != nil {
					s.count = h.GetSampleCountFloat()
				}
			case m.GetSummary() != nil:
				sm := m.GetSummary()
				s.agg, s.sum, s.count = aggSummary, sm.GetSampleSum(), float64(sm.GetSampleCount())
			}
			dst = append(dst, s)
		}
	}
	return dst
}
