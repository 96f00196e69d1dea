package sampling

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// line is one log record, as the recording handler kept it.
type line struct {
	at       time.Time
	level    slog.Level
	msg      string
	err      string
	failures int64
}

// lineRecorder is a slog handler that keeps every record.
type lineRecorder struct {
	mu    sync.Mutex
	lines []line
}

func (r *lineRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *lineRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *lineRecorder) WithGroup(string) slog.Handler            { return r }
func (r *lineRecorder) Handle(_ context.Context, rec slog.Record) error {
	l := line{at: rec.Time, level: rec.Level, msg: rec.Message}
	rec.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "err":
			l.err = a.Value.String()
		case "failures":
			l.failures = a.Value.Int64()
		}
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, l)
	return nil
}

// A target that fails for twenty minutes is logged when it starts failing,
// when it fails another way and when it recovers, and every five minutes
// in between with the count of failures since the last line: a handful of
// lines, not one per sample. A dialler's changing port is not another way
// to fail.
func TestFailingTargetIsLoggedPerStateChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 5 * time.Second
		start := time.Now()
		port := 40000
		src := pressure.SourceFunc(func(context.Context) (pressure.Observation, error) {
			port++
			switch at := time.Since(start); {
			case at < time.Minute, at >= 25*time.Minute && at < 26*time.Minute:
				return pressure.Observation{Replicas: []pressure.ReplicaObservation{{Name: "a", CPUUtilisation: 0.5}}}, nil
			case at < 21*time.Minute:
				return pressure.Observation{}, fmt.Errorf("dial tcp 127.0.0.1:%d->10.0.0.7:9090: connection refused", port)
			}
			return pressure.Observation{}, errors.New("replicasQuery returned no series")
		})
		rec := &lineRecorder{}
		s := NewSampler(SamplerConfig{Source: src, Decider: pressureDecider(t, signal.DefaultOptions()), Interval: interval, Logger: slog.New(rec)})
		ctx, cancel := context.WithCancel(context.Background())
		go s.Run(ctx)
		time.Sleep(27*time.Minute - time.Millisecond)
		synctest.Wait()
		cancel()
		synctest.Wait()

		if snap := s.Load(); snap.Failures != 20*12+4*12+12 {
			t.Errorf("%d failures counted, want %d: the snapshot still counts every one", snap.Failures, 20*12+4*12+12)
		}
		type want struct {
			after    time.Duration
			level    slog.Level
			msg      string
			failures int64
		}
		wants := []want{
			{time.Minute, slog.LevelWarn, "sample failed; previous signal stands", 0},
			{6 * time.Minute, slog.LevelWarn, "sample still failing; previous signal stands", 60},
			{11 * time.Minute, slog.LevelWarn, "sample still failing; previous signal stands", 60},
			{16 * time.Minute, slog.LevelWarn, "sample still failing; previous signal stands", 60},
			{21 * time.Minute, slog.LevelWarn, "sample failed another way; previous signal stands", 60},
			{25 * time.Minute, slog.LevelInfo, "sample recovered", 20*12 + 4*12},
			{26 * time.Minute, slog.LevelWarn, "sample failed; previous signal stands", 0},
		}
		var got []line
		for _, l := range rec.lines {
			if l.level >= slog.LevelInfo {
				got = append(got, l)
			}
		}
		if len(got) != len(wants) {
			for _, l := range got {
				t.Logf("%v %v %q failures=%d err=%s", l.at.Sub(start), l.level, l.msg, l.failures, l.err)
			}
			t.Fatalf("%d lines, want %d", len(got), len(wants))
		}
		for i, w := range wants {
			if g := got[i]; g.at.Sub(start) != w.after || g.level != w.level || g.msg != w.msg || g.failures != w.failures {
				t.Errorf("line %d: %v %v %q failures=%d; want %v %v %q failures=%d", i, g.at.Sub(start), g.level, g.msg, g.failures, w.after, w.level, w.msg, w.failures)
			}
		}
		if got[4].err != "replicasQuery returned no series" {
			t.Errorf("the other way's line says %q", got[4].err)
		}
	})
}
