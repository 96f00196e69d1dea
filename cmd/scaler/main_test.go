package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every command answers -h and --help with its usage on stdout and
// succeeds, doing nothing else: serve starts no server (the test's context
// is never cancelled, so a server would hang it), keys writes no file.
func TestEveryCommandAnswersHelp(t *testing.T) {
	for name, want := range map[string]string{
		"serve": "BAROMETER_GRPC_ADDR", "keys": "--write", "simulate": "usage: scaler simulate", "version": "usage: scaler version",
	} {
		for _, help := range []string{"-h", "--help"} {
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), []string{name, help}, &stdout, &stderr); err != nil {
				t.Errorf("scaler %s %s: %v", name, help, err)
			}
			if !strings.Contains(stdout.String(), want) || !strings.HasPrefix(stdout.String(), "usage: scaler "+name) {
				t.Errorf("scaler %s %s printed %q, want its usage naming %s", name, help, stdout.String(), want)
			}
		}
	}
}

// A flag or argument a command does not take prints its usage and the
// error, and fails; it never runs the command.
func TestUnknownFlagsPrintUsage(t *testing.T) {
	for _, args := range [][]string{{"simulate", "--nope"}, {"keys", "--nope"}, {"serve", "--nope"}, {"serve", "extra"}, {"version", "now"}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		if err == nil || !strings.Contains(stderr.String(), "usage: scaler "+args[0]) {
			t.Errorf("scaler %s: err %v, stderr %q; want an error and the usage", strings.Join(args, " "), err, stderr.String())
		}
	}
}

// keys rewrites a file only with --write, and only a file that holds the
// generated tables' markers; an argument alone (a typo, or the old form)
// is refused and the file left as it was.
func TestKeysWritesOnlyWithWrite(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stale := bytes.Replace(readme, []byte("| `BAROMETER_GRPC_ADDR` |"), []byte("| `BAROMETER_OLD` |"), 1)
	doc, notes := filepath.Join(dir, "README.md"), filepath.Join(dir, "notes.md")
	for path, text := range map[string][]byte{doc: stale, notes: []byte("# notes\n")} {
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"keys", doc}, &bytes.Buffer{}, &stderr); err == nil || !strings.Contains(err.Error(), "--write") {
		t.Errorf("keys FILE: %v; want it refused, pointing at --write", err)
	}
	err = run(context.Background(), []string{"keys", "--write", notes}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), notes) {
		t.Errorf("keys --write on a file without markers: %v; want it refused, naming the file", err)
	}
	if got, _ := os.ReadFile(notes); string(got) != "# notes\n" {
		t.Errorf("a file without markers was rewritten: %q", got)
	}
	if got, _ := os.ReadFile(doc); !bytes.Equal(got, stale) {
		t.Error("keys FILE rewrote FILE")
	}
	if err := run(context.Background(), []string{"keys", "--write", doc}, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(doc); !bytes.Equal(got, readme) {
		t.Error("keys --write did not regenerate the tables")
	}
}
