// Package host is a pressure.Source that reads the CPU and memory pressure of
// the machine, or container, Barometer itself runs on, so a scaler with no
// configuration still serves a live, real signal.
//
// When /sys/fs/cgroup is a cgroup v2 mount (cgroup.controllers exists) it
// reads this process's cgroup, resolved from /proc/self/cgroup: in a
// container that is the container; on a bare host it is the service's slice,
// or the whole machine for a process in the root cgroup. Otherwise, and for
// any controller the cgroup does not expose, it falls back to /proc, which is
// the whole machine. cgroup v1 is not read: on a v1 or hybrid host the figures
// are the machine's and v1 limits are not seen.
//
// CPU is a rate between consecutive readings: cgroup usage_usec over wall
// time times the cores allowed (the cpu.max quota, else every CPU), or
// /proc/stat busy jiffies over all jiffies. New takes the first reading, so
// the first Observe reports a real rate rather than a made-up zero.
//
// Memory is the kubelet's working set (memory.current less inactive_file)
// over memory.max, or MemTotal - MemAvailable over MemTotal from /proc. The
// limit is never reported as "no ceiling": with memory.max "max", or above
// the machine's RAM, the ceiling is MemTotal, since the machine OOM-kills
// there whatever the cgroup allows.
//
// The host Sources of a process share one Reader, so the host targets
// sampled at one instant read the files once between them (see Reader).
package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// DefaultMinInterval is the shortest span a CPU sample covers by default.
const DefaultMinInterval = 100 * time.Millisecond

const cgroupRoot = "sys/fs/cgroup"

// Options configure a Source. The zero value reads the real machine.
type Options struct {
	// Name is the replica name reported; empty means os.Hostname, which is
	// the pod name in Kubernetes.
	Name string
	// FS is the filesystem the sys/ and proc/ paths are read from; nil means
	// the real root. Tests point it at a fixture tree.
	FS fs.FS
	// Now is the clock for ObservedAt and for the CPU rate's wall time; nil
	// means time.Now.
	Now func() time.Time
	// MinInterval is the shortest span a CPU sample covers: Observe waits,
	// bounded by its ctx, until the previous reading is at least this old.
	// Zero means DefaultMinInterval; negative means never wait.
	MinInterval time.Duration
	// Reader is the read of the host shared with the process's other
	// host Sources (see Reader); FS and Now are then the Reader's. Nil: a
	// Reader of the Source's own, which reads at every sample.
	Reader *Reader
}

// Source reads the host's pressure. It is safe for concurrent use: calls are
// serialised by a mutex, and each measures CPU since the previous call,
// whichever goroutine made it.
type Source struct {
	name        string
	minInterval time.Duration
	reader      *Reader

	mu   sync.Mutex
	prev cpuReading
}

// cpuReading is one reading of the cumulative CPU counters.
type cpuReading struct {
	at          time.Time
	busy, total uint64 // cgroup: busy is usage_usec, total unused; /proc: jiffies
}

// New resolves where to read from and takes the first CPU reading, so the
// first Observe already has a baseline (it waits out MinInterval if called
// sooner) and an unreadable or malformed tree fails at startup.
func New(opts Options) (*Source, error) {
	s := &Source{
		name:        opts.Name,
		minInterval: cmp.Or(opts.MinInterval, DefaultMinInterval),
		reader:      opts.Reader,
	}
	if s.reader == nil {
		s.reader = NewReader(ReaderOptions{FS: opts.FS, Now: opts.Now, MaxAge: -1})
	}
	if s.name == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("host: no Name given and os.Hostname failed: %w", err)
		}
		s.name = h
	}
	rd, err := s.reader.sample(time.Time{}, 0)
	if err != nil {
		return nil, err
	}
	if rd.cpuErr != nil {
		return nil, rd.cpuErr
	}
	s.prev = rd.cpu
	return s, nil
}

