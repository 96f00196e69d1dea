// Command helmnotes renders a chart's NOTES.txt without a cluster, the way
// `helm template` renders its manifests (which leaves the notes out, while
// `helm install --dry-run` needs a reachable API server).
//
//	go tool helmnotes [-n namespace] [-f values.yaml]... [--kube-version v] release chart
//
// .ci/charts.sh uses it so the ScaledObject that NOTES.txt prints is checked
// as strictly as the examples.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
)

type valueFiles []string

func (v *valueFiles) String() string     { return strings.Join(*v, ",") }
func (v *valueFiles) Set(s string) error { *v = append(*v, s); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "helmnotes:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("helmnotes", flag.ContinueOnError)
	namespace := fs.String("n", "default", "the release's namespace")
	kubeVersion := fs.String("kube-version", "", "the Kubernetes version for Capabilities.KubeVersion")
	var files valueFiles
	fs.Var(&files, "f", "a values file (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return fmt.Errorf("usage: helmnotes [-n namespace] [-f values.yaml]... [-kube-version v] release chart")
	}
	release, chartPath := fs.Arg(0), fs.Arg(1)

	chrt, err := loader.Load(chartPath)
	if err != nil {
		return fmt.Errorf("load chart: %w", err)
	}
	opts := values.Options{ValueFiles: files}
	vals, err := opts.MergeValues(getter.All(cli.New()))
	if err != nil {
		return fmt.Errorf("values: %w", err)
	}

	cfg := &action.Configuration{Log: func(string, ...interface{}) {}}
	install := action.NewInstall(cfg)
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = release
	install.Namespace = *namespace
	if *kubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(*kubeVersion)
		if err != nil {
			return fmt.Errorf("kube-version: %w", err)
		}
		install.KubeVersion = kv
	}
	rel, err := install.Run(chrt, vals)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	_, err = fmt.Print(rel.Info.Notes)
	return err
}
