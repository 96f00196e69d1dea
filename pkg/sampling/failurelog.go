package sampling

import (
	"log/slog"
	"time"
)

// failureLogEvery is how often a target that keeps failing the same way
// is logged again: often enough that a reader of the last few minutes of
// logs sees it, rarely enough that a target down for a day writes a few
// hundred lines, not seventeen thousand.
const failureLogEvery = 5 * time.Minute

// failureLog decides which failed samples are worth a line. A target is
// logged when it changes state (it starts failing, it fails another way,
// it recovers), and while it keeps failing the same way at most once per
// failureLogEvery, with the failures since the previous line. Owned by
// the sampling goroutine (under the sampler's mu).
type failureLog struct {
	failing  bool
	shape    string    // the logged error's shape (errorShape)
	since    time.Time // the first failure of this run of failures
	loggedAt time.Time // the last line
	total    int       // failures in this run
	unlogged int       // failures since the last line
}

// observe records one sample's outcome at now (err nil: it succeeded) and
// writes the line it calls for, if any.
func (f *failureLog) observe(logger *slog.Logger, now time.Time, err error) {
	if err == nil {
		if f.failing {
			logger.Info("sample recovered", "failures", f.total, "failingFor", now.Sub(f.since))
		}
		*f = failureLog{}
		return
	}
	f.total++
	f.unlogged++
	shape := errorShape(err)
	switch {
	case !f.failing:
		f.failing, f.since = true, now
		logger.Warn("sample failed; previous signal stands", "err", err)
	case shape != f.shape:
		logger.Warn("sample failed another way; previous signal stands", "err", err, "failures", f.unlogged, "failingFor", now.Sub(f.since))
	case now.Sub(f.loggedAt) >= failureLogEvery:
		logger.Warn("sample still failing; previous signal stands", "err", err, "failures", f.unlogged, "failingFor", now.Sub(f.since))
	default:
		return
	}
	f.shape, f.loggedAt, f.unlogged = shape, now, 0
}

// errorShape is err's text with every run of digits read as one '#': the
// same failure often differs only in numbers (a dialler's ephemeral port,
// an elapsed time, an address), and each of those is not a new way to
// fail.
func errorShape(err error) string {
	text := err.Error()
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	out := make([]byte, 0, len(text))
	for i := range len(text) {
		switch {
		case !digit(text[i]):
			out = append(out, text[i])
		case i == 0 || !digit(text[i-1]):
			out = append(out, '#')
		}
	}
	return string(out)
}
