package testbin

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A child that exits before it is ready is reported with what it printed,
// which is how a harness's failure says why the server did not start.
func TestAbortCarriesTheChildsOutput(t *testing.T) {
	p, err := Start("/bin/sh", "-c", "echo 'bad flag --x' >&2; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	err = p.Abort(errors.New("sh exited before it was ready"))
	if msg := err.Error(); !strings.Contains(msg, "sh exited before it was ready") ||
		!strings.Contains(msg, "sh output:\nbad flag --x") {
		t.Errorf("error = %q, want the cause and the child's output", msg)
	}
}

// Stop ends a child that runs until told, with SIGTERM.
func TestStopEndsTheChild(t *testing.T) {
	p, err := Start("/bin/sh", "-c", "echo started; exec sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	p.Stop()
	select {
	case <-p.Exited():
	default:
		t.Fatal("Stop returned before the child exited")
	}
}

func TestFindLooksOnlyAtTheEnvironmentWhenSet(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "server")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TESTBIN_SERVER", "")
	if got, err := Find("server", "TESTBIN_SERVER", filepath.Join(dir, "missing"), bin); err != nil || got != bin {
		t.Errorf("Find = %q, %v; want the first candidate that exists, %s", got, err, bin)
	}
	t.Setenv("TESTBIN_SERVER", filepath.Join(dir, "elsewhere"))
	if _, err := Find("server", "TESTBIN_SERVER", bin); err == nil || !strings.Contains(err.Error(), "$TESTBIN_SERVER=") {
		t.Errorf("Find with $TESTBIN_SERVER set to a missing file = %v, want an error naming it, not the candidate", err)
	}
	t.Setenv("TESTBIN_SERVER", "")
	_, err := Find("server", "TESTBIN_SERVER", filepath.Join(dir, "missing"), "no-such-server-binary")
	if err == nil || !strings.Contains(err.Error(), "looked at $TESTBIN_SERVER, "+filepath.Join(dir, "missing")+", no-such-server-binary on $PATH") {
		t.Errorf("Find with nothing there = %v, want an error listing where it looked", err)
	}
}

// needHelperEnv makes TestNeedHelper, run as a child of TestNeed, call
// Need with a binary that is missing.
const needHelperEnv = "TESTBIN_NEED_HELPER"

func TestNeedHelper(t *testing.T) {
	if os.Getenv(needHelperEnv) == "" {
		t.Skip("run by TestNeed")
	}
	Need(t, func() (string, error) { return "", errors.New("server binary not found") }, "install-server.sh")
	t.Log("Need returned")
}

// A missing binary fails the test under CI, so a CI that lost it cannot
// go green by skipping, and skips it elsewhere. The test that calls Need
// runs in a child test binary, whose verdict is read from its output.
func TestNeed(t *testing.T) {
	for _, tc := range []struct {
		ci       string
		wantFail bool
	}{{"true", true}, {"1", true}, {"", false}, {"false", false}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNeedHelper$", "-test.v")
		cmd.Env = append(os.Environ(), needHelperEnv+"=1", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		failed := strings.Contains(string(out), "--- FAIL: TestNeedHelper")
		skipped := strings.Contains(string(out), "--- SKIP: TestNeedHelper")
		if failed != (err != nil) || failed != tc.wantFail || skipped == tc.wantFail ||
			!strings.Contains(string(out), "install it with: install-server.sh") || strings.Contains(string(out), "Need returned") {
			t.Errorf("CI=%q: want failed %v, got exit %v and output:\n%s", tc.ci, tc.wantFail, err, out)
		}
	}
}
