package sim

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// fixedAt is a controller that always asks for n replicas and records
// what it saw.
type fixedAt struct {
	n    int
	seen []Reading
}

func (f *fixedAt) Decide(s State) int {
	f.seen = append(f.seen, s.Reading)
	return f.n
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

// TestLoadSeriesSample: on a load series the occupancy is the metric-delay
// model's formula to the bit, the turn's excess is sampled as backlog and then
// shed, and the counters count requests.
func TestLoadSeriesSample(t *testing.T) {
	m := ReferenceModel()
	s := Series{Name: "two turns", Load: []float64{1000, 3000}}
	c := &fixedAt{n: 2}
	res := Run(Config{Model: m}, s, c)
	capacity := 2 * m.Saturation * 15 // requests two replicas serve in a turn
	tests := []struct {
		turn                           int
		occupancy, arrivals, runs      float64
		backlog, busy, offered, runSec float64
	}{
		{0, 1000 / (2 * m.Saturation), 15000, 15000, 0, 1000 / m.Saturation, 1000, 15000 / m.Saturation},
		{1, 3000 / (2 * m.Saturation), 60000, 15000 + capacity, 45000 - capacity, 2, 3000, (15000 + capacity) / m.Saturation},
	}
	for _, tt := range tests {
		r := c.seen[tt.turn]
		q := r.Queue
		if r.Occupancy != tt.occupancy {
			t.Errorf("turn %d: occupancy %v, want exactly %v", tt.turn, r.Occupancy, tt.occupancy)
		}
		if !near(q.Arrivals, tt.arrivals) || !near(q.Runs, tt.runs) || !near(q.Backlog, tt.backlog) ||
			!near(q.Busy, tt.busy) || q.Offered != tt.offered || !near(q.RunSeconds, tt.runSec) {
			t.Errorf("turn %d: sample %+v, want arrivals %v runs %v backlog %v busy %v offered %v run seconds %v",
				tt.turn, q, tt.arrivals, tt.runs, tt.backlog, tt.busy, tt.offered, tt.runSec)
		}
		if got := res.Steps[tt.turn].Backlog; got != 0 {
			t.Errorf("turn %d: backlog after the turn %v, want 0 (shed)", tt.turn, got)
		}
	}
	if o := res.Score; o.BacklogTurns != 0 || o.MeanWait != 0 || o.MaxWait != 0 {
		t.Errorf("queue score %+v, want zeros on a load series", o)
	}
}

// TestQueueTraceCarries: a queue trace's unserved work waits, first in,
// first out; the next sample counts it as offered load; waits are whole
// turns.
func TestQueueTraceCarries(t *testing.T) {
	m := Model{Saturation: 1, Target: 0.5, MinReplicas: 1, MaxReplicas: 4, InitialReplicas: 1}
	turn := 10 * time.Second
	q := QueueTrace{Name: "q", Arrivals: []float64{10, 2, 0}, Service: []float64{2, 1, 1}}
	s := q.Series(m, turn)
	if want := []float64{2, 0.2, 0}; !slices.Equal(s.Load, want) {
		t.Fatalf("load %v, want %v", s.Load, want)
	}
	c := &fixedAt{n: 1}
	res := Run(Config{Model: m, Turn: turn}, s, c)
	// Turn 0: 20 s of work, 10 s served (5 items), 5 wait. Turn 1: the 5
	// (10 s) come first and fill the turn; the 2 new items wait. Turn 2:
	// the 2 are served.
	if got := []float64{res.Steps[0].Backlog, res.Steps[1].Backlog, res.Steps[2].Backlog}; !slices.Equal(got, []float64{5, 2, 0}) {
		t.Errorf("backlog after each turn %v, want [5 2 0]", got)
	}
	if got := c.seen[1].Queue.Offered; got != 1.2 {
		t.Errorf("turn 1 offered %v, want 1.2 (0.2 arriving + 10 s carried over a 10 s turn)", got)
	}
	if got := c.seen[1].Occupancy; !near(got, 1.2) {
		t.Errorf("turn 1 occupancy %v, want 1.2", got)
	}
	o := res.Score
	// 5 items wait 0 turns, 5 wait 1, 2 wait 1: 7 item-turns over 12 items.
	if o.BacklogTurns != 2 || o.PeakBacklog != 5 || !near(o.MeanWait, 70.0/12) || o.MaxWait != 10 {
		t.Errorf("score backlog turns %d peak %v mean wait %v max wait %v; want 2, 5, %v, 10", o.BacklogTurns, o.PeakBacklog, o.MeanWait, o.MaxWait, 70.0/12)
	}
}

// TestSampleIsTakenBeforeTheDecision: the sample is served by the replicas
// ready before the decision, the turn itself by those ready after it.
func TestSampleIsTakenBeforeTheDecision(t *testing.T) {
	m := Model{Saturation: 1, Target: 1, MinReplicas: 1, MaxReplicas: 4, InitialReplicas: 1}
	q := QueueTrace{Name: "q", Arrivals: []float64{30}, Service: []float64{1}}
	c := &fixedAt{n: 3}
	res := Run(Config{Model: m, Turn: 10 * time.Second}, q.Series(m, 10*time.Second), c)
	if got := c.seen[0].Queue; got.Backlog != 20 || got.Busy != 1 || got.Runs != 10 {
		t.Errorf("sample %+v, want backlog 20, busy 1, runs 10 (one replica)", got)
	}
	if got := res.Steps[0].Backlog; got != 0 {
		t.Errorf("backlog after the turn %v, want 0 (three replicas served it)", got)
	}
	if got := res.Score.MaxWait; got != 0 {
		t.Errorf("max wait %v, want 0", got)
	}
}

// TestItemsStillWaitingCountInMaxWait: an item never served waited at
// least until the run ended.
func TestItemsStillWaitingCountInMaxWait(t *testing.T) {
	m := Model{Saturation: 1, Target: 1, MinReplicas: 1, MaxReplicas: 1, InitialReplicas: 1}
	q := QueueTrace{Name: "q", Arrivals: []float64{40, 0}, Service: []float64{1, 1}}
	res := Run(Config{Model: m, Turn: 10 * time.Second}, q.Series(m, 10*time.Second), &fixedAt{n: 1})
	if o := res.Score; o.MaxWait != 20 || res.Steps[1].Backlog != 20 {
		t.Errorf("max wait %v, backlog %v; want 20 s (2 turns), 20 items", o.MaxWait, res.Steps[1].Backlog)
	}
}

func TestGeneratedQueue(t *testing.T) {
	w := ReferenceQueueWave(QueueSeed)
	q := ReferenceQueue()
	if q.Name != "queue trace (seed 6)" || len(q.Arrivals) != w.Turns || len(q.Service) != w.Turns {
		t.Fatalf("trace %q: %d arrivals, %d service times", q.Name, len(q.Arrivals), len(q.Service))
	}
	if again := ReferenceQueue(); !slices.Equal(again.Arrivals, q.Arrivals) || !slices.Equal(again.Service, q.Service) {
		t.Error("the generator is not deterministic")
	}
	for turn := range q.Arrivals {
		a, sv := q.Arrivals[turn], q.Service[turn]
		slow := turn >= w.SlowStart && turn < w.SlowEnd
		lo, hi := w.Service*(1-w.ServiceNoise), w.Service*(1+w.ServiceNoise)
		if slow {
			lo, hi = lo*w.Slow, hi*w.Slow
		}
		if a != math.Round(a) || a < 0 || sv < lo-0.001 || sv > hi+0.001 {
			t.Errorf("turn %d: %v items at %v s (service band %v..%v)", turn, a, sv, lo, hi)
		}
	}
	if q.Arrivals[w.BatchTurn] < w.Batch {
		t.Errorf("batch turn has %v items, want at least %v", q.Arrivals[w.BatchTurn], w.Batch)
	}
	if q.EventStart != w.SlowStart || q.EventEnd != w.SlowEnd {
		t.Errorf("event window %d..%d, want the slow window", q.EventStart, q.EventEnd)
	}
	if other := GeneratedQueue(7); slices.Equal(other.Arrivals, q.Arrivals) {
		t.Error("another seed gives the same arrivals")
	}
}

func TestReadQueueCSV(t *testing.T) {
	tests := []struct {
		name, in          string
		arrivals, service []float64
		err               string
	}{
		{"header and comment", "turn,arrivals,serviceSeconds\n# c\n0,10,2\n1, 0, 1.5\n", []float64{10, 0}, []float64{2, 1.5}, ""},
		{"turn out of order", "0,1,1\n2,1,1\n", nil, nil, "line 2: turn 2 out of order (want 1)"},
		{"negative arrivals", "0,-1,1\n", nil, nil, "line 1: arrivals -1 (allowed: a finite number >= 0)"},
		{"zero service", "0,1,0\n", nil, nil, "line 1: serviceSeconds 0 (allowed: a finite number > 0)"},
		{"NaN service", "0,1,1\n1,1,NaN\n", nil, nil, "line 2: serviceSeconds NaN"},
		{"two fields", "0,1,1\n1,1\n", nil, nil, "line 2: 2 fields (allowed: turn,arrivals,serviceSeconds)"},
		{"not a number", "0,1,1\n1,x,1\n", nil, nil, `line 2: "x" is not a number`},
		{"empty", "turn,arrivals,serviceSeconds\n", nil, nil, "q.csv: no rows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := ReadQueueCSV(strings.NewReader(tt.in), "q.csv")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(q.Arrivals, tt.arrivals) || !slices.Equal(q.Service, tt.service) || q.Name != "q.csv" {
				t.Errorf("got %v %v %q", q.Arrivals, q.Service, q.Name)
			}
		})
	}
}

func TestIsQueueCSV(t *testing.T) {
	for in, want := range map[string]bool{
		"# a comment\n\nturn,arrivals,serviceSeconds\n0,1,1\n": true,
		"0,1,2\n":       true,
		"turn,load\n":   false,
		"100\n200\n":    false,
		"# only a note": false,
	} {
		if got := IsQueueCSV([]byte(in)); got != want {
			t.Errorf("IsQueueCSV(%q) = %v, want %v", in, got, want)
		}
	}
}
