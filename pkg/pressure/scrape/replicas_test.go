package scrape

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The benchmarks' replicas in a process of their own (-replica-server
// process, the default): this test binary, started again with
// replicaProcessEnv set, serves the fleets of every format with net/http
// and hands their addresses to the benchmark on its stdout. In a cluster
// the replicas answer a scrape on their own cores; this way the
// benchmark's process, and the core bench/scrape.sh pins it to, hold the
// scraper alone, and cpu-ms/op is the scraper's CPU time.
//
// The protocol, one line each. The replicas' process writes, per format,
// "fleet NAME SERIES SIZE N" then N lines of URLs, then "ready". Then, for
// each "cpu" it reads, it writes its CPU time so far in nanoseconds; it
// exits when its stdin ends, which is at the latest when the benchmark's
// process does.
const replicaProcessEnv = "BAROMETER_BENCH_REPLICA_PROCESS"

func TestMain(m *testing.M) {
	if os.Getenv(replicaProcessEnv) != "" {
		if err := serveReplicaProcess(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "replica process:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	for _, fl := range fleets {
		if fl.replicas != nil {
			fl.replicas.stop() // the same process serves every format
			break
		}
	}
	os.Exit(code)
}

// serveReplicaProcess is the replicas' process: it serves the fleets,
// writes their addresses to out and answers CPU queries from in until in
// ends.
func serveReplicaProcess(in io.Reader, out io.Writer) error {
	served, err := serveFleets("net/http")
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	for name, fl := range served {
		fmt.Fprintf(w, "fleet %s %d %d %d\n", name, fl.series, fl.size, len(fl.urls))
		for _, u := range fl.urls {
			fmt.Fprintln(w, u)
		}
	}
	fmt.Fprintln(w, "ready")
	if err := w.Flush(); err != nil {
		return err
	}
	queries := bufio.NewScanner(in)
	for queries.Scan() {
		if queries.Text() != "cpu" {
			return fmt.Errorf("query %q: want cpu", queries.Text())
		}
		if _, err := fmt.Fprintln(out, int64(processCPU())); err != nil {
			return err
		}
	}
	return queries.Err()
}

// replicaProcess is the benchmark's side of the replicas' process.
type replicaProcess struct {
	cmd     *exec.Cmd
	queries io.WriteCloser
	answers *bufio.Reader
	mu      sync.Mutex // one query at a time
}

// startReplicaProcess starts this test binary as the replicas' process,
// pinned with taskset to the CPU list cpus unless it is empty, and reads
// its fleets.
func startReplicaProcess(cpus string) (map[string]*fleet, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("replica process: %w", err)
	}
	name, args := self, []string{"-test.run=^$"}
	if cpus != "" {
		taskset, err := exec.LookPath("taskset")
		if err != nil {
			return nil, fmt.Errorf("-replica-cpu %s: taskset: %w", cpus, err)
		}
		name, args = taskset, append([]string{"-c", cpus, self}, args...)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), replicaProcessEnv+"=1")
	cmd.Stderr = os.Stderr
	queries, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	answers, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("replica process: %w", err)
	}
	p := &replicaProcess{cmd: cmd, queries: queries, answers: bufio.NewReader(answers)}
	out, err := p.readFleets()
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("replica process: %w", err)
	}
	return out, nil
}

// readFleets reads the fleets up to "ready".
func (p *replicaProcess) readFleets() (map[string]*fleet, error) {
	out := map[string]*fleet{}
	for {
		line, err := p.line()
		if err != nil {
			return nil, err
		}
		if line == "ready" {
			break
		}
		var (
			name string
			n    int
			fl   = &fleet{replicas: p}
		)
		if _, err := fmt.Sscanf(line, "fleet %s %d %d %d", &name, &fl.series, &fl.size, &n); err != nil {
			return nil, fmt.Errorf("line %q: %w", line, err)
		}
		for range n {
			u, err := p.line()
			if err != nil {
				return nil, err
			}
			fl.urls = append(fl.urls, u)
		}
		out[name] = fl
	}
	for name := range benchFormats {
		if out[name] == nil || len(out[name].urls) != benchReplicas {
			return nil, fmt.Errorf("fleet %s: want %d replicas", name, benchReplicas)
		}
	}
	return out, nil
}

func (p *replicaProcess) line() (string, error) {
	line, err := p.answers.ReadString('\n')
	if errors.Is(err, io.EOF) {
		return "", errors.New("the replicas' process ended")
	}
	return strings.TrimSuffix(line, "\n"), err
}

// cpu is the replicas' process's CPU time so far, user and system.
func (p *replicaProcess) cpu() (time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := io.WriteString(p.queries, "cpu\n"); err != nil {
		return 0, fmt.Errorf("replica process: %w", err)
	}
	line, err := p.line()
	if err != nil {
		return 0, fmt.Errorf("replica process: cpu: %w", err)
	}
	ns, err := strconv.ParseInt(line, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("replica process: cpu %q: %w", line, err)
	}
	return time.Duration(ns), nil
}

// stop ends the replicas' process: its stdin closed, it exits.
func (p *replicaProcess) stop() {
	_ = p.queries.Close()
	_ = p.cmd.Wait()
}
