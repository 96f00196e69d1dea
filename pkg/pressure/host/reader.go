package host

import (
	"cmp"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime/debug"
	"sync"
	"time"
)

// DefaultMaxAge is how old a shared reading may be and still serve a
// sample: long enough to cover the burst of samplers that wake at the same
// aligned instant, short beside any sample interval worth sharing.
const DefaultMaxAge = 250 * time.Millisecond

// ReaderOptions configure a Reader. The zero value reads the real machine.
type ReaderOptions struct {
	// FS is the filesystem the sys/ and proc/ paths are read from; nil
	// means the real root.
	FS fs.FS
	// Now is the clock of the readings; nil means time.Now.
	Now func() time.Time
	// MaxAge is how old the last reading may be and still be handed to
	// a Source instead of reading again; zero means DefaultMaxAge,
	// negative reads at every call.
	MaxAge time.Duration
}

// Reader reads the host (/proc and this process's cgroup) for every Source
// that shares it: the host targets of a process all measure the same
// machine, so the samplers that wake at one aligned instant take one
// reading between them rather than one each. A Source is handed the last
// reading when it is at most MaxAge old and no older than the Source's
// own previous reading plus its MinInterval (so its CPU rate always spans
// a real interval); otherwise the Reader reads again. Each Source still
// keeps its own previous reading, so the rates of Sources that sample at
// different intervals stay their own. A Reader is safe for concurrent
// use. Build one per process, where the host sources are built.
type Reader struct {
	fsys   fs.FS
	now    func() time.Time
	maxAge time.Duration

	mu       sync.Mutex
	resolved bool
	cpuDir   string // cgroup dir holding cpu.stat; "" reads /proc/stat
	memDir   string // cgroup dir holding memory.current; "" reads /proc/meminfo
	last     *reading
}

// reading is one read of everything a sample needs; its parts fail apart,
// so that a Source fails its sample at the same point it would reading
// them itself.
type reading struct {
	cpu         cpuReading
	cpuErr      error
	cores       float64 // the cgroup's CPU limit; unused for /proc
	coresErr    error
	used, limit uint64
	memErr      error
}

// NewReader returns a Reader; it reads nothing until a Source asks.
func NewReader(opts ReaderOptions) *Reader {
	r := &Reader{
		fsys:   cmp.Or[fs.FS](opts.FS, os.DirFS("/")),
		now:    opts.Now,
		maxAge: cmp.Or(opts.MaxAge, DefaultMaxAge),
	}
	if r.now == nil {
		r.now = time.Now
	}
	return r
}

// sample returns the last reading if it is fresh (see Reader), taken after
// prev and at least minInterval after it, else a new one. The error is
// where to read from failing to resolve; a reading's own failures are in
// it.
func (r *Reader) sample(prev time.Time, minInterval time.Duration) (reading, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.resolve(); err != nil {
		return reading{}, err
	}
	if l := r.last; l != nil && r.maxAge > 0 && l.cpu.at.After(prev) && !l.cpu.at.Before(prev.Add(minInterval)) &&
		r.now().Sub(l.cpu.at) <= r.maxAge {
		return *l, nil
	}
	var rd reading
	rd.cpu, rd.cpuErr = r.readCPU()
	if rd.cpuErr == nil && r.cpuDir != "" {
		rd.cores, rd.coresErr = r.cpuLimit()
	}
	rd.used, rd.limit, rd.memErr = r.readMemory()
	r.last = &rd
	return rd, nil
}

// resolve finds where to read from, once it succeeds.
func (r *Reader) resolve() error {
	if r.resolved {
		return nil
	}
	dir, err := r.cgroupDir()
	if err != nil {
		return err
	}
	if dir != "" {
		if r.exists(path.Join(dir, "cpu.stat")) {
			r.cpuDir = dir
		}
		if r.exists(path.Join(dir, "memory.current")) {
			r.memDir = dir
		}
	}
	r.resolved = true
	return nil
}

// MemoryLimit is the memory.max of this process's cgroup (v2) in bytes:
// what the container may use before the kernel OOM-kills it. false when
// there is none: no cgroup v2, no memory controller, "max", or a file that
// cannot be read. Unlike a Source's MemoryLimitBytes it is never the
// machine's RAM, so a caller can tell a container's limit from none.
func (r *Reader) MemoryLimit() (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.resolve() != nil || r.memDir == "" {
		return 0, false
	}
	limit, err := r.uint(path.Join(r.memDir, "memory.max"), "max")
	if err != nil || limit == math.MaxUint64 {
		return 0, false
	}
	return limit, true
}

// SetRuntimeMemoryLimit gives the Go runtime a soft memory limit of share
// of this container's memory limit, unless GOMEMLIMIT sets one (even
// "off") or there is no cgroup v2 limit; it returns both, 0 when it set
// none. The heap is then collected, and freed pages returned, as it nears
// the limit rather than at twice the live heap (docs/operations.md). It
// costs CPU only when the live heap nears it.
func (r *Reader) SetRuntimeMemoryLimit(share float64) (container, soft int64) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return 0, 0
	}
	limit, ok := r.MemoryLimit()
	if !ok {
		return 0, 0
	}
	soft = int64(float64(limit) * share)
	debug.SetMemoryLimit(soft)
	return int64(limit), soft
}
