// Command scaler is Barometer: a KEDA external scaler and metrics service
// (its commands: usage below). Every command answers -h or --help with its
// usage. Configuration comes from BAROMETER_* environment variables; see
// the README.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"syscall"

	"github.com/barometer-scaler/barometer/pkg/envconfig"
	"github.com/barometer-scaler/barometer/pkg/pressure/host"
	simcommand "github.com/barometer-scaler/barometer/pkg/sim/command"
)

// memoryLimitShare is the part of the container's memory limit the Go
// runtime may use; the rest is what it does not count (the binary's
// mapped pages, about 30 MiB) and headroom (docs/operations.md).
const memoryLimitShare = 0.85

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "scaler:", err)
		os.Exit(1)
	}
}

// command is one subcommand: usage writes its usage (and flags) to w.
type command struct {
	usage func(w io.Writer)
	run   func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{
	"serve": {serveUsage, func(ctx context.Context, args []string, _, stderr io.Writer) error {
		if err := noArguments("serve", args); err != nil {
			return err
		}
		cfg, err := envconfig.Load(os.Environ())
		if err != nil {
			return err
		}
		logger := cfg.Logger(stderr)
		if limit, soft := host.NewReader(host.ReaderOptions{}).SetRuntimeMemoryLimit(memoryLimitShare); soft > 0 {
			logger.Info("Go runtime memory limit set from the container's", "container_bytes", limit, "gomemlimit_bytes", soft)
		}
		return serve(ctx, cfg, logger, nil)
	}},
	"simulate": {func(w io.Writer) { _ = simcommand.Simulate([]string{"-h"}, w) },
		func(_ context.Context, args []string, stdout, _ io.Writer) error {
			return simcommand.Simulate(args, stdout)
		}},
	"keys": {keysUsage, func(_ context.Context, args []string, stdout, _ io.Writer) error { return runKeys(args, stdout) }},
	"version": {func(w io.Writer) { fmt.Fprintln(w, "usage: scaler version\n  print the version") },
		func(_ context.Context, args []string, stdout, _ io.Writer) error {
			if err := noArguments("version", args); err != nil {
				return err
			}
			_, err := fmt.Fprintln(stdout, buildVersion())
			return err
		}},
}

// run dispatches to a command. -h or --help anywhere in its arguments
// prints its usage and succeeds, whatever else is there; an error in its
// flags or arguments prints the usage to stderr with the error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	name := "serve"
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	if isHelp(name) || name == "help" {
		_, err := fmt.Fprint(stdout, usage)
		return err
	}
	cmd, ok := commands[name]
	if !ok {
		return fmt.Errorf("unknown command %q (allowed: serve, simulate, keys, version)\n%s", name, usage)
	}
	if helpAsked(args) {
		cmd.usage(stdout)
		return nil
	}
	err := cmd.run(ctx, args, stdout, stderr)
	if isUsageError(err) {
		cmd.usage(stderr)
	}
	return err
}

const usage = `usage: scaler [serve | simulate [flags] | keys [--write FILE] | version]
  serve     serve the KEDA external scaler (gRPC) and HTTP endpoints (default)
  simulate  run the decision-quality simulator
  keys      print the trigger-key and environment tables; --write FILE rewrites them in FILE
  version   print the version
scaler COMMAND -h prints a command's usage.
`

func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// helpAsked reports a help flag among the arguments before "--".
func helpAsked(args []string) bool {
	if end := slices.Index(args, "--"); end >= 0 {
		args = args[:end]
	}
	return slices.ContainsFunc(args, isHelp)
}

// usageError is a command's complaint about its flags or arguments.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// isUsageError reports an error in a command's flags or arguments.
func isUsageError(err error) bool {
	return errors.As(err, new(usageError)) || errors.As(err, new(simcommand.UsageError))
}

// noArguments refuses any flag or argument to a command that takes none.
func noArguments(name string, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s: unexpected argument %q", name, args[0])}
	}
	return nil
}

func serveUsage(w io.Writer) {
	fmt.Fprint(w, "usage: scaler serve\n  serve the KEDA external scaler (gRPC) and the HTTP endpoints until SIGTERM,\n  configured by these environment variables (README, Environment):\n")
	envconfig.List(w)
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
