package otlp

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// fold turns the replicas the store returned into an Observation, by the
// exposition contract's rules (docs/exposition.md), as the scrape source
// folds its scrapes. Called with s.mu held: the queue counters are kept
// between samples.
func (s *Source) fold(replicas []store.Replica, pods *pool, now time.Time) pressure.Observation {
	obs := pressure.Observation{ObservedAt: now}
	cutoff := now.Add(-s.cfg.MaxAge)
	kinds := contractKinds(&s.cfg.Names)
	var queue exposition.QueueFold
	var trees exposition.TreeFold
	var splitErrs []error
	for _, r := range replicas {
		if pods.leftOut(r.Name) { // starting or terminating: named by waitForPool
			continue
		}
		if r.Newest.Before(cutoff) {
			obs.Missing = append(obs.Missing, pressure.MissingReplica{Name: r.Name,
				Err: fmt.Errorf("no push for %s (maxAge %s)", now.Sub(r.Newest).Round(time.Millisecond), s.cfg.MaxAge)})
			continue
		}
		fams := map[string][]store.Series{}
		var measured time.Time
		var wrong []error
		for _, x := range r.Series {
			if x.At.Before(cutoff) { // a series the replica no longer pushes
				continue
			}
			if err := kinds.check(x); err != nil { // read as absent
				wrong = append(wrong, err)
				continue
			}
			fams[x.Metric] = append(fams[x.Metric], x)
			measured = later(measured, x.At)
		}
		rep, err := s.replica(r, fams)
		if err != nil && len(fams) == 0 && len(wrong) > 0 {
			err = fmt.Errorf("%w: %w", err, errors.Join(wrong...))
		}
		if err != nil {
			obs.Missing = append(obs.Missing, pressure.MissingReplica{Name: r.Name, Err: err})
			continue
		}
		if err := readTrees(&trees, fams, &s.cfg.Names); err != nil {
			obs.Missing = append(obs.Missing, pressure.MissingReplica{Name: r.Name, Err: err})
			continue
		}
		if rep.splitsErr != nil {
			splitErrs = append(splitErrs, fmt.Errorf("%s: %w", r.Name, rep.splitsErr))
		}
		feedQueue(&queue, r.Name, fams, &s.cfg.Names)
		obs.Replicas = append(obs.Replicas, rep.ReplicaObservation)
		// The sample is as old as its oldest replica's newest point.
		if obs.MeasuredAt.IsZero() || measured.Before(obs.MeasuredAt) {
			obs.MeasuredAt = measured
		}
	}
	obs.SplitsErr = errors.Join(splitErrs...)
	obs.Trees = trees.Trees()
	obs.Queue = queue.Observation(&s.queue, now)
	if obs.MeasuredAt.After(now) { // never fresher than the sample
		obs.MeasuredAt = now
	}
	return obs
}

// kindSet is the store kinds a contract metric may be pushed as.
type kindSet map[string][]store.Kind

// contractKinds is what each of the contract's metrics may be pushed as:
// a value (a gauge, or a counter read raw) for most; a counter for the
// CPU seconds, whose rate is read; a histogram (or summary) for the run
// duration.
func contractKinds(n *exposition.Names) kindSet {
	value := []store.Kind{store.Gauge, store.Counter}
	k := kindSet{}
	for _, name := range n.Families() {
		k[name] = value
	}
	k[n.CPUSeconds] = []store.Kind{store.Counter}
	k[n.QueueRunDuration] = []store.Kind{store.Histogram}
	return k
}

