package promsource

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// ErrNoReplicas is wrapped by the error of a sample that found no replica
// to read.
var ErrNoReplicas = errors.New("no replicas")

// ErrEmpty is wrapped by the error of a query that returned no series
// where Options.FailOnEmpty makes that a failure.
var ErrEmpty = errors.New("returned no series, and empty answers fail the sample (ignoreNullValues is false)")

// DataTime is the time of the newest sample behind the signal: the
// largest value the timestamp query returned (timestamp() answers each
// series' sample time, in Unix seconds), never later than the evaluation
// instant at. It is the zero time when the query is not set or returned
// nothing usable, so the age is unknown rather than zero. at minus
// DataTime is the data's age: it grows when Prometheus stops scraping.
func DataTime(vec model.Vector, at time.Time) time.Time {
	var newest float64
	for _, smp := range vec {
		if v := float64(smp.Value); v > newest && !math.IsInf(v, 0) {
			newest = v // NaN fails v > newest
		}
	}
	if newest == 0 {
		return time.Time{}
	}
	sec, frac := math.Modf(newest)
	t := time.Unix(int64(sec), int64(frac*1e9)).UTC()
	if t.After(at) {
		return at
	}
	return t
}

// replica is one replica being folded from the query results.
type replica struct {
	obs       pressure.ReplicaObservation
	down      bool  // the replicas query says so
	err       error // a value that could not be read: the replica is left out
	splitsErr error // a split footprint that could not be read: fails open
}

// fold turns the query results (all without error, except perhaps the
// splits query's) into one observation.
func (s *Source) fold(res *[numDimensions]result, at time.Time) (pressure.Observation, error) {
	obs := pressure.Observation{ObservedAt: at, MeasuredAt: measuredAt(res, at)}
	replicas, err := s.foldReplicas(res)
	if err != nil {
		return pressure.Observation{}, err
	}
	splitErrs := []error{res[dimSplits].err}
	for _, r := range replicas {
		r.finish()
		splitErrs = append(splitErrs, r.splitsErr)
		switch {
		case r.down:
			obs.Missing = append(obs.Missing, pressure.MissingReplica{Name: r.obs.Name, Err: fmt.Errorf("down according to %s", dimReplicas.Key())})
		case r.err != nil:
			obs.Missing = append(obs.Missing, pressure.MissingReplica{Name: r.obs.Name, Err: r.err})
		default:
			obs.Replicas = append(obs.Replicas, r.obs)
		}
	}
	obs.SplitsErr = errors.Join(splitErrs...)
	if s.hasStore {
		if obs.Trees, err = s.foldTrees(res); err != nil {
			return pressure.Observation{}, err
		}
	}
	if s.hasQueue {
		if obs.Queue, err = s.foldQueue(res, at); err != nil {
			return pressure.Observation{}, err
		}
	}
	// No replica at all, but a queue (series of the workload's own, such
	// as a scheduler's, that name no replica): the workload is scaled to
	// zero with work waiting, a sample a queue policy scales up from.
	// Replicas that are there but unreadable still fail the sample.
	if len(obs.Replicas) == 0 && (len(replicas) > 0 || obs.Queue == nil) {
		return pressure.Observation{}, s.noReplicas(len(replicas), obs.Missing)
	}
	return obs, nil
}

// newestSample is the newest sample timestamp in the results (zero when
// there is none). An instant query stamps its samples with the evaluation
// time, so this is the query's time unless the server says otherwise; the
// scrape interval the data may trail it by is not in the answer
// (signal.Options.ReplicaStartup covers it).
// measuredAt is when the data was measured: the timestamp query's answer
// (DataTime), which an instant query needs because it stamps every sample
// with the evaluation instant; else the newest sample time of the results.
func measuredAt(res *[numDimensions]result, at time.Time) time.Time {
	if t := DataTime(res[dimTimestamp].vec, at); !t.IsZero() {
		return t
	}
	return newestSample(res)
}

func newestSample(res *[numDimensions]result) time.Time {
	var newest model.Time
	for _, r := range res {
		for _, smp := range r.vec {
			newest = max(newest, smp.Timestamp)
		}
	}
	if newest == 0 {
		return time.Time{}
	}
	return newest.Time()
}

