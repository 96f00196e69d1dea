package host

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

const (
	mib = 1 << 20
	gib = 1 << 30
)

// fakeClock is a clock the test moves by hand (or by step on every read).
type fakeClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func newClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now
	c.now = c.now.Add(c.step)
	return t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// tree writes files (slash paths relative to root) into root.
func tree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const ctr = "sys/fs/cgroup/kubepods/pod1/ctr/"

// cgroupV2 is a container in a cgroup v2 tree with a 0.5-core CPU quota and
// a 1 GiB memory limit on an 8 GiB machine.
func cgroupV2() map[string]string {
	return map[string]string{
		"sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory pids\n",
		"proc/self/cgroup":                 "0::/kubepods/pod1/ctr\n",
		ctr + "cpu.stat":                   "usage_usec 5000000\nuser_usec 3000000\nsystem_usec 2000000\n",
		ctr + "cpu.max":                    "50000 100000\n",
		ctr + "memory.current":             "629145600\n", // 600 MiB
		ctr + "memory.stat":                "anon 400000000\ninactive_file 104857600\nactive_file 1000\n",
		ctr + "memory.max":                 "1073741824\n",
		"proc/meminfo":                     "MemTotal:        8388608 kB\nMemFree:         1000 kB\nMemAvailable:    4194304 kB\n",
		"proc/stat":                        "cpu  1 1 1 1 1 1 1 1 0 0\n",
	}
}

// procOnly is a machine without cgroup v2.
func procOnly() map[string]string {
	return map[string]string{
		"proc/stat":    "cpu  100 0 100 700 100 0 0 0 50 0\ncpu0 100 0 100 700 100 0 0 0 50 0\nintr 1\n",
		"proc/meminfo": "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    250 kB\n",
		// cgroup v1 files are ignored.
		"sys/fs/cgroup/memory/memory.limit_in_bytes": "1048576\n",
	}
}

func newSource(t *testing.T, files map[string]string, clock *fakeClock) (*Source, string) {
	t.Helper()
	root := t.TempDir()
	tree(t, root, files)
	s, err := New(Options{Name: "replica-0", FS: os.DirFS(root), Now: clock.Now})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s, root
}

