// Command scaler is Barometer: a KEDA external scaler and metrics service.
//
//	scaler [serve]              serve the gRPC scaler and the HTTP endpoints (default)
//	scaler simulate ...         run the decision-quality simulator
//	scaler keys [--write FILE]  print the reference tables, or rewrite them in FILE
//	scaler version              print the version
//
// Every command answers -h or --help with its usage. Configuration comes
// from BAROMETER_* environment variables; see the README.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/barometer-scaler/barometer/pkg/envconfig"
)

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
	"serve": {usage: serveUsage, run: func(ctx context.Context, args []string, _, stderr io.Writer) error {
		if err := noArguments("serve", args); err != nil {
			return err
		}
		cfg, err := envconfig.Load(os.Environ())
		if err != nil {
			return err
		}
		return serve(ctx, cfg, newLogger(cfg, stderr), nil)
	}},
	"simulate": {
		usage: func(w io.Writer) { _ = runSimulate([]string{"-h"}, w) },
		run:   func(_ context.Context, args []string, stdout, _ io.Writer) error { return runSimulate(args, stdout) },
	},
	"keys": {usage: keysUsage, run: func(_ context.Context, args []string, stdout, _ io.Writer) error { return runKeys(args, stdout) }},
	"version": {usage: func(w io.Writer) { fmt.Fprintln(w, "usage: scaler version\n  print the version") },
		run: func(_ context.Context, args []string, stdout, _ io.Writer) error {
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

// isUsageError reports an error in a command's flags or arguments: a
// usageError, or one of package flag's own errors, which the simulator's
// parser returns wrapped (they have no type to match, only their text).
func isUsageError(err error) bool {
	if err == nil {
		return false
	}
	if errors.As(err, new(usageError)) {
		return true
	}
	for _, text := range []string{"flag provided but not defined: ", "invalid value ", "invalid boolean value ",
		"invalid boolean flag ", "bad flag syntax: ", "flag needs an argument: "} {
		if strings.Contains(err.Error(), text) {
			return true
		}
	}
	return false
}

// noArguments refuses any argument to a command that takes none.
func noArguments(name string, args []string) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return usageError{fmt.Errorf("%s: %w", name, err)}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("%s: unexpected argument %q", name, fs.Arg(0))}
	}
	return nil
}

// serveUsage lists the environment serve is configured by.
func serveUsage(w io.Writer) {
	fmt.Fprint(w, "usage: scaler serve\n"+
		"  serve the KEDA external scaler (gRPC) and the HTTP endpoints until SIGTERM,\n"+
		"  configured by these environment variables (README, Environment):\n")
	for _, v := range envconfig.Vars() {
		def := v.Default
		if def == "" {
			def = "(none)"
		}
		fmt.Fprintf(w, "  %s, default %s\n    \t%s", v.Name, def, v.Doc)
		if v.Allowed != "" {
			fmt.Fprintf(w, "; %s", v.Allowed)
		}
		fmt.Fprintln(w)
	}
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
