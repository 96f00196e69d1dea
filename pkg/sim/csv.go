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
	sc := bufio.NewScanner(r)
	first := true
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Split(text, ",")
		if len(fields) > 2 {
			return Series{}, fmt.Errorf("%s line %d: %d fields (allowed: load, or turn,load)", name, line, len(fields))
		}
		values, err := parseFields(fields)
		if err != nil && first {
			first = false // a header
			continue
		}
		first = false
		if err != nil {
			return Series{}, fmt.Errorf("%s line %d: %w", name, line, err)
		}
		if len(values) == 2 && values[0] != float64(len(s.Load)) {
			return Series{}, fmt.Errorf("%s line %d: turn %v out of order (want %d)", name, line, values[0], len(s.Load))
		}
		load := values[len(values)-1]
		if math.IsNaN(load) || math.IsInf(load, 0) || load < 0 {
			return Series{}, fmt.Errorf("%s line %d: load %v (allowed: a finite number >= 0)", name, line, load)
		}
		s.Load = append(s.Load, load)
	}
	if err := sc.Err(); err != nil {
		return Series{}, fmt.Errorf("%s: %w", name, err)
	}
	if len(s.Load) == 0 {
		return Series{}, fmt.Errorf("%s: no load values", name)
	}
	return s, nil
}

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
