package check

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// TestDockerfile checks what can be checked of the image without a Docker
// engine: the Dockerfile's promises (Go version, static non-root image,
// ports), and that its go build commands succeed on exactly the files
// .dockerignore lets into the build context.
func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := strings.ReplaceAll(string(data), "\\\n", " ")
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(string(gomod))
	for _, want := range []string{
		"ARG GO_VERSION=" + goVersion[1],
		"FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build",
		"CGO_ENABLED=0",
		"FROM gcr.io/distroless/static-debian12:nonroot AS scaler",
		"USER nonroot:nonroot",
		"EXPOSE 6000 8080",
		`ENTRYPOINT ["/barometer"]`,
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile: %q not found", want)
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(df), `CMD ["serve"]`) || strings.LastIndex(df, "\nFROM ") != strings.Index(df, "\nFROM gcr.io/distroless/static-debian12:nonroot AS scaler") {
		t.Error("Dockerfile: the scaler must be the last stage (the default target)")
	}

	if testing.Short() {
		t.Skip("-short: not building the image's binaries from the build context")
	}
	bins := imageBinaries(t)
	if len(bins) != 2 {
		t.Fatalf("Dockerfile: want two go build commands (scaler, demo workload), found %d", len(bins))
	}
	v, err := exec.Command(bins["./cmd/scaler"], "version").Output()
	if err != nil || strings.TrimSpace(string(v)) != "check" {
		t.Errorf("scaler version = %q, %v; want the -X main.version value", v, err)
	}
}

var (
	binariesOnce sync.Once
	binaries     map[string]string // package ("./cmd/scaler") to executable
	binariesErr  error
)

// imageBinaries runs the Dockerfile's go build commands (VERSION=check) on
// the files .dockerignore admits, once per test binary.
func imageBinaries(t *testing.T) map[string]string {
	t.Helper()
	binariesOnce.Do(func() { binaries, binariesErr = buildImageBinaries(repoRoot(t)) })
	if binariesErr != nil {
		t.Fatal(binariesErr)
	}
	return binaries
}

func buildImageBinaries(root string) (map[string]string, error) {
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		return nil, err
	}
	df := strings.ReplaceAll(string(data), "\\\n", " ")
	ctx, err := buildContext(root, filepath.Join(scratch, "context"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, b := range regexp.MustCompile(`go build (-trimpath -ldflags "[^"]*") -o (\S+) (\./\S+)`).FindAllStringSubmatch(df, -1) {
		flags := strings.ReplaceAll(b[1], "${VERSION}", "check")
		ldflags := strings.Trim(strings.TrimPrefix(flags, "-trimpath -ldflags "), `"`)
		exe := filepath.Join(scratch, "bin", filepath.Base(b[2]))
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", exe, b[3])
		cmd.Dir = ctx
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "GOWORK=off")
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("in the build context (.dockerignore applied): go build %s %s: %v\n%s", flags, b[3], err, msg)
		}
		out[b[3]] = exe
	}
	return out, nil
}

// buildContext copies the files .dockerignore admits into dst.
func buildContext(root, dst string) (string, error) {
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		return "", err
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return "", err
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		skip, err := pm.MatchesOrParentMatches(rel)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel == ".git" || (skip && !pm.Exclusions()) {
				return fs.SkipDir
			}
			return nil
		}
		if skip || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		return "", err
	}
	for _, must := range []string{"go.mod", "go.sum", "cmd/scaler/main.go"} {
		if _, err := os.Stat(filepath.Join(dst, must)); err != nil {
			return "", fmt.Errorf(".dockerignore leaves %s out of the build context", must)
		}
	}
	for _, never := range []string{"charts", "tools", "examples/check", ".ci", ".git"} {
		if _, err := os.Stat(filepath.Join(dst, never)); err == nil {
			return "", fmt.Errorf(".dockerignore lets %s into the build context", never)
		}
	}
	return dst, nil
}
