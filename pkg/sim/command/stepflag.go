package command

import (
	"errors"
	"strconv"
	"time"
)

// stepFlag is --step, which the simulator had as the naive rule's step
// limit before the backtest named the range's step: a whole number sets
// the limit (as --step-limit), a duration the range's resolution.
type stepFlag struct {
	limit   *int
	step    *time.Duration
	isLimit *bool
}

func (f stepFlag) String() string {
	if f.step == nil {
		return ""
	}
	return f.step.String()
}

func (f stepFlag) Set(v string) error {
	if n, err := strconv.Atoi(v); err == nil {
		*f.limit, *f.isLimit = n, true
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return errors.New("a whole number (the naive step limit) or a duration (the range's step)")
	}
	*f.step, *f.isLimit = d, false
	return nil
}
