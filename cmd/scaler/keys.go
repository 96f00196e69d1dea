package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/envconfig"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// keysFlags are `scaler keys`'s flags; write is the file to rewrite.
func keysFlags() (fs *flag.FlagSet, write *string) {
	fs = flag.NewFlagSet("keys", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	write = fs.String("write", "", "rewrite the generated tables of `FILE` (README.md), between its <!-- keys:NAME --> and <!-- env --> markers; a file without them is refused")
	return fs, write
}

func keysUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: scaler keys [--write FILE]\n  print the trigger-key and environment tables, generated from what the scaler parses")
	fs, _ := keysFlags()
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// runKeys is `scaler keys`: the trigger-key and environment reference,
// generated from the schema and the configuration the server parses
// with. Only --write rewrites a file, and only one holding every table's
// markers: a stray argument is refused, not taken for a file.
func runKeys(args []string, stdout io.Writer) error {
	fs, write := keysFlags()
	if err := fs.Parse(args); err != nil {
		return usageError{fmt.Errorf("keys: %w", err)}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("keys: unexpected argument %q (to rewrite a file's tables: --write %s)", fs.Arg(0), fs.Arg(0))}
	}
	schema := newSchema(allow.Default(), nil, scrape.Kube{}, nil, nil)
	if *write == "" {
		for _, name := range []string{trigger.TableCommon, trigger.TablePressure, trigger.TableSources, trigger.TablePolicies} {
			table, err := schema.Table(name)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(stdout, "%s keys:\n\n%s\n", name, table); err != nil {
				return err
			}
		}
		_, err := fmt.Fprintf(stdout, "environment:\n\n%s", envconfig.Table())
		return err
	}
	return rewriteTables(*write, schema)
}

// rewriteTables rewrites the generated tables in path, which must hold
// the markers of every one of them.
func rewriteTables(path string, schema *trigger.Schema) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	out := doc
	for _, update := range []func([]byte) ([]byte, bool, error){schema.UpdateDocs, envconfig.UpdateDocs} {
		if out, _, err = update(out); err != nil {
			return fmt.Errorf("keys: %s is not a file with the generated tables: %w", path, err)
		}
	}
	if bytes.Equal(out, doc) {
		return nil
	}
	return os.WriteFile(path, out, 0o644)
}
