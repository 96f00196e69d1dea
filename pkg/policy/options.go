package policy

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// OptionError is an invalid option: it names the options struct's field and
// says what is allowed, so a caller can map Field back to its metadata key.
type OptionError struct {
	Field   string
	Value   string
	Allowed string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("policy option %s: invalid value %s: %s", e.Field, e.Value, e.Allowed)
}

// The check helpers below return nil or an *OptionError for one field, so a
// Validate method reads as a list of fields and their ranges.

func checkInt(field string, v, lo int) error {
	if v < lo {
		return &OptionError{Field: field, Value: itoa(v), Allowed: fmt.Sprintf("an integer >= %d", lo)}
	}
	return nil
}

// checkFloat accepts a finite v in [lo, hi], or (lo, hi] when openLo.
func checkFloat(field string, v, lo, hi float64, openLo bool) error {
	ok := !math.IsNaN(v) && !math.IsInf(v, 0) && v <= hi && (v > lo || (!openLo && v == lo))
	if ok {
		return nil
	}
	left := "["
	if openLo {
		left = "("
	}
	right := strconv.FormatFloat(hi, 'g', -1, 64) + "]"
	if math.IsInf(hi, 1) {
		right = "inf)"
	}
	return &OptionError{
		Field:   field,
		Value:   strconv.FormatFloat(v, 'g', -1, 64),
		Allowed: "a number in " + left + strconv.FormatFloat(lo, 'g', -1, 64) + ", " + right,
	}
}

// checkDuration accepts d >= 0, or d > 0 when positive.
func checkDuration(field string, d time.Duration, positive bool) error {
	if d > 0 || (!positive && d == 0) {
		return nil
	}
	allowed := "a duration >= 0"
	if positive {
		allowed = "a duration > 0"
	}
	return &OptionError{Field: field, Value: d.String(), Allowed: allowed}
}

// firstError returns the first non-nil error: Validate reports one field at
// a time, the way a metadata parser reports one key.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func itoa(n int) string { return strconv.Itoa(n) }
