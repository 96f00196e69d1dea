package command

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/barometer-scaler/barometer/pkg/sim"
)

// loadTrace reads --trace: a load series, or a queue trace (returned
// second, to be made a series once the model is known).
func loadTrace(o *simulateOptions) (sim.Series, *sim.QueueTrace, error) {
	s, q, err := namedTrace(o.trace)
	if errors.Is(err, errNotNamed) {
		return csvTrace(o.trace, o.event)
	}
	if err != nil {
		return s, nil, err
	}
	if o.set["event"] {
		start, end, _ := parseEvent(o.event)
		s.EventStart, s.EventEnd = start, end
		if q != nil {
			q.EventStart, q.EventEnd = start, end
		}
	}
	return s, q, nil
}

// errNotNamed says a --trace is no trace's name: it is a file.
var errNotNamed = errors.New("not a named trace")

// namedTrace is the trace of one of --trace's names.
func namedTrace(name string) (sim.Series, *sim.QueueTrace, error) {
	seed := func(prefix string) (int64, error) {
		n, err := strconv.ParseInt(strings.TrimPrefix(name, prefix), 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%q (allowed: %sN with N a whole number > 0)", name, prefix)
		}
		return n, nil
	}
	switch {
	case name == "reference":
		return sim.Reference(), nil, nil
	case name == "jump":
		return sim.JumpTest(), nil, nil
	case name == "flash-crowd":
		return sim.FlashCrowd(7), nil, nil
	case name == "slow-ramp":
		return sim.SlowRamp(11), nil, nil
	case name == "queue":
		t := sim.ReferenceQueue()
		return sim.Series{}, &t, nil
	case strings.HasPrefix(name, "family:"):
		f, err := familyTrace(name)
		return f, nil, err
	case strings.HasPrefix(name, "seed:"):
		n, err := seed("seed:")
		if err != nil {
			return sim.Series{}, nil, err
		}
		return sim.Seeded(n), nil, nil
	case strings.HasPrefix(name, "queue:"):
		n, err := seed("queue:")
		if err != nil {
			return sim.Series{}, nil, err
		}
		t := sim.GeneratedQueue(n)
		return sim.Series{}, &t, nil
	}
	return sim.Series{}, nil, errNotNamed
}

// csvTrace reads a CSV file: a load series, or a queue trace; event is
// the window scored as the jump.
func csvTrace(name, event string) (sim.Series, *sim.QueueTrace, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return sim.Series{}, nil, fmt.Errorf("%w (allowed: reference, jump, flash-crowd, slow-ramp, seed:N, queue, queue:N, or a CSV file)", err)
	}
	start, end, _ := parseEvent(event)
	if sim.IsQueueCSV(data) {
		t, err := sim.ReadQueueCSV(bytes.NewReader(data), filepath.Base(name))
		t.EventStart, t.EventEnd = start, end
		return sim.Series{}, &t, err
	}
	s, err := sim.ReadCSV(bytes.NewReader(data), filepath.Base(name))
	s.EventStart, s.EventEnd = start, end
	return s, nil, err
}

func parseEvent(v string) (int, int, error) {
	a, b, ok := strings.Cut(v, ":")
	start, err1 := strconv.Atoi(a)
	end, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || start < 0 || end < start {
		return 0, 0, errors.New("bad event window")
	}
	return start, end, nil
}

// familyTrace reads family:NAME:N, NAME a family's name with its spaces
// as dashes.
func familyTrace(v string) (sim.Series, error) {
	rest := strings.TrimPrefix(v, "family:")
	name, seedText, ok := strings.Cut(rest, ":")
	seed, err := strconv.ParseInt(seedText, 10, 64)
	var names []string
	for _, f := range sim.Families() {
		flagName := strings.ReplaceAll(f.Name, " ", "-")
		names = append(names, flagName)
		if ok && err == nil && seed > 0 && flagName == name {
			return f.Series(seed), nil
		}
	}
	return sim.Series{}, fmt.Errorf("%q (allowed: family:NAME:N with NAME one of %s and N a whole number > 0)", v, strings.Join(names, ", "))
}