// foldReplicas returns every replica, sorted by name.
func (s *Source) foldReplicas(res *[numDimensions]result) ([]*replica, error) {
	byName := map[string]*replica{}
	restricted := s.queries[dimReplicas] != ""
	if restricted {
		for _, smp := range res[dimReplicas].vec {
			name, err := s.replicaName(dimReplicas, smp)
			if err != nil {
				return nil, err
			}
			up := float64(smp.Value) > 0 // NaN is not up
			if r, ok := byName[name]; ok {
				r.down = r.down && !up
				continue
			}
			byName[name] = &replica{obs: pressure.ReplicaObservation{Name: name}, down: !up}
		}
	}
	for d := dimActivation; d <= dimRuns; d++ {
		if !d.perReplica() {
			continue
		}
		for _, smp := range res[d].vec {
			if d.counter() && smp.Metric[s.label] == "" {
				continue // a workload-wide counter names no replica
			}
			name, err := s.replicaName(d, smp)
			if err != nil {
				return nil, err
			}
			r, ok := byName[name]
			if !ok {
				if restricted {
					continue // not a replica the replicas query lists
				}
				r = &replica{obs: pressure.ReplicaObservation{Name: name}}
				byName[name] = r
			}
			apply(d, r, float64(smp.Value))
		}
	}
	out := make([]*replica, 0, len(byName))
	for _, r := range byName {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *replica) int { return strings.Compare(a.obs.Name, b.obs.Name) })
	return out, nil
}

// apply folds one value of dimension d into r, as the scrape source folds
// the series of one replica's exposition: counts add up (a replica may split
// its working set or memory by label), states keep the worst, and ratios
// (CPU, resource), which do not add, keep the largest. The queue counters
// only name replicas (a replica exposing nothing but its queue is still a
// replica, as it is to the scrape source); foldQueue reads their values.
func apply(d dimension, r *replica, v float64) {
	o := &r.obs
	switch d {
	case dimActivation:
		o.WorkingSet += v
		o.HasWorkingSet = true
	case dimResource, dimCPU:
		// A ready-made resource utilisation rides in the CPU field with no
		// memory ceiling: the collector's max(CPU, memory/ceiling) then
		// reads it unchanged.
		o.CPUUtilisation = worst(o.CPUUtilisation, v)
	case dimMemory:
		o.MemoryUsedBytes += v
	case dimMemoryLimit:
		o.MemoryLimitBytes += v
	case dimWalState:
		st, err := pressure.WalStateFromGauge(v)
		if err != nil {
			r.err = fmt.Errorf("%s: %w", d.Key(), err)
			return
		}
		o.WalSaturation = pressure.Worse(o.WalSaturation, st)
	case dimSplits:
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			r.splitsErr = fmt.Errorf("%s: %s is %v", d.Key(), o.Name, v)
			return
		}
		o.SplitsInFlight, o.HasSplits = o.SplitsInFlight+v, true
	}
}

// finish settles what only the whole sum can tell: a memory limit that is
// not a finite number above zero says nothing, so the replica has no
// ceiling; a replica with an unreadable split footprint reports none.
func (r *replica) finish() {
	if l := r.obs.MemoryLimitBytes; !(l > 0) || math.IsInf(l, 0) {
		r.obs.MemoryLimitBytes = 0
	}
	if r.splitsErr != nil {
		r.obs.SplitsInFlight, r.obs.HasSplits = 0, false
	}
}

// worst keeps the larger value; a NaN (0/0 in a ratio query) never hides a
// real one.
func worst(a, b float64) float64 {
	if math.IsNaN(b) {
		return a
	}
	return max(a, b)
}

func (s *Source) replicaName(d dimension, smp *model.Sample) (string, error) {
	name := string(smp.Metric[s.label])
	if name == "" {
		return "", s.errorf(d, "series %s has no %s label: return one series per replica, for example max by (%s) (...), or set replicaLabel", smp.Metric, s.label, s.label)
	}
	return name, nil
}

func (s *Source) noReplicas(n int, missing []pressure.MissingReplica) error {
	var why string
	switch {
	case n > 0:
		names := make([]string, len(missing))
		for i, m := range missing {
			names[i] = fmt.Sprintf("%s (%v)", m.Name, m.Err)
		}
		why = "none of " + fmt.Sprint(n) + " is readable: " + strings.Join(names, ", ")
	case s.queries[dimReplicas] != "":
		why = dimReplicas.Key() + " returned no series"
	default:
		why = "no per-replica query returned a series"
	}
	return fmt.Errorf("prometheus %s: %w: %s", s.server, ErrNoReplicas, why)
}