// Observe returns one ReplicaObservation for the host. Any read failure fails
// the whole sample: there is only one replica, so nothing partial is useful.
func (s *Source) Observe(ctx context.Context) (pressure.Observation, error) {
	if err := ctx.Err(); err != nil {
		return pressure.Observation{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Two readings microseconds apart give a noisy or zero rate (/proc/stat
	// ticks at 100 Hz), so every sample spans at least minInterval.
	if wait := s.minInterval - s.reader.now().Sub(s.prev.at); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return pressure.Observation{}, fmt.Errorf("host: waiting %v for a CPU sample interval: %w", wait, ctx.Err())
		case <-t.C:
		}
	}
	rd, err := s.reader.sample(s.prev.at, s.minInterval)
	if err != nil {
		return pressure.Observation{}, err
	}
	if rd.cpuErr != nil {
		return pressure.Observation{}, rd.cpuErr
	}
	cur := rd.cpu
	// Re-baseline even if the pair turns out unusable, so one bad reading
	// costs one sample, not every sample after it.
	prev := s.prev
	s.prev = cur
	cpu, err := s.utilisation(prev, rd)
	if err != nil {
		return pressure.Observation{}, err
	}
	if rd.memErr != nil {
		return pressure.Observation{}, rd.memErr
	}
	return pressure.Observation{
		Replicas: []pressure.ReplicaObservation{{
			Name:             s.name,
			CPUUtilisation:   cpu,
			MemoryUsedBytes:  float64(rd.used),
			MemoryLimitBytes: float64(rd.limit),
			WalSaturation:    pressure.Healthy,
		}},
		ObservedAt: cur.at,
		MeasuredAt: cur.at,
	}, nil
}

// utilisation is the CPU used between two readings over what was available.
func (s *Source) utilisation(prev cpuReading, rd reading) (float64, error) {
	cur := rd.cpu
	if cur.busy < prev.busy || cur.total < prev.total {
		return 0, errors.New("host: CPU usage counter went backwards; re-baselined")
	}
	if s.reader.cpuDir == "" {
		if cur.total == prev.total {
			return 0, errors.New("host: /proc/stat: no CPU time elapsed between readings")
		}
		return pressure.Clamp01(float64(cur.busy-prev.busy) / float64(cur.total-prev.total)), nil
	}
	elapsed := cur.at.Sub(prev.at)
	if elapsed <= 0 {
		return 0, fmt.Errorf("host: clock did not advance between CPU readings (%v)", elapsed)
	}
	if rd.coresErr != nil {
		return 0, rd.coresErr
	}
	// usage_usec can overshoot the quota a little (bursting, period edges).
	used := float64(cur.busy-prev.busy) / float64(elapsed.Microseconds())
	return pressure.Clamp01(used / rd.cores), nil
}

// cgroupDir returns this process's cgroup v2 directory, or "" when
// /sys/fs/cgroup is not cgroup v2.
func (r *Reader) cgroupDir() (string, error) {
	if !r.exists(path.Join(cgroupRoot, "cgroup.controllers")) {
		return "", nil
	}
	b, err := r.readFile("proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		p, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		// A path with ".." lies outside our cgroup namespace, and one that
		// is not mounted here means /sys/fs/cgroup is already our own cgroup
		// (a private cgroup namespace shows "/" anyway): read the mount root.
		dir := path.Join(cgroupRoot, p)
		if slices.Contains(strings.Split(p, "/"), "..") || !r.exists(dir) {
			return cgroupRoot, nil
		}
		return dir, nil
	}
	return "", fmt.Errorf("host: /proc/self/cgroup: want a cgroup v2 line \"0::/path\", found none")
}

func (r *Reader) readCPU() (cpuReading, error) {
	c := cpuReading{at: r.now()}
	if r.cpuDir != "" {
		var err error
		c.busy, err = r.field(path.Join(r.cpuDir, "cpu.stat"), "usage_usec")
		return c, err
	}
	const name = "proc/stat"
	b, err := r.readFile(name)
	if err != nil {
		return c, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return c, fmt.Errorf("host: /%s: want a first line \"cpu user nice system idle iowait ...\", got %q", name, line)
	}
	// Sum user..steal only: guest and guest_nice are already inside user and
	// nice. Idle and iowait are the only time the CPUs were free.
	for i, v := range f[1:min(len(f), 9)] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return c, fmt.Errorf("host: /%s: cpu field %d: want an unsigned integer, got %q", name, i+1, v)
		}
		c.total += n
		if i != 3 && i != 4 {
			c.busy += n
		}
	}
	return c, nil
}

