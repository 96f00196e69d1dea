package ledger

import (
	"math"
	"strconv"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
)

// CostOptions price a target's replicas.
type CostOptions struct {
	// PerReplicaSecond is the cost of one replica for one second (the
	// costPerReplicaSecond key); 0 counts replica-seconds only.
	PerReplicaSecond float64
}

// Validate returns an *policy.OptionError naming the first invalid field.
func (o CostOptions) Validate() error {
	if v := o.PerReplicaSecond; !finite(v) || v < 0 {
		return &policy.OptionError{Field: "PerReplicaSecond", Value: strconv.FormatFloat(v, 'g', -1, 64), Allowed: "a number in [0, inf)"}
	}
	return nil
}

// Cost is what a target's replicas have used since the scaler started
// tracking it. The zero value has seen nothing. It is a value: Accrue
// returns a new one.
type Cost struct {
	ReplicaSeconds float64 `json:"replicaSeconds"`
	Cost           float64 `json:"cost"`

	replicas int
	at       time.Time
	seen     bool
}

// Accrue integrates the replica count over the time since the last call and
// records replicas as the count from now on. The count seen at one
// evaluation is taken to hold until the next (replica counts change in
// steps, and the step's exact time is unknown), so the first call only sets
// the baseline. Each interval is priced at the options in force when it
// ends, so a price change never reprices the past. A clock that went back
// accrues nothing and keeps the later time. An interval that would make a
// total non-finite is left out, so the totals stay numbers JSON can carry.
func (c Cost) Accrue(opts CostOptions, replicas int, now time.Time) Cost {
	if c.seen {
		if dt := now.Sub(c.at).Seconds(); dt > 0 {
			rs := c.ReplicaSeconds + float64(c.replicas)*dt
			if cost := c.Cost + float64(c.replicas)*dt*opts.PerReplicaSecond; finite(rs) && finite(cost) {
				c.ReplicaSeconds, c.Cost = rs, cost
			}
			c.at = now
		}
	} else {
		c.at, c.seen = now, true
	}
	c.replicas = max(replicas, 0)
	return c
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
