// Package testbin runs a real server binary as a test's child process, for
// test harnesses such as internal/promtest and internal/otelcoltest: it
// finds the binary, fails or skips the test when it is missing, starts the
// child, keeps its output for the failure message, and stops it. What the
// child is and when it is ready stay with each harness. Test support only;
// nothing outside tests imports it.
//
// When the binary is missing the test fails under CI (CI set and not
// "false"), so a CI that lost it cannot go green by skipping, and is
// skipped with the install command elsewhere.
package testbin

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stopGrace is how long a child has to exit after SIGTERM before it is
// killed.
const stopGrace = 10 * time.Second

// Need returns the binary lookup finds, or, when it finds none, fails t
// under CI and skips it elsewhere, with hint (the command that installs
// the binary) in the message.
func Need(t testing.TB, lookup func() (string, error), hint string) string {
	t.Helper()
	bin, err := lookup()
	if err == nil {
		return bin
	}
	msg := err.Error() + "; install it with: " + hint
	if underCI(os.Getenv("CI")) {
		t.Fatal(msg)
	}
	t.Skip(msg + " (skipped because CI is not set; under CI this fails)")
	return ""
}

// underCI reports whether the CI variable's value ci marks a CI run.
func underCI(ci string) bool { return ci != "" && ci != "false" }

// Find looks for the binary called name: at $env when that is set (and
// then only there), else at the first of candidates that exists, each a
// path or a name looked up on $PATH.
func Find(name, env string, candidates ...string) (string, error) {
	if p := os.Getenv(env); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("%s binary $%s=%s: %w", name, env, p, err)
		}
		return p, nil
	}
	looked := []string{"$" + env}
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
		if !strings.ContainsRune(c, filepath.Separator) {
			c += " on $PATH"
		}
		looked = append(looked, c)
	}
	return "", fmt.Errorf("%s binary not found (looked at %s)", name, strings.Join(looked, ", "))
}

// FreePort is a loopback address, 127.0.0.1:<port>, that was free a
// moment ago. Someone else can take it before the child binds it, so a
// harness retries a start that fails with "address already in use".
func FreePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Process is a running child.
type Process struct {
	name   string
	cmd    *exec.Cmd
	logs   *logBuffer
	exited chan struct{}
}

// Start runs bin with args, its output kept. The child gets one core
// (GOMAXPROCS=1): plenty for a test's load, and the machine is shared.
func Start(bin string, args ...string) (*Process, error) {
	return StartEnv(bin, nil, args...)
}

// StartEnv is Start with env (KEY=value) added to the child's environment.
func StartEnv(bin string, env []string, args ...string) (*Process, error) {
	p := &Process{name: filepath.Base(bin), logs: &logBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(append(os.Environ(), "GOMAXPROCS=1"), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("run %s: %w", bin, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	return p, nil
}

// Exited is closed once the child has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Stop sends the child SIGTERM, kills it if it has not exited within
// stopGrace, and returns once it has exited.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// Kill ends the child with SIGKILL, as a crash or an OOM kill would:
// nothing is drained. It returns once the child has exited.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Output is what the child has written so far.
func (p *Process) Output() string { return p.logs.String() }

// Abort stops the child after a failed start and returns err with the
// child's output, which says why.
func (p *Process) Abort(err error) error {
	p.Stop()
	return fmt.Errorf("%w\n%s output:\n%s", err, p.name, p.logs.String())
}

// StopAtCleanup stops the child when t ends, and logs its output if t
// failed.
func (p *Process) StopAtCleanup(t testing.TB) {
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", p.name, p.logs.String())
		}
	})
}

// logBuffer keeps the child's output for the failure message.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
