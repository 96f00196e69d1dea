package record

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"testing"
	"time"
)

func pts(demand, ready []int) Run {
	var r Run
	for i := range demand {
		r.Points = append(r.Points, Point{T: time.Duration(i) * time.Second, Demand: demand[i], Ready: ready[i], Desired: ready[i], Signal: math.NaN()})
	}
	return r
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestMetricsMatchTheSPECDefinitions(t *testing.T) {
	// Five one-second steps (the last point only closes the fourth):
	// demand 2 throughout; supply 1, 2, 4, 2, then 2.
	r := pts([]int{2, 2, 2, 2, 2}, []int{1, 2, 4, 2, 2})
	m := r.Metrics()
	if !near(m.Seconds, 4) {
		t.Fatalf("seconds %g", m.Seconds)
	}
	// Under: step 0, (2-1)/2 for 1 s of 4. Over: step 2, (4-2)/2 for 1 s.
	if !near(m.UnderAccuracy, 100*0.5/4) || !near(m.OverAccuracy, 100*1.0/4) {
		t.Errorf("accuracy under %g over %g", m.UnderAccuracy, m.OverAccuracy)
	}
	if !near(m.UnderTimeshare, 25) || !near(m.OverTimeshare, 25) {
		t.Errorf("timeshare under %g over %g", m.UnderTimeshare, m.OverTimeshare)
	}
	// Supply moved in 3 of 4 steps while demand stood still.
	if !near(m.Instability, 75) {
		t.Errorf("instability %g", m.Instability)
	}
	// 3 adaptations, 0 demand changes, over 4 s = 1/15 min.
	if !near(m.Jitter, 3/(4.0/60)) {
		t.Errorf("jitter %g", m.Jitter)
	}
	if m.Changes != 3 || m.Oscillations != 1 || m.Peak != 4 {
		t.Errorf("changes %d oscillations %d peak %d", m.Changes, m.Oscillations, m.Peak)
	}
	if !near(m.ReplicaSeconds, 9) || !near(m.ExcessSeconds, 2) || !near(m.ShortfallSeconds, 1) {
		t.Errorf("replica-seconds %g excess %g shortfall %g", m.ReplicaSeconds, m.ExcessSeconds, m.ShortfallSeconds)
	}
}

func TestMetricsTrackingDemandIsPerfect(t *testing.T) {
	r := pts([]int{1, 3, 3, 1}, []int{1, 3, 3, 1})
	m := r.Metrics()
	if m.UnderAccuracy != 0 || m.OverAccuracy != 0 || m.Instability != 0 || m.Jitter != 0 {
		t.Errorf("%+v", m)
	}
}

func TestSVGIsWellFormed(t *testing.T) {
	r := pts([]int{1, 5, 5, 1}, []int{1, 2, 5, 1})
	r.Events = []Event{{T: time.Second, Label: "load <300> & more"}}
	var b bytes.Buffer
	if err := r.SVG(&b, `title "quoted" & <tagged>`); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(&b)
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
	}
}

func TestPointJSONWritesNaNAsNull(t *testing.T) {
	data, err := Point{T: 1500 * time.Millisecond, Signal: math.NaN()}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"t":1.5,"desired":0,"ready":0,"demand":0,"load":0,"signal":null}`; string(data) != want {
		t.Errorf("got %s, want %s", data, want)
	}
}

func TestWindowIntegratesExactlyTheSpan(t *testing.T) {
	// Supply 1, 2, 4, 2, 2 at 0..4 s; the window [1.5 s, 3.5 s] holds 2 for
	// 0.5 s, 4 for 1 s and 2 for 0.5 s.
	w := pts([]int{2, 2, 2, 2, 2}, []int{1, 2, 4, 2, 2}).Window(1500*time.Millisecond, 3500*time.Millisecond)
	m := w.Metrics()
	if !near(m.Seconds, 2) || !near(m.ReplicaSeconds, 6) || !near(m.ExcessSeconds, 2) || m.ShortfallSeconds != 0 {
		t.Errorf("seconds %g replica-seconds %g excess %g shortfall %g", m.Seconds, m.ReplicaSeconds, m.ExcessSeconds, m.ShortfallSeconds)
	}
	if first, last := w.Points[0], w.Points[len(w.Points)-1]; first.T != 1500*time.Millisecond || last.T != 3500*time.Millisecond {
		t.Errorf("window from %s to %s", first.T, last.T)
	}
}

func TestWindowPastTheEndClosesAtTheLastPoint(t *testing.T) {
	m := pts([]int{1, 1, 1}, []int{1, 3, 3}).Window(500*time.Millisecond, time.Minute).Metrics()
	if !near(m.Seconds, 1.5) || !near(m.ReplicaSeconds, 0.5+3) {
		t.Errorf("seconds %g replica-seconds %g", m.Seconds, m.ReplicaSeconds)
	}
}
