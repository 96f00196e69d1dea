// Command scaler is Barometer: a KEDA external scaler and metrics service.
//
//	scaler [serve]      serve the gRPC scaler and the HTTP endpoints (default)
//	scaler simulate ... run the decision-quality simulator
//	scaler keys [FILE]  print the trigger-key tables, or rewrite them in FILE
//	scaler version      print the version
//
// Configuration comes from BAROMETER_* environment variables; see the README.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
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

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		cfg, err := envconfig.Load(os.Environ())
		if err != nil {
			return err
		}
		return serve(ctx, cfg, newLogger(cfg, stderr), nil)
	case "simulate":
		return runSimulate(args, stdout)
	case "keys":
		return runKeys(args, stdout)
	case "version":
		_, err := fmt.Fprintln(stdout, buildVersion())
		return err
	case "help", "-h", "--help":
		_, err := fmt.Fprint(stdout, usage)
		return err
	default:
		return fmt.Errorf("unknown command %q (allowed: serve, simulate, keys, version)\n%s", cmd, usage)
	}
}

const usage = `usage: scaler [serve | simulate [flags] | keys [FILE] | version]
  serve     serve the KEDA external scaler (gRPC) and HTTP endpoints (default)
  simulate  run the decision-quality simulator (scaler simulate -h for flags)
  keys      print the trigger-key tables; with FILE (README.md), rewrite its generated tables
  version   print the version
`

func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