// check names a series of the contract pushed as the wrong kind: a gauge
// pushed as a histogram says nothing the contract can read, and is read
// as absent.
func (k kindSet) check(x store.Series) error {
	allowed, ok := k[x.Metric]
	if !ok || slices.Contains(allowed, x.Kind) {
		return nil
	}
	want := make([]string, len(allowed))
	for i, a := range allowed {
		want[i] = a.String()
	}
	return fmt.Errorf("%s is pushed as a %s (the contract's is a %s)", x.Metric, x.Kind, strings.Join(want, " or "))
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// value reads a gauge or a counter's cumulative value; a histogram is not
// a contract value, and no contract value is NaN, infinite or negative
// (the store refuses such points): each reads as absent.
func value(x store.Series) (float64, bool) {
	if x.Kind == store.Histogram || math.IsNaN(x.Value) || math.IsInf(x.Value, 0) || x.Value < 0 {
		return 0, false
	}
	return x.Value, true
}

func sum(series []store.Series) exposition.Value {
	var s exposition.Value
	for _, x := range series {
		if v, ok := value(x); ok {
			s.Add(v)
		}
	}
	return s
}

// replicaRead is one replica's pressure, and its split footprint's error
// (which fails the split probe open, not the replica).
type replicaRead struct {
	pressure.ReplicaObservation
	splitsErr error
}

// replica reads one fresh replica's pressure. An error leaves it out of
// the sample, named: none of the contract's metrics, or a WAL state out of
// range.
func (s *Source) replica(r store.Replica, fams map[string][]store.Series) (replicaRead, error) {
	n := &s.cfg.Names
	var read replicaRead
	out := &read.ReplicaObservation
	out.Name = r.Name
	if r.Pod {
		out.Pod = r.Name
	}
	if len(fams) == 0 {
		return read, fmt.Errorf("none of the exposition contract's metrics pushed within maxAge %s", s.cfg.MaxAge)
	}
	ws := sum(fams[n.Activations])
	out.WorkingSet, out.HasWorkingSet = ws.V, ws.OK
	out.MemoryUsedBytes = sum(fams[n.MemoryBytes]).V
	out.MemoryLimitBytes = sum(fams[n.MemoryLimitBytes]).Limit().V
	if sp := sum(fams[n.SplitsInFlight]); sp.OK {
		if math.IsNaN(sp.V) || math.IsInf(sp.V, 0) || sp.V < 0 {
			read.splitsErr = fmt.Errorf("%s is %v", n.SplitsInFlight, sp.V)
		} else {
			out.SplitsInFlight, out.HasSplits = sp.V, true
		}
	}
	for _, x := range fams[n.WalState] {
		v, ok := value(x)
		if !ok {
			continue
		}
		st, err := pressure.WalStateFromGauge(v)
		if err != nil {
			return read, fmt.Errorf("%s: %w", n.WalState, err)
		}
		out.WalSaturation = pressure.Worse(out.WalSaturation, st)
	}
	limit := s.cfg.CPULimitCores
	if l := sum(fams[n.CPULimitCores]).Limit(); l.OK {
		limit = l.V
	}
	// CPU is the counter's rate over the window. A replica's first push
	// has no rate yet: its CPU reads 0 for that sample, as on a first
	// scrape, and is real from its next push on.
	var rate float64
	rated := len(fams[n.CPUSeconds]) > 0
	for _, x := range fams[n.CPUSeconds] {
		if x.Kind != store.Counter || !x.HasRate {
			rated = false
			break
		}
		rate += x.Rate
	}
	if rated && limit > 0 {
		out.CPUUtilisation = rate / limit
	}
	return read, nil
}

// readTrees feeds a replica's storage series to the sample's fold, by the
// rules the scrape source reads them with: a series without a tree label
// is skipped, a NaN byte count adds nothing, a state out of range fails
// the replica, a placement needs an account and a partition index.
func readTrees(f *exposition.TreeFold, fams map[string][]store.Series, n *exposition.Names) error {
	for _, x := range fams[n.TreeSaturationState] {
		tree := x.Label(exposition.LabelTree)
		v, ok := value(x)
		if tree == "" || !ok {
			continue
		}
		st, err := pressure.WalStateFromGauge(v)
		if err != nil {
			return fmt.Errorf("%s{tree=%q}: %w", n.TreeSaturationState, tree, err)
		}
		f.Saturation(tree, st)
	}
	for _, x := range fams[n.PartitionAccount] {
		tree, account, raw := x.Label(exposition.LabelTree), x.Label(exposition.LabelAccount), x.Label(exposition.LabelPartition)
		v, ok := value(x)
		if tree == "" || account == "" || !ok || !exposition.Placed(v) {
			continue
		}
		p, err := strconv.Atoi(raw)
		if err != nil || p < 0 || p >= exposition.MaxPartitions {
			return fmt.Errorf("%s: partition %q: not a whole number from 0 to %d", n.PartitionAccount, raw, exposition.MaxPartitions-1)
		}
		f.Place(tree, p, account)
	}
	for _, x := range fams[n.TreeRetainedBytes] {
		if tree, ok := treeValue(x); ok {
			f.Retained(tree, x.Value)
		}
	}
	for _, x := range fams[n.TreeRetainedBytesCeiling] {
		if tree, ok := treeValue(x); ok {
			f.Ceiling(tree, x.Value)
		}
	}
	return nil
}

func treeValue(x store.Series) (string, bool) {
	tree := x.Label(exposition.LabelTree)
	_, ok := value(x)
	return tree, tree != "" && ok && !math.IsNaN(x.Value)
}

// feedQueue adds a replica's queue series to the sample's fold. Counters
// are the store's cumulative values, which never fall (a reset is added
// up), so a restarted replica reads as one that counts on. The run
// duration is a histogram's (or summary's) sum and count, or two plain
// counters.
func feedQueue(f *exposition.QueueFold, replica string, fams map[string][]store.Series, n *exposition.Names) {
	plain := func(kind exposition.QueueKind, name, label string) {
		for _, x := range fams[name] {
			v, ok := value(x)
			if !ok {
				continue
			}
			l := ""
			if label != "" {
				l = x.Label(label)
			}
			if kind.Reservation() && l == "" {
				continue // cannot be joined, as in the scrape source
			}
			f.Add(kind, replica, l, v)
		}
	}
	plain(exposition.KindArrivals, n.QueueArrivals, "")
	for _, x := range fams[n.QueueRunDuration] {
		if x.Kind == store.Histogram {
			f.RunSeconds(replica, x.Value)
			f.Runs(replica, x.Count)
		}
	}
	plain(exposition.KindRunSeconds, n.QueueRunDuration+exposition.SumSuffix, "")
	plain(exposition.KindRuns, n.QueueRunDuration+exposition.CountSuffix, "")
	plain(exposition.KindReady, n.QueueReady, exposition.LabelClass)
	plain(exposition.KindRetrying, n.QueueRetrying, exposition.LabelClass)
	plain(exposition.KindDue, n.QueueDue, "")
	plain(exposition.KindBusy, n.QueueBusy, "")
	plain(exposition.KindReserved, n.QueueReserved, "")
	plain(exposition.KindReservationStart, n.QueueReservationStart, exposition.LabelReservation)
	plain(exposition.KindReservationEnd, n.QueueReservationEnd, exposition.LabelReservation)
	plain(exposition.KindReservationSlots, n.QueueReservationSlots, exposition.LabelReservation)
}
