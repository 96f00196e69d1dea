package sim

import (
	"fmt"
	"math"
	"time"
)

// QueueTrace is a work-queue trace: per turn, the items that arrive and the
// mean service time (seconds of one replica) of each. Unlike a load series
// its work waits: what the replicas cannot do in a turn stays queued.
type QueueTrace struct {
	Name     string
	Arrivals []float64
	Service  []float64
	// EventStart and EventEnd bound the event window, as in Series.
	EventStart, EventEnd int
}

// Series is the trace as the loop runs it with model m and turns of the
// given length: load = arrivals x service x Saturation / turn, the request
// rate (of 1/Saturation-second requests) that is the same work, so the
// occupancy and the required replicas mean what they mean on a load series.
// With Saturation 1 the load is the work in busy replicas. Run the series
// with the same turn length.
func (q QueueTrace) Series(m Model, turn time.Duration) Series {
	load := make([]float64, len(q.Arrivals))
	for t := range load {
		load[t] = float64(q.Arrivals[t]*q.Service[t]) * m.Saturation / turn.Seconds()
	}
	tr := q
	return Series{Name: q.Name, Load: load, EventStart: q.EventStart, EventEnd: q.EventEnd, Queue: &tr}
}

// QueueModel is the model a queue trace is scored with: a replica does one
// second of work per second (Saturation 1, so load is in busy replicas),
// and ReferenceModel's target occupancy, bounds and start.
func QueueModel() Model {
	m := ReferenceModel()
	m.Saturation = 1
	return m
}

// QueueSeed is the built-in queue trace's generator seed.
const QueueSeed = 6

// QueueWave describes the generated queue traces: a wave of arrivals, one
// batch released at once, and a window in which the service time grows
// (a slow dependency), each with uniform noise.
type QueueWave struct {
	Seed  int64
	Turns int
	Turn  time.Duration
	// Rate is the mean arrival rate (items/s), Swing the wave's amplitude,
	// Period its length in turns; Noise the half-width of the
	// multiplicative band on each turn's arrivals.
	Rate, Swing, Period, Noise float64
	// Batch items arrive in turn BatchTurn on top of the wave.
	Batch     float64
	BatchTurn int
	// Service is the mean service time (s), ServiceNoise its band; in
	// [SlowStart, SlowEnd) it is multiplied by Slow.
	Service, ServiceNoise, Slow float64
	SlowStart, SlowEnd          int
}

// ReferenceQueueWave is the built-in queue trace's shape: 120 turns of 15 s;
// 1 +/- 0.6 items/s over a 60-turn wave with +/-15 % noise; a batch of 150
// items at turn 30; 2 s of service +/-10 %, doubled in turns 70..89.
func ReferenceQueueWave(seed int64) QueueWave {
	return QueueWave{Seed: seed, Turns: 120, Turn: DefaultTurn, Rate: 1, Swing: 0.6, Period: 60, Noise: 0.15,
		Batch: 150, BatchTurn: 30, Service: 2, ServiceNoise: 0.1, Slow: 2, SlowStart: 70, SlowEnd: 90}
}

// Trace generates the wave. Arrivals are whole items; service times are
// rounded to the millisecond. The event window is the slow one.
func (w QueueWave) Trace(name string) QueueTrace {
	g := newLCG(w.Seed)
	q := QueueTrace{Name: name, Arrivals: make([]float64, w.Turns), Service: make([]float64, w.Turns),
		EventStart: w.SlowStart, EventEnd: w.SlowEnd}
	for t := range w.Turns {
		rate := w.Rate + float64(w.Swing*math.Sin(float64(2*math.Pi*float64(t))/w.Period))
		noise := 1 - w.Noise + float64(2*w.Noise*g.next())
		items := math.Round(float64(float64(rate*w.Turn.Seconds()) * noise))
		if t == w.BatchTurn {
			items += w.Batch
		}
		service := w.Service * (1 - w.ServiceNoise + float64(2*w.ServiceNoise*g.next()))
		if t >= w.SlowStart && t < w.SlowEnd {
			service *= w.Slow
		}
		q.Arrivals[t], q.Service[t] = max(0, items), math.Round(service*1000)/1000
	}
	return q
}

// GeneratedQueue is the queue trace with a seed.
func GeneratedQueue(seed int64) QueueTrace {
	return ReferenceQueueWave(seed).Trace(fmt.Sprintf("queue trace (seed %d)", seed))
}

// ReferenceQueue is the built-in queue trace.
func ReferenceQueue() QueueTrace { return GeneratedQueue(QueueSeed) }
