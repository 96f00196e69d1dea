package main

import (
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
)

// report reads what the proxy recorded in one phase.
type report struct {
	o     options
	begin time.Time
	sos   []*scaledObject
	sent  []query
}

func newReport(o options, begin time.Time, sos []*scaledObject, sent []query) *report {
	return &report{o: o, begin: begin, sos: sos, sent: sent}
}

// answered says how the queries were answered: by status class, and
// those the scaler went away from before the answer.
func (r *report) answered() {
	byKind := map[queryKind]int{}
	var ok, server, other, abandoned int
	for _, q := range r.sent {
		byKind[q.kind]++
		switch {
		case q.abandoned:
			abandoned++
		case q.code >= 200 && q.code < 300:
			ok++
		case q.code >= 500:
			server++
		default:
			other++
		}
	}
	var kinds []string
	for k := instant; k <= otherRange; k++ {
		if byKind[k] > 0 {
			kinds = append(kinds, fmt.Sprintf("%d %s", byKind[k], k))
		}
	}
	fmt.Printf("  queries received: %d (%s)\n", len(r.sent), strings.Join(kinds, ", "))
	fmt.Printf("  answered 2xx: %d; 5xx: %d; other: %d; abandoned by the scaler before the answer: %d\n", ok, server, other, abandoned)
	if abandoned > 0 {
		early, byKind := 0, map[queryKind]int{}
		var took []time.Duration
		for _, q := range r.sent {
			if q.abandoned {
				byKind[q.kind]++
				took = append(took, q.took)
				if q.at.Sub(r.begin) < 3*r.o.interval {
					early++
				}
			}
		}
		slices.Sort(took)
		fmt.Printf("  abandoned: %d in the first 3 intervals; %d instant, %d backfill, %d history; after %v to %v\n",
			early, byKind[instant], byKind[backfill], byKind[history], took[0].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	}
	var first10 int
	for _, q := range r.sent {
		if q.at.Sub(r.begin) < 10*time.Second {
			first10++
		}
	}
	fmt.Printf("  in the first 10 s: %d\n", first10)
}

// distinct reports the queries per target per interval.
func (r *report) distinct() {
	r.answered()
	type cell struct {
		workload int
		at       time.Time
	}
	counts := map[cell]int{}
	first := map[int]time.Time{}
	for _, q := range r.sent {
		if q.workload < 0 {
			continue
		}
		at := q.at.Truncate(r.o.interval)
		counts[cell{q.workload, at}]++
		if f, ok := first[q.workload]; !ok || at.Before(f) {
			first[q.workload] = at
		}
	}
	worst, worstFirst := 0, 0
	var where cell
	spread := map[int]int{}
	for c, n := range counts {
		spread[n]++
		if n > worst {
			worst, where = n, c
		}
		if first[c.workload].Equal(c.at) {
			worstFirst = max(worstFirst, n)
		}
	}
	var dist []string
	for _, n := range slices.Sorted(maps.Keys(spread)) {
		dist = append(dist, fmt.Sprintf("%d: %d", n, spread[n]))
	}
	fmt.Printf("  queries per target per interval: at most %d (target w%d, %v after the start); in a target's first interval at most %d\n",
		worst, where.workload, where.at.Sub(r.begin.Truncate(r.o.interval)), worstFirst)
	fmt.Printf("  (target, interval) pairs by queries: %s\n", strings.Join(dist, ", "))
	// The steady state: every interval after the first minute.
	settled := r.begin.Add(time.Minute).Truncate(r.o.interval).Add(r.o.interval)
	end := r.begin.Add(r.o.runFor).Truncate(r.o.interval)
	if intervals := int(end.Sub(settled) / r.o.interval); intervals > 0 {
		n := 0
		for c, k := range counts {
			if !c.at.Before(settled) && c.at.Before(end) {
				n += k
			}
		}
		fmt.Printf("  after the first minute: %.3f queries per target per interval (%d intervals)\n", float64(n)/float64(intervals*r.o.targets), intervals)
	}
}

// identical reports how many times each query was sent for one instant.
func (r *report) identical() {
	r.answered()
	sends := map[string]int{}
	for _, q := range r.sent {
		key := fmt.Sprintf("%s %v %v %v %v %s", q.kind, q.eval, q.start, q.end, q.step, q.text)
		sends[key]++
	}
	byKind := map[queryKind][]int{}
	for key, n := range sends {
		for k := instant; k <= otherRange; k++ {
			if strings.HasPrefix(key, k.String()+" ") {
				byKind[k] = append(byKind[k], n)
			}
		}
	}
	for k := instant; k <= otherRange; k++ {
		ns := byKind[k]
		if len(ns) == 0 {
			continue
		}
		total, more := 0, 0
		for _, n := range ns {
			total += n
			if n > 1 {
				more++
			}
		}
		fmt.Printf("  %s: %d distinct queries (query and instant), %d sends, at most %d of one, %d sent more than once\n",
			k, len(ns), total, slices.Max(ns), more)
	}
}

// warmth reports how long each ScaledObject took to answer a value.
func (r *report) warmth() {
	var took []float64
	never := 0
	for _, so := range r.sos {
		if so.warm.IsZero() {
			never++
			continue
		}
		took = append(took, so.warm.Sub(so.asked).Seconds()/r.o.interval.Seconds())
	}
	within := func(k float64) int {
		n := 0
		for _, t := range took {
			if t <= k {
				n++
			}
		}
		return n
	}
	sort.Float64s(took)
	worst := math.NaN()
	if len(took) > 0 {
		worst = took[len(took)-1]
	}
	fmt.Printf("  warm (GetMetrics answers a value): within 1 interval %d, 2: %d, 3: %d of %d; never %d; the slowest after %.2f intervals\n",
		within(1), within(2), within(3), len(r.sos), never, worst)
}

// history reports the forecast's history reads: the long history is the
// reads a day long, eight for a whole history.
func (r *report) history() {
	type window struct {
		workload   int
		start, end float64
	}
	type anchor struct {
		workload int
		phase    float64 // the start within the day: one long history's reads share it
	}
	sent, ok, failed := 0, 0, 0
	read := map[window]bool{}
	lastFail := map[window]time.Time{}
	lastOK := map[window]time.Time{}
	long := map[anchor]map[float64]time.Time{}
	for _, q := range r.sent {
		if q.kind != history {
			continue
		}
		sent++
		w := window{q.workload, q.start, q.end}
		if q.abandoned || q.code != http.StatusOK {
			failed++
			lastFail[w] = q.at
			continue
		}
		ok++
		read[w], lastOK[w] = true, q.at
		if q.end-q.start > 2*3600 {
			a := anchor{q.workload, math.Mod(q.start, 86400)}
			if long[a] == nil {
				long[a] = map[float64]time.Time{}
			}
			long[a][q.start] = q.at
		}
	}
	unretried := 0
	for w, at := range lastFail {
		if !read[w] || lastOK[w].Before(at) {
			unretried++
		}
	}
	complete := map[int]time.Duration{}
	for a, starts := range long {
		if len(starts) < 8 {
			continue
		}
		var last time.Time
		for _, at := range starts {
			if at.After(last) {
				last = at
			}
		}
		if d, seen := complete[a.workload]; !seen || last.Sub(r.begin) < d {
			complete[a.workload] = last.Sub(r.begin)
		}
	}
	var latest time.Duration
	for _, d := range complete {
		latest = max(latest, d)
	}
	fmt.Printf("  history reads: %d sent, %d answered, %d failed or abandoned; windows whose last read failed: %d\n", sent, ok, failed, unretried)
	fmt.Printf("  targets whose long history (8 days) was read whole: %d, the last %v after the start\n", len(complete), latest.Round(time.Second))
}
