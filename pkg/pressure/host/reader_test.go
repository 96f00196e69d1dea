package host

import (
	"context"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingFS counts the reads of memory.stat, which every reading of a
// cgroup v2 tree makes once.
type countingFS struct {
	fsys  fs.FS
	reads atomic.Int64
}

func (c *countingFS) Open(name string) (fs.File, error) {
	if strings.HasSuffix(name, "/memory.stat") {
		c.reads.Add(1)
	}
	return c.fsys.Open(name)
}

func TestHostTargetsShareOneReadPerInterval(t *testing.T) {
	root := t.TempDir()
	tree(t, root, cgroupV2())
	files := &countingFS{fsys: os.DirFS(root)}
	clock := newClock()
	reader := NewReader(ReaderOptions{FS: files, Now: clock.Now})
	const targets = 100
	var sources []*Source
	for range targets {
		s, err := New(Options{Name: "r", Reader: reader})
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, s)
	}
	if n := files.reads.Load(); n != 1 {
		t.Errorf("%d targets built with %d reads, want 1", targets, n)
	}
	usage, start := 5000000, clock.now
	for interval := 1; interval <= 3; interval++ {
		clock.mu.Lock()
		clock.now = start.Add(time.Duration(interval) * 5 * time.Second)
		clock.mu.Unlock()
		// 1.25 s of CPU in 5 s against a 0.5-core quota is half the limit.
		usage += 1250000
		tree(t, root, map[string]string{ctr + "cpu.stat": "usage_usec " + strconv.Itoa(usage) + "\n"})
		for i, s := range sources {
			if r := observeOne(t, s); !near(r.CPUUtilisation, 0.5) || r.MemoryUsedBytes != 500*mib {
				t.Fatalf("interval %d, target %d: %+v", interval, i, r)
			}
			clock.Advance(time.Millisecond) // the samplers wake one after another
		}
		if n := files.reads.Load(); n != int64(1+interval) {
			t.Errorf("after %d intervals of %d targets: %d reads, want %d", interval, targets, n, 1+interval)
		}
	}
}

func TestASharedReadingIsNeverReusedTooSoon(t *testing.T) {
	root := t.TempDir()
	tree(t, root, cgroupV2())
	files := &countingFS{fsys: os.DirFS(root)}
	clock := newClock()
	reader := NewReader(ReaderOptions{FS: files, Now: clock.Now})
	// Never waiting, a source asks again within MaxAge of its own last
	// reading: it is read anew, or its rate would span no time.
	s, err := New(Options{Name: "r", Reader: reader, MinInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Millisecond)
	tree(t, root, map[string]string{ctr + "cpu.stat": "usage_usec 5005000\n"})
	if r := observeOne(t, s); !near(r.CPUUtilisation, 1) {
		t.Errorf("CPU %v over 10 ms, want 1", r.CPUUtilisation)
	}
	// A reading older than MaxAge is read anew, whoever asks.
	other, err := New(Options{Name: "r", Reader: reader})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(DefaultMaxAge + time.Millisecond)
	if _, err := other.Observe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := files.reads.Load(); n != 3 {
		t.Errorf("%d reads, want 3: the first, the one too soon to share, the one too old", n)
	}
}

// BenchmarkSample1000HostTargets is one sample of 1,000 host targets on
// this machine's real /proc and cgroup files: each target observes once,
// the samples of one interval 5 s of clock after the last. "own" reads
// once per target (a Reader each, as before Reader was shared); "shared"
// gives them one Reader.
func BenchmarkSample1000HostTargets(b *testing.B) {
	for _, shared := range []bool{false, true} {
		name := "own"
		if shared {
			name = "shared"
		}
		b.Run(name, func(b *testing.B) {
			clock := newClock()
			reader := NewReader(ReaderOptions{Now: clock.Now})
			var sources []*Source
			for range 1000 {
				opts := Options{Name: "r", Reader: reader}
				if !shared {
					opts = Options{Name: "r", Now: clock.Now}
				}
				s, err := New(opts)
				if err != nil {
					b.Fatal(err)
				}
				sources = append(sources, s)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				// Between samples real time passes too, untimed, so that
				// /proc/stat (100 Hz ticks) shows CPU time elapsed.
				b.StopTimer()
				time.Sleep(20 * time.Millisecond)
				clock.Advance(5 * time.Second)
				b.StartTimer()
				for _, s := range sources {
					if _, err := s.Observe(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// TestMemoryLimit: a container's memory.max is its limit; "max", and a
// host without cgroup v2 (whose ceiling a Source reports as the machine's
// RAM), have none.
func TestMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		limit uint64
		ok    bool
	}{
		{"cgroup v2 with a limit", cgroupV2(), 1 << 30, true},
		{"cgroup v2 without one", with(cgroupV2(), ctr+"memory.max", "max\n"), 0, false},
		{"cgroup v2, unreadable", with(cgroupV2(), ctr+"memory.max", "lots\n"), 0, false},
		{"/proc only", procOnly(), 0, false},
	} {
		root := t.TempDir()
		tree(t, root, c.files)
		limit, ok := NewReader(ReaderOptions{FS: os.DirFS(root)}).MemoryLimit()
		if limit != c.limit || ok != c.ok {
			t.Errorf("%s: %d, %v; want %d, %v", c.name, limit, ok, c.limit, c.ok)
		}
	}
}

func with(files map[string]string, name, content string) map[string]string {
	files[name] = content
	return files
}
