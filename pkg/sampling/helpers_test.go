package sampling

import (
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/decide"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// t0 is the fake clock's origin.
var t0 = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// pressureDecider is the decider a pressure target samples with (pkg/decide's,
// the pressure computer with its bookkeeping), on the computer's options opts.
func pressureDecider(t testing.TB, opts signal.Options) decide.Decider {
	t.Helper()
	tr := &trigger.Spec{Policy: trigger.PolicySpec{Name: signal.PolicyPressure}, Signal: opts, Interval: 5 * time.Second}
	d, err := decide.NewEngine(decide.Config{}).New("ns/target", tr, nil, t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// responsive is the responsive profile, its surge at 70 % of a replica.
func responsive(t testing.TB) signal.Options {
	t.Helper()
	o, err := signal.ProfileOptions(signal.ProfileResponsive)
	if err != nil {
		t.Fatal(err)
	}
	o.SurgeTarget = 0.7
	return o
}

// recorder keeps what the sampler handed the decider it wraps at the last
// sample: the instant the sample was folded at and the input.
type recorder struct {
	decide.Decider
	at time.Time
	in signal.Input
}

func (r *recorder) Decide(now time.Time, obs pressure.Observation, in signal.Input) (signal.ScalingSignal, error) {
	r.at, r.in = now, in
	return r.Decider.Decide(now, obs, in)
}
