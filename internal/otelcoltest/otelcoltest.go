// Package otelcoltest starts a real OpenTelemetry Collector for tests: the
// minimal collector of tools/otelcol (built by .ci/otelcol.sh), run as a
// child process with the configuration a test gives it, its OTLP gRPC
// receiver on a free loopback port. Every test gets its own, and its own
// telemetry is off, so nothing else listens (the collector's default
// would serve its metrics on :8888).
//
// When the binary is missing the test fails under CI (CI set and not
// "false"), so a CI that did not build it cannot go green by skipping, and
// is skipped with the build command elsewhere.
package otelcoltest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/internal/testbin"
)

// BinaryEnv overrides where the otelcol binary is looked for.
const BinaryEnv = "BAROMETER_OTELCOL"

// InstallHint is what to run when the binary is missing.
const InstallHint = "bash .ci/otelcol.sh (builds tools/otelcol)"

// builtPath is where .ci/otelcol.sh leaves the binary, from the
// repository's root.
const builtPath = "tools/otelcol/.bin/otelcol"

// Binary returns the otelcol binary to run, or fails or skips t when there
// is none (see the package comment).
func Binary(t testing.TB) string {
	t.Helper()
	return testbin.Need(t, Lookup, InstallHint)
}

// Lookup finds the binary: $BAROMETER_OTELCOL when set (and then only
// there), else the repository's tools/otelcol/.bin/otelcol, else $PATH.
func Lookup() (string, error) {
	built := builtPath
	if root, err := repositoryRoot(); err == nil {
		built = filepath.Join(root, builtPath)
	}
	return testbin.Find("otelcol", BinaryEnv, built, "otelcol")
}

// repositoryRoot is the nearest directory above the working directory (a
// test's package directory) that holds tools/otelcol/go.mod.
func repositoryRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "tools", "otelcol", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no tools/otelcol/go.mod above the working directory")
		}
		dir = parent
	}
}

// Collector is a running collector.
type Collector struct {
	// GRPCAddr is its OTLP gRPC receiver, 127.0.0.1:<port>.
	GRPCAddr string
}

// Start runs a collector whose configuration config returns for the
// receiver address it is given (host:port on loopback), and waits until
// that receiver accepts connections. It is stopped when the test ends.
func Start(t testing.TB, config func(grpcAddr string) ([]byte, error)) *Collector {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	// A port picked then freed can be taken by someone else before the
	// collector binds it; a start that fails for that is retried.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		addr, err := testbin.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config(addr)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("config-%d.yaml", attempt))
		if err := os.WriteFile(path, cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		if err = launch(t, bin, path, addr); err == nil {
			return &Collector{GRPCAddr: addr}
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("start otelcol: %v", lastErr)
	return nil
}

func launch(t testing.TB, bin, cfgPath, addr string) error {
	proc, err := testbin.Start(bin, "--config=file:"+cfgPath)
	if err != nil {
		return err
	}
	if err := waitListening(addr, proc.Exited(), 60*time.Second); err != nil {
		return proc.Abort(err)
	}
	proc.StopAtCleanup(t)
	return nil
}

// waitListening polls addr until it accepts a connection: the collector
// starts its receivers last, after its exporters and processors, so a
// receiver that listens is a pipeline that runs.
func waitListening(addr string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-exited:
			return errors.New("otelcol exited before its receiver listened")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("otelcol's receiver not listening at %s after %v", addr, timeout)
		}
	}
}
