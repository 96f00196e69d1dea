package scrape

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape/body"
)

// result is one replica's outcome in one sample.
type result struct {
	name   string
	pod    string
	at     time.Time // when the scrape started: the CPU counter's timestamp
	sample body.Sample
	err    error
}

// cpuMark is a replica's CPU counter at one scrape.
type cpuMark struct {
	seconds float64
	at      time.Time
}

// replicaState is what the source remembers about a replica between
// samples.
type replicaState struct {
	cpu      cpuMark
	hasCPU   bool
	rate     float64 // the CPU utilisation last read from two marks
	hasRate  bool    // the last mark had one before it: a rate was read
	errors   uint64
	targeted time.Time // the last sample that tried to read it
	scraped  time.Time // when the scrape it last read started
}

// fold turns a sample's results into an Observation and updates the
// per-replica state. ok results become replicas; failed ones become missing.
// unrated: some answered replica read a CPU counter and none had a rate.
// It is called with the source's state lock held.
func (s *Source) fold(results []result, missing []pressure.MissingReplica, at time.Time) (obs pressure.Observation, unrated bool) {
	obs = pressure.Observation{ObservedAt: at, Missing: missing}
	counters, rated := 0, 0
	var splitErrs []error
	var answered []result
	for _, m := range missing {
		s.state(m.Name, at).errors++
	}
	for _, r := range results {
		st := s.state(r.name, at)
		st.scraped = r.at
		if r.err != nil {
			st.errors++
			obs.Missing = append(obs.Missing, pressure.MissingReplica{Name: r.name, Err: r.err})
			continue
		}
		obs.Replicas = append(obs.Replicas, s.replica(r, st))
		if st.hasCPU {
			counters++
			if st.hasRate {
				rated++
			}
		}
		// The sample is as old as its oldest answer.
		if obs.MeasuredAt.IsZero() || r.at.Before(obs.MeasuredAt) {
			obs.MeasuredAt = r.at
		}
		if r.sample.SplitsErr != nil {
			splitErrs = append(splitErrs, fmt.Errorf("%s: %w", r.name, r.sample.SplitsErr))
		}
		answered = append(answered, r)
	}
	obs.SplitsErr = errors.Join(splitErrs...)
	slices.SortFunc(answered, func(a, b result) int { return strings.Compare(a.name, b.name) })
	obs.Trees = mergeTrees(answered)
	obs.Queue = s.foldQueue(answered, at)
	slices.SortFunc(obs.Replicas, func(a, b pressure.ReplicaObservation) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(obs.Missing, func(a, b pressure.MissingReplica) int { return strings.Compare(a.Name, b.Name) })
	s.prune(at)
	return obs, counters > 0 && rated == 0
}

func (s *Source) state(name string, at time.Time) *replicaState {
	st := s.replicas[name]
	if st == nil {
		st = &replicaState{}
		s.replicas[name] = st
	}
	st.targeted = at
	return st
}

// prune forgets replicas no sample has tried to read for stateTTL: with DNS
// targets, pod addresses come and go, and their state must not pile up.
func (s *Source) prune(at time.Time) {
	for name, st := range s.replicas {
		if at.Sub(st.targeted) > stateTTL {
			delete(s.replicas, name)
		}
	}
}

// stateTTL is how long an untargeted replica's CPU mark and error count are
// kept.
const stateTTL = 10 * time.Minute

// minRateWindow is the shortest span a CPU rate is taken over. Over less,
// the reads' latencies are a large part of the span: a target's first
// sample taken just before an aligned tick left 34 ms to the next read,
// which read a pool at 0.6 as 0.84. A read that comes sooner after the
// replica's last one reports the last rate and keeps the older mark, so
// the next rate spans both. The first sample's second read comes
// Options.PrimeDelay after its first, so the window is never longer than
// that: the second read always has its rate.
const minRateWindow = DefaultPrimeDelay

// rateWindow is minRateWindow, or the prime delay where that is shorter.
func (s *Source) rateWindow() time.Duration {
	if p := s.opts.PrimeDelay; p > 0 && p < minRateWindow {
		return p
	}
	return minRateWindow
}

// replica reads one answered replica. CPU utilisation is the counter's rate
// since this replica's previous answer over its CPU limit (or since an
// earlier one, rateWindow). On first sight (or after a counter reset)
// there is no rate, so CPU reads 0 and the resource dimension is memory
// only for that sample; this is logged, never made up.
func (s *Source) replica(r result, st *replicaState) pressure.ReplicaObservation {
	x := r.sample
	out := pressure.ReplicaObservation{
		Name:          r.name,
		Pod:           r.pod,
		WorkingSet:    x.Activations.V,
		HasWorkingSet: x.Activations.OK,
		WalSaturation: x.WAL,
	}
	// Without a limit the replica has no ceiling: MemoryLimitBytes stays 0
	// and the resource dimension is CPU only.
	out.MemoryUsedBytes, out.MemoryLimitBytes = x.Memory.V, x.MemoryLimit.V
	if x.Splits.OK {
		out.SplitsInFlight, out.HasSplits = x.Splits.V, true
	}
	limit := s.opts.CPULimitCores
	if x.CPULimit.OK {
		limit = x.CPULimit.V
	}
	cpu := x.CPUSeconds
	if !cpu.OK || math.IsNaN(cpu.V) || math.IsInf(cpu.V, 0) {
		st.hasCPU, st.hasRate = false, false
		return out
	}
	prev, had := st.cpu, st.hasCPU
	if had && cpu.V >= prev.seconds && r.at.Sub(prev.at) < s.rateWindow() {
		if st.hasRate {
			out.CPUUtilisation = st.rate
		}
		return out
	}
	st.cpu, st.hasCPU = cpuMark{seconds: cpu.V, at: r.at}, true
	st.rate, st.hasRate = 0, had && cpu.V >= prev.seconds
	dt := r.at.Sub(prev.at).Seconds()
	switch {
	case !had:
		s.log.Debug("first scrape of replica: no CPU rate yet, resource is memory only", "replica", r.name)
	case cpu.V < prev.seconds:
		s.log.Debug("CPU counter reset: no CPU rate this sample", "replica", r.name)
	case dt > 0 && limit > 0:
		out.CPUUtilisation = (cpu.V - prev.seconds) / dt / limit
		st.rate = out.CPUUtilisation
	}
	return out
}

// foldQueue sums the answered replicas' queue series, in name order so that
// float sums come out the same as the prometheus source's. Counters of
// replicas that did not answer are held by s.queue (exposition.CounterSum):
// a failed scrape, or a pod scaled in, must not read as a counter restart.
// Gauges are only the answered replicas': a stale backlog would hold
// replicas the work no longer needs.
func (s *Source) foldQueue(answered []result, at time.Time) *pressure.QueueObservation {
	var f exposition.QueueFold
	for _, r := range answered {
		r.sample.FeedQueue(&f, r.name)
	}
	return f.Observation(&s.queue, at)
}

// mergeTrees folds the replicas' storage series by exposition.TreeFold's
// rules, as the prometheus source folds them. Several replicas may report
// the same tree (each sees the shared WAL). A report a replica did not make
// reads 0, which adds nothing. nil when no replica reported storage.
func mergeTrees(answered []result) []pressure.TreeObservation {
	var f exposition.TreeFold
	for _, r := range answered {
		r.sample.FeedTrees(&f)
	}
	return f.Trees()
}
