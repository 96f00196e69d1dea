package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ReadCSV reads a load trace: one load per line, or "turn,load" with turns
// counting up from 0. Blank lines and lines starting with # are skipped; the
// first other line may be a header (a line that is not numbers).
func ReadCSV(r io.Reader, name string) (Series, error) {
	s := Series{Name: name}
	err := readRows(r, name, func(fields int) error {
		if fields > 2 {
			return fmt.Errorf("%d fields (allowed: load, or turn,load)", fields)
		}
		return nil
	}, func(values []float64) error {
		if len(values) == 2 && values[0] != float64(len(s.Load)) {
			return fmt.Errorf("turn %v out of order (want %d)", values[0], len(s.Load))
		}
		load := values[len(values)-1]
		if !finite(load) || load < 0 {
			return fmt.Errorf("load %v (allowed: a finite number >= 0)", load)
		}
		s.Load = append(s.Load, load)
		return nil
	})
	if err != nil {
		return Series{}, err
	}
	if len(s.Load) == 0 {
		return Series{}, fmt.Errorf("%s: no load values", name)
	}
	return s, nil
}

// ReadQueueCSV reads a queue trace: "turn,arrivals,serviceSeconds" per
// line, turns counting up from 0, arrivals the items arriving in the turn
// and serviceSeconds their mean service time. Blank lines, # comments and a
// header line are skipped as in ReadCSV.
func ReadQueueCSV(r io.Reader, name string) (QueueTrace, error) {
	q := QueueTrace{Name: name}
	err := readRows(r, name, func(fields int) error {
		if fields != 3 {
			return fmt.Errorf("%d fields (allowed: turn,arrivals,serviceSeconds)", fields)
		}
		return nil
	}, func(v []float64) error {
		switch {
		case v[0] != float64(len(q.Arrivals)):
			return fmt.Errorf("turn %v out of order (want %d)", v[0], len(q.Arrivals))
		case !finite(v[1]) || v[1] < 0:
			return fmt.Errorf("arrivals %v (allowed: a finite number >= 0)", v[1])
		case !finite(v[2]) || v[2] <= 0:
			return fmt.Errorf("serviceSeconds %v (allowed: a finite number > 0)", v[2])
		}
		q.Arrivals, q.Service = append(q.Arrivals, v[1]), append(q.Service, v[2])
		return nil
	})
	if err != nil {
		return QueueTrace{}, err
	}
	if len(q.Arrivals) == 0 {
		return QueueTrace{}, fmt.Errorf("%s: no rows", name)
	}
	return q, nil
}

// IsQueueCSV reports whether a trace's first line that is neither blank nor
// a comment (a header or data) has the three fields of a queue trace.
func IsQueueCSV(data []byte) bool {
	for line := range strings.SplitSeq(string(data), "\n") {
		text := strings.TrimSpace(line)
		if text != "" && !strings.HasPrefix(text, "#") {
			return len(strings.Split(text, ",")) == 3
		}
	}
	return false
}

// readRows calls width with each line's field count, then row with its
// values; the first line that is not numbers is taken for a header.
func readRows(r io.Reader, name string, width func(int) error, row func([]float64) error) error {
	sc := bufio.NewScanner(r)
	first := true
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Split(text, ",")
		if err := width(len(fields)); err != nil {
			return fmt.Errorf("%s line %d: %w", name, line, err)
		}
		values, err := parseFields(fields)
		if err != nil && first {
			first = false // a header
			continue
		}
		first = false
		if err == nil {
			err = row(values)
		}
		if err != nil {
			return fmt.Errorf("%s line %d: %w", name, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func parseFields(fields []string) ([]float64, error) {
	out := make([]float64, len(fields))
	for i, f := range fields {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", strings.TrimSpace(f))
		}
		out[i] = v
	}
	return out, nil
}
