package ledger

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
)

// t0 is the fake clock's origin; at(s) is s seconds later.
var t0 = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// wantField asserts that err is an *policy.OptionError naming field.
func wantField(t *testing.T, err error, field string) {
	t.Helper()
	var oe *policy.OptionError
	if !errors.As(err, &oe) {
		t.Fatalf("err = %v, want an *OptionError for %s", err, field)
	}
	if oe.Field != field || oe.Allowed == "" {
		t.Fatalf("err names field %q (allowed %q), want %q", oe.Field, oe.Allowed, field)
	}
}
