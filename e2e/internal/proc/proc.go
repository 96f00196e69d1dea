// Package proc starts and stops the suite's processes. Each one logs to its
// own file, is killed by the kernel if the suite dies (PR_SET_PDEATHSIG),
// and stays in the suite's process group, so e2e/run's trap can end them
// all at once.
package proc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Spec is a process to start.
type Spec struct {
	// Name labels the process in logs and errors.
	Name string
	// Path and Args are the program and its arguments.
	Path string
	Args []string
	// Env is added to the suite's environment, or with Clean is the
	// whole environment.
	Env   []string
	Clean bool
	// LogDir receives Name.log (stdout and stderr).
	LogDir string
	// NetNS, when set, runs the process in that network namespace
	// (ip netns exec).
	NetNS string
}

// Proc is a running (or exited) process.
type Proc struct {
	Name    string
	LogPath string

	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}

	mu  sync.Mutex
	err error
}

// Start starts s.
func Start(s Spec) (*Proc, error) {
	path, args := s.Path, s.Args
	if s.NetNS != "" {
		args = append([]string{"netns", "exec", s.NetNS, path}, args...)
		path = "ip"
	}
	if err := os.MkdirAll(s.LogDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(s.LogDir, s.Name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "=== %s start %s %q\n", time.Now().Format(time.RFC3339Nano), path, args)
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), s.Env...)
	if s.Clean {
		cmd.Env = s.Env
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	p := &Proc{Name: s.Name, LogPath: logPath, cmd: cmd, log: f, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		fmt.Fprintf(f, "=== %s exit: %v\n", time.Now().Format(time.RFC3339Nano), err)
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited, and how.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM, waits up to grace, then SIGKILLs. It returns once the
// process is gone.
func (p *Proc) Stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Tail returns about the last n bytes of the process's log.
func (p *Proc) Tail(n int) string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	if len(data) > n {
		data = data[len(data)-n:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return string(data)
}