// cpuLimit is the cores the cgroup may use: its cpu.max quota, capped by the
// CPUs this process may run on (runtime.NumCPU honours the cpuset through the
// affinity mask, and a 4-core quota on 2 CPUs can only use 2).
func (r *Reader) cpuLimit() (float64, error) {
	cpus := float64(runtime.NumCPU())
	name := path.Join(r.cpuDir, "cpu.max")
	b, err := r.readFile(name)
	if errors.Is(err, fs.ErrNotExist) { // the root cgroup has no cpu.max
		return cpus, nil
	} else if err != nil {
		return 0, err
	}
	quota, period, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	if quota == "max" {
		return cpus, nil
	}
	q, err1 := strconv.ParseUint(quota, 10, 64)
	p, err2 := strconv.ParseUint(period, 10, 64)
	if err1 != nil || err2 != nil || q == 0 || p == 0 {
		return 0, fmt.Errorf("host: /%s: want \"max PERIOD\" or \"QUOTA PERIOD\" in microseconds, got %q", name, b)
	}
	return min(float64(q)/float64(p), cpus), nil
}

// readMemory returns the working set and its ceiling in bytes.
func (r *Reader) readMemory() (used, limit uint64, err error) {
	// meminfo's "kB" are KiB. One read serves both of its keys.
	meminfo, err := r.readFile("proc/meminfo")
	if err != nil {
		return 0, 0, err
	}
	total, err := fieldIn(meminfo, "proc/meminfo", "MemTotal:")
	if err != nil {
		return 0, 0, err
	}
	total *= 1024
	if r.memDir == "" {
		avail, err := fieldIn(meminfo, "proc/meminfo", "MemAvailable:")
		if err != nil {
			return 0, 0, err
		}
		return total - min(avail*1024, total), total, nil
	}
	current, err := r.uint(path.Join(r.memDir, "memory.current"), "")
	if err != nil {
		return 0, 0, err
	}
	// Page cache the kernel can drop at no cost is not pressure; this is the
	// kubelet's working set, the figure it evicts on.
	inactive, err := r.field(path.Join(r.memDir, "memory.stat"), "inactive_file")
	if err != nil {
		return 0, 0, err
	}
	used = current - min(inactive, current)
	ceiling, err := r.uint(path.Join(r.memDir, "memory.max"), "max")
	if err != nil {
		return 0, 0, err
	}
	return used, min(ceiling, total), nil // "max" reads as MaxUint64
}

func (r *Reader) exists(name string) bool {
	_, err := fs.Stat(r.fsys, name)
	return err == nil
}

func (r *Reader) readFile(name string) ([]byte, error) {
	b, err := fs.ReadFile(r.fsys, name)
	if err != nil {
		return nil, fmt.Errorf("host: /%s: %w", name, err)
	}
	return b, nil
}

// uint reads a file holding one unsigned integer or, if unlimited is set,
// that word for "no limit", returned as math.MaxUint64.
func (r *Reader) uint(name, unlimited string) (uint64, error) {
	b, err := r.readFile(name)
	if err != nil {
		return 0, err
	}
	v := strings.TrimSpace(string(b))
	if unlimited != "" && v == unlimited {
		return math.MaxUint64, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil && unlimited != "" {
		return 0, fmt.Errorf("host: /%s: want %q or an unsigned integer, got %q", name, unlimited, v)
	} else if err != nil {
		return 0, fmt.Errorf("host: /%s: want an unsigned integer, got %q", name, v)
	}
	return n, nil
}

// field reads the value of the "key value" line in a file such as cpu.stat,
// memory.stat or meminfo.
func (r *Reader) field(name, key string) (uint64, error) {
	b, err := r.readFile(name)
	if err != nil {
		return 0, err
	}
	return fieldIn(b, name, key)
}

// fieldIn is field on the contents b of the file name, which only names it
// in errors.
func fieldIn(b []byte, name, key string) (uint64, error) {
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != key {
			continue
		}
		n, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("host: /%s: %s: want an unsigned integer, got %q", name, strings.TrimSuffix(key, ":"), f[1])
		}
		return n, nil
	}
	return 0, fmt.Errorf("host: /%s: want a %q line, found none", name, key)
}