func observeOne(t *testing.T, s *Source) pressure.ReplicaObservation {
	t.Helper()
	obs, err := s.Observe(context.Background())
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	if len(obs.Replicas) != 1 || len(obs.Missing) != 0 {
		t.Fatalf("want one replica and nothing missing, got %+v", obs)
	}
	return obs.Replicas[0]
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestCgroupV2WithLimits(t *testing.T) {
	clock := newClock()
	s, root := newSource(t, cgroupV2(), clock)
	clock.Advance(time.Second)
	// 0.25 s of CPU in 1 s against a 0.5-core quota is half the limit.
	tree(t, root, map[string]string{ctr + "cpu.stat": "usage_usec 5250000\n"})
	want := clock.now

	obs, err := s.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !obs.ObservedAt.Equal(want) {
		t.Errorf("ObservedAt = %v, want the clock's %v", obs.ObservedAt, want)
	}
	r := obs.Replicas[0]
	want2 := pressure.ReplicaObservation{
		Name:             "replica-0",
		CPUUtilisation:   0.5,
		MemoryUsedBytes:  500 * mib, // 600 MiB less 100 MiB inactive_file
		MemoryLimitBytes: 1 * gib,
		WalSaturation:    pressure.Healthy,
	}
	if r != want2 {
		t.Errorf("got %+v\nwant %+v", r, want2)
	}
}

func TestCgroupV2NoLimits(t *testing.T) {
	files := cgroupV2()
	files[ctr+"cpu.max"] = "max 100000\n"
	files[ctr+"memory.max"] = "max\n"
	clock := newClock()
	s, root := newSource(t, files, clock)

	clock.Advance(2 * time.Second)
	tree(t, root, map[string]string{ctr + "cpu.stat": "usage_usec 6000000\n"})
	r := observeOne(t, s)
	// No quota: 1 s of CPU in 2 s over every CPU this process may use.
	if want := 0.5 / float64(runtime.NumCPU()); !near(r.CPUUtilisation, want) {
		t.Errorf("CPUUtilisation = %v, want %v", r.CPUUtilisation, want)
	}
	// No memory.max: the machine's RAM is the ceiling, not "none".
	if r.MemoryLimitBytes != 8*gib {
		t.Errorf("MemoryLimitBytes = %v, want MemTotal %v", r.MemoryLimitBytes, 8*gib)
	}

	// A limit above the machine's RAM is not the real ceiling either.
	tree(t, root, map[string]string{ctr + "memory.max": "68719476736\n"})
	clock.Advance(time.Second)
	if r := observeOne(t, s); r.MemoryLimitBytes != 8*gib {
		t.Errorf("memory.max 64 GiB on 8 GiB: MemoryLimitBytes = %v, want %v", r.MemoryLimitBytes, 8*gib)
	}
}

func TestCgroupV2QuotaCappedByCPUs(t *testing.T) {
	files := cgroupV2()
	files[ctr+"cpu.max"] = "100000000 100000\n" // 1000 cores
	clock := newClock()
	s, root := newSource(t, files, clock)
	clock.Advance(time.Second)
	tree(t, root, map[string]string{ctr + "cpu.stat": "usage_usec 6000000\n"})
	if r, want := observeOne(t, s), 1/float64(runtime.NumCPU()); !near(r.CPUUtilisation, want) {
		t.Errorf("CPUUtilisation = %v, want %v (quota capped at NumCPU)", r.CPUUtilisation, want)
	}
}

// In the root cgroup (a bare host, or a private namespace's view) there is no
// cpu.max, memory.current or memory.max: CPU comes from the root's cpu.stat
// and memory from /proc/meminfo.
func TestCgroupV2RootCgroup(t *testing.T) {
	files := procOnly()
	files["sys/fs/cgroup/cgroup.controllers"] = "cpu memory\n"
	files["sys/fs/cgroup/cpu.stat"] = "usage_usec 1000\n"
	files["proc/self/cgroup"] = "0::/\n"
	clock := newClock()
	s, root := newSource(t, files, clock)
	clock.Advance(time.Second)
	tree(t, root, map[string]string{"sys/fs/cgroup/cpu.stat": "usage_usec 1001000\n"})
	r := observeOne(t, s)
	if want := 1 / float64(runtime.NumCPU()); !near(r.CPUUtilisation, want) {
		t.Errorf("CPUUtilisation = %v, want %v", r.CPUUtilisation, want)
	}
	if r.MemoryUsedBytes != 750*1024 || r.MemoryLimitBytes != 1000*1024 {
		t.Errorf("memory = %v/%v, want meminfo's %v/%v", r.MemoryUsedBytes, r.MemoryLimitBytes, 750*1024, 1000*1024)
	}
}

// A cgroup path outside our namespace ("..") or not mounted here means
// /sys/fs/cgroup is already our cgroup.
func TestCgroupPathFallsBackToMountRoot(t *testing.T) {
	for _, self := range []string{"0::/../../elsewhere\n", "0::/not/mounted/here\n"} {
		files := map[string]string{"proc/self/cgroup": "12:cpu:/x\n" + self}
		for name, body := range cgroupV2() {
			if name != "proc/self/cgroup" {
				files[strings.Replace(name, ctr, "sys/fs/cgroup/", 1)] = body
			}
		}
		clock := newClock()
		s, _ := newSource(t, files, clock)
		if s.reader.cpuDir != "sys/fs/cgroup" || s.reader.memDir != "sys/fs/cgroup" {
			t.Errorf("%q: read cpu from %q, memory from %q; want the mount root", self, s.reader.cpuDir, s.reader.memDir)
		}
		clock.Advance(time.Second)
		if r := observeOne(t, s); r.MemoryLimitBytes != 1*gib {
			t.Errorf("%q: MemoryLimitBytes = %v, want the root's memory.max", self, r.MemoryLimitBytes)
		}
	}
}

func TestProcFallback(t *testing.T) {
	clock := newClock()
	s, root := newSource(t, procOnly(), clock)
	clock.Advance(time.Second)
	// user +100, system +50, idle +300, iowait +50, guest +30 (already in
	// user): 150 busy of 500.
	tree(t, root, map[string]string{"proc/stat": "cpu  200 0 150 1000 150 0 0 0 80 0\n"})
	r := observeOne(t, s)
	if !near(r.CPUUtilisation, 0.3) {
		t.Errorf("CPUUtilisation = %v, want 0.3", r.CPUUtilisation)
	}
	if r.MemoryUsedBytes != 750*1024 || r.MemoryLimitBytes != 1000*1024 {
		t.Errorf("memory = %v/%v, want %v/%v", r.MemoryUsedBytes, r.MemoryLimitBytes, 750*1024, 1000*1024)
	}
}

func TestMalformed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		base  func() map[string]string
		file  string
		body  string // "" deletes the file
		wants []string
	}{
		{"no v2 line", cgroupV2, "proc/self/cgroup", "4:memory:/x\n", []string{"/proc/self/cgroup", `"0::/path"`}},
		{"usage_usec not a number", cgroupV2, ctr + "cpu.stat", "usage_usec abc\n", []string{"/" + ctr + "cpu.stat", "usage_usec: want an unsigned integer", `"abc"`}},
		{"no usage_usec", cgroupV2, ctr + "cpu.stat", "user_usec 1\n", []string{"cpu.stat", `want a "usage_usec" line`}},
		{"cpu.max word", cgroupV2, ctr + "cpu.max", "lots 100000\n", []string{"/" + ctr + "cpu.max", `want "max PERIOD" or "QUOTA PERIOD"`}},
		{"cpu.max zero period", cgroupV2, ctr + "cpu.max", "50000 0\n", []string{"cpu.max", "QUOTA PERIOD"}},
		{"cpu.max one field", cgroupV2, ctr + "cpu.max", "50000\n", []string{"cpu.max", "QUOTA PERIOD"}},
		{"memory.current negative", cgroupV2, ctr + "memory.current", "-5\n", []string{"/" + ctr + "memory.current", "want an unsigned integer", `"-5"`}},
		{"memory.max word", cgroupV2, ctr + "memory.max", "unlimited\n", []string{"memory.max", `want "max" or an unsigned integer`}},
		{"no inactive_file", cgroupV2, ctr + "memory.stat", "anon 1\n", []string{"memory.stat", `"inactive_file"`}},
		{"meminfo gone", cgroupV2, "proc/meminfo", "", []string{"/proc/meminfo"}},
		{"stat first line", procOnly, "proc/stat", "intr 1 2\n", []string{"/proc/stat", "want a first line"}},
		{"stat short", procOnly, "proc/stat", "cpu 1 2 3\n", []string{"/proc/stat", "want a first line"}},
		{"stat field", procOnly, "proc/stat", "cpu 1 2 x 4 5\n", []string{"/proc/stat", "cpu field 3", `"x"`}},
		{"no MemAvailable", procOnly, "proc/meminfo", "MemTotal: 10 kB\n", []string{"/proc/meminfo", `"MemAvailable:"`}},
		{"MemTotal garbage", procOnly, "proc/meminfo", "MemTotal: ten kB\n", []string{"/proc/meminfo", "MemTotal: want an unsigned integer", `"ten"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			tree(t, root, tc.base())
			p := filepath.Join(root, filepath.FromSlash(tc.file))
			var err error
			if tc.body == "" {
				err = os.Remove(p)
			} else {
				err = os.WriteFile(p, []byte(tc.body), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			// Files read at startup fail New; the rest fail Observe.
			clock := newClock()
			s, err := New(Options{Name: "r", FS: os.DirFS(root), Now: clock.Now})
			if err == nil {
				clock.Advance(time.Second)
				if tc.file != "proc/stat" { // let CPU time pass on /proc
					tree(t, root, map[string]string{"proc/stat": "cpu  200 0 150 1000 150 0 0 0 80 0\n"})
				}
				_, err = s.Observe(context.Background())
			}
			if err == nil {
				t.Fatal("want an error, got none")
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if tc.body == "" && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("error %q does not wrap fs.ErrNotExist", err)
			}
		})
	}
}

func TestCounterBackwardsRebaselines(t *testing.T) {
	clock := newClock()
	s, root := newSource(t, cgroupV2(), clock)
	clock.Advance(time.Second)
	tree(t, root, map[string]string{ctr + "cpu.stat": "usage_usec 10\n"})
	if _, err := s.Observe(context.Background()); err == nil || !strings.Contains(err.Error(), "backwards") {
		t.Fatalf("want a counter-went-backwards error, got %v", err)
	}
	clock.Advance(time.Second)
	tree(t, root, map[string]string{ctr + "cpu.stat": "usage_usec 500010\n"})
	if r := observeOne(t, s); !near(r.CPUUtilisation, 1) {
		t.Errorf("after re-baselining CPUUtilisation = %v, want 1", r.CPUUtilisation)
	}
}

func TestClockMustAdvance(t *testing.T) {
	root := t.TempDir()
	tree(t, root, cgroupV2())
	clock := newClock()
	s, err := New(Options{Name: "r", FS: os.DirFS(root), Now: clock.Now, MinInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Observe(context.Background()); err == nil || !strings.Contains(err.Error(), "clock did not advance") {
		t.Fatalf("want a clock error, got %v", err)
	}
}

// The first Observe straight after New still spans MinInterval of real time,
// and that wait is bounded by ctx.
func TestMinIntervalWait(t *testing.T) {
	root := t.TempDir()
	tree(t, root, cgroupV2())
	s, err := New(Options{Name: "r", FS: os.DirFS(root), MinInterval: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	obs, err := s.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 25*time.Millisecond {
		t.Errorf("first Observe took %v, want it to wait out MinInterval", took)
	}
	if obs.ObservedAt.IsZero() {
		t.Error("ObservedAt is zero with the default clock")
	}

	s.minInterval = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.Observe(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Observe past its deadline: err = %v, want DeadlineExceeded", err)
	}
}

func TestConcurrentObserve(t *testing.T) {
	clock := newClock()
	clock.step = time.Second // every reading is a second after the last
	s, _ := newSource(t, cgroupV2(), clock)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				if _, err := s.Observe(context.Background()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

// TestRealMachine reads this machine, whatever it is, with no options.
func TestRealMachine(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	obs, err := s.Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := obs.Replicas[0]
	host, _ := os.Hostname()
	source := "/proc"
	if s.reader.cpuDir != "" || s.reader.memDir != "" {
		source = "cgroup v2 cpu=" + s.reader.cpuDir + " memory=" + s.reader.memDir
	}
	t.Logf("%s via %s: cpu %.4f, memory %.0f / %.0f bytes (%.2f%%)", r.Name, source,
		r.CPUUtilisation, r.MemoryUsedBytes, r.MemoryLimitBytes, 100*r.MemoryUsedBytes/r.MemoryLimitBytes)
	if r.Name != host {
		t.Errorf("Name = %q, want os.Hostname %q", r.Name, host)
	}
	if r.CPUUtilisation < 0 || r.CPUUtilisation > 1 || math.IsNaN(r.CPUUtilisation) {
		t.Errorf("CPUUtilisation %v out of [0, 1]", r.CPUUtilisation)
	}
	if r.MemoryLimitBytes <= 0 || r.MemoryUsedBytes <= 0 || r.MemoryUsedBytes > r.MemoryLimitBytes {
		t.Errorf("memory %v / %v: want 0 < used <= limit", r.MemoryUsedBytes, r.MemoryLimitBytes)
	}
	if time.Since(obs.ObservedAt) > time.Minute || obs.ObservedAt.After(time.Now()) {
		t.Errorf("ObservedAt %v is not now", obs.ObservedAt)
	}
}
