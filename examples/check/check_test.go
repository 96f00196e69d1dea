package check

import (
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Environment variables .ci/charts.sh sets: lists of files separated by the
// OS's path-list separator (':').
const (
	renderedEnv = "BAROMETER_CHECK_RENDERED" // helm template output
	notesEnv    = "BAROMETER_CHECK_NOTES"    // rendered NOTES.txt
)

// scratch holds what the tests build (the image's binaries, their build
// context) and is removed when they end.
var scratch string

func TestMain(m *testing.M) {
	// KEDA's validation functions log through controller-runtime.
	ctrllog.SetLogger(logr.Discard())
	var err error
	if scratch, err = os.MkdirTemp("", "barometer-check-"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(scratch)
	os.Exit(code)
}

var (
	checkerOnce sync.Once
	checker     *Checker
	checkerErr  error
)

func newChecker(t *testing.T) *Checker {
	t.Helper()
	checkerOnce.Do(func() { checker, checkerErr = NewChecker(repoRoot(t)) })
	if checkerErr != nil {
		t.Fatal(checkerErr)
	}
	return checker
}

// repoRoot is the main module's directory: two levels up.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.Contains(string(data), "module github.com/barometer-scaler/barometer\n") {
		t.Fatalf("%s is not the barometer module's root", root)
	}
	return root
}

// exampleDocs decodes every YAML document under examples/.
func exampleDocs(t *testing.T) []*Document {
	t.Helper()
	root := repoRoot(t)
	var docs []*Document
	var files int
	err := filepath.WalkDir(filepath.Join(root, "examples"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return fs.SkipDir
		}
		if d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return nil
		}
		files++
		rel, _ := filepath.Rel(root, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		ds, err := Decode(rel, data)
		if err != nil {
			t.Error(err)
		}
		docs = append(docs, ds...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no YAML files under examples/")
	}
	return docs
}

func envFiles(name string) []string {
	var out []string
	for f := range strings.SplitSeq(os.Getenv(name), string(os.PathListSeparator)) {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

func report(t *testing.T, errs []error) {
	t.Helper()
	for _, err := range errs {
		t.Error(err)
	}
}

// TestExamples decodes every example strictly and checks it, references
// included; it also requires the examples the README names, so none
// disappears unnoticed.
func TestExamples(t *testing.T) {
	c := newChecker(t)
	docs := exampleDocs(t)
	report(t, c.Check(docs, Options{References: true}))

	want := map[string]bool{
		"ScaledObject with an external trigger":                 false,
		"ScaledObject with an external-push trigger":            false,
		"ScaledObject with a metrics-api trigger on GET /scale": false,
		"ScaledObject authenticated by a TriggerAuthentication": false,
		"Deployment":       false,
		"headless Service": false,
	}
	for _, d := range docs {
		switch o := d.Object.(type) {
		case *kedav1alpha1.ScaledObject:
			for _, tr := range o.Spec.Triggers {
				switch tr.Type {
				case "external":
					want["ScaledObject with an external trigger"] = true
				case "external-push":
					want["ScaledObject with an external-push trigger"] = true
				case "metrics-api":
					if u, err := url.Parse(tr.Metadata["url"]); err == nil && strings.HasPrefix(u.Path, "/scale") {
						want["ScaledObject with a metrics-api trigger on GET /scale"] = true
					}
				}
				if tr.AuthenticationRef != nil && barometerTriggers[tr.Type] {
					want["ScaledObject authenticated by a TriggerAuthentication"] = true
				}
			}
		case *appsv1.Deployment:
			want["Deployment"] = true
		case *corev1.Service:
			if o.Spec.ClusterIP == corev1.ClusterIPNone {
				want["headless Service"] = true
			}
		}
	}
	for what, found := range want {
		if !found {
			t.Errorf("examples/ has no %s", what)
		}
	}

	// With the chart rendered, the examples' addresses must name its
	// Services.
	chart := renderedChart(t)
	if chart == nil {
		return
	}
	checkChartServices(t, docs, chart)
	err := filepath.WalkDir(filepath.Join(repoRoot(t), "examples"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return err
		}
		rel, _ := filepath.Rel(repoRoot(t), path)
		checkNamedServices(t, rel, chart)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestREADME checks the ScaledObjects the README shows as strictly as the
// examples (the same rules: a source that reads the workload, the
// recommended HPA behavior), and, with the chart rendered, every address
// of the scaler the README names, in a manifest, a fragment or a command.
func TestREADME(t *testing.T) {
	c := newChecker(t)
	root := repoRoot(t)
	docs, err := ReadMarkdown(filepath.Join(root, "README.md"), "README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(docs, func(d *Document) bool { return d.GVK.Kind == "ScaledObject" }) {
		t.Fatal("README.md shows no ScaledObject")
	}
	report(t, c.Check(docs, Options{}))
	chart := renderedChart(t)
	if chart == nil {
		return
	}
	checkChartServices(t, docs, chart)
	checkNamedServices(t, "README.md", chart)
}

// renderedChart decodes the helm template output .ci/charts.sh wrote: every
// values file's, so a Service that only some values render (the OTLP
// receiver's) is found. Nil when the chart was not rendered.
func renderedChart(t *testing.T) []*Document {
	t.Helper()
	rendered := envFiles(renderedEnv)
	if len(rendered) == 0 {
		t.Logf("%s not set: addresses are not checked against the chart (.ci/charts.sh sets it)", renderedEnv)
		return nil
	}
	var chart []*Document
	for _, f := range rendered {
		ds, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		chart = append(chart, ds...)
	}
	return chart
}

// checkChartServices requires every ScaledObject's Barometer address to
// name a Service of the chart: scalerAddress the headless gRPC Service, a
// metrics-api url the HTTP Service.
func checkChartServices(t *testing.T, docs, chart []*Document) {
	t.Helper()
	for _, d := range docs {
		so, ok := d.Object.(*kedav1alpha1.ScaledObject)
		if !ok {
			continue
		}
		for _, tr := range so.Spec.Triggers {
			var addr string
			var headless bool
			switch {
			case barometerTriggers[tr.Type]:
				addr, headless = tr.Metadata["scalerAddress"], true
			case tr.Type == "metrics-api":
				u, err := url.Parse(tr.Metadata["url"])
				if err != nil {
					continue
				}
				addr = u.Host
			default:
				continue
			}
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				t.Errorf("%s: %s address %q: %v", d.Where(), tr.Type, addr, err)
				continue
			}
			name, ns, ok := ServiceHost(host)
			if !ok {
				t.Errorf("%s: %s address %q: not a cluster Service name", d.Where(), tr.Type, addr)
				continue
			}
			svc := FindService(chart, name, ns)
			switch {
			case svc == nil:
				t.Errorf("%s: %s address %q: the rendered chart has no Service %s/%s", d.Where(), tr.Type, addr, ns, name)
			case headless && svc.Spec.ClusterIP != corev1.ClusterIPNone:
				t.Errorf("%s: scalerAddress %q: Service %s/%s is not headless; KEDA's round_robin needs every replica's address", d.Where(), addr, ns, name)
			case !ServicePort(svc, port):
				t.Errorf("%s: %s address %q: Service %s/%s has no port %s", d.Where(), tr.Type, addr, ns, name, port)
			}
		}
	}
}

// scalerHost is an address of the chart's release "barometer" in namespace
// barometer, as prose, commands and configuration name it.
var scalerHost = regexp.MustCompile(`\b(barometer[a-z0-9-]*)\.barometer\.svc(?:\.cluster\.local)?:([0-9]+)`)

// checkNamedServices requires every address of the scaler a file names
// anywhere (a trigger fragment, a collector's exporter, a curl) to be a
// Service and port of the chart.
func checkNamedServices(t *testing.T, rel string, chart []*Document) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		for _, m := range scalerHost.FindAllStringSubmatch(line, -1) {
			svc := FindService(chart, m[1], "barometer")
			switch {
			case svc == nil:
				t.Errorf("%s:%d: %s: the rendered chart has no Service barometer/%s", rel, i+1, m[0], m[1])
			case !ServicePort(svc, m[2]):
				t.Errorf("%s:%d: %s: Service barometer/%s has no port %s", rel, i+1, m[0], m[1], m[2])
			}
		}
	}
}

// TestRendered checks each file of helm template output on its own.
func TestRendered(t *testing.T) {
	files := envFiles(renderedEnv)
	if len(files) == 0 {
		t.Skipf("%s not set (.ci/charts.sh renders the chart and sets it)", renderedEnv)
	}
	c := newChecker(t)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			docs, err := ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			report(t, c.Check(docs, Options{References: true}))
			kinds := map[string]int{}
			services := 2 // gRPC, HTTP; and the OTLP receiver's and its peers' when on
			for _, d := range docs {
				kinds[d.GVK.Kind]++
				if svc, ok := d.Object.(*corev1.Service); ok && (svc.Labels["barometer/service"] == "otlp" || svc.Labels["barometer/service"] == "peers") {
					services++
				}
			}
			if kinds["Deployment"] != 1 || kinds["Service"] != services {
				t.Errorf("want one Deployment and %d Services (gRPC, HTTP, OTLP and its peers when on), got %v", services, kinds)
			}
		})
	}
}

// TestNotes checks the manifests NOTES.txt tells the user to write.
func TestNotes(t *testing.T) {
	files := envFiles(notesEnv)
	if len(files) == 0 {
		t.Skipf("%s not set (.ci/charts.sh renders NOTES.txt and sets it)", notesEnv)
	}
	c := newChecker(t)
	chart := renderedChart(t)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			docs, err := ReadNotes(f)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(docs, func(d *Document) bool { return d.GVK.Kind == "ScaledObject" }) {
				t.Fatal("NOTES.txt shows no ScaledObject")
			}
			report(t, c.Check(docs, Options{}))
			if chart != nil {
				checkChartServices(t, docs, chart)
			}
		})
	}
}

// TestREADMENamesKEDAKeys: the keys KEDA's external scaler reads from
// trigger metadata are the ones the README says the scaler accepts and
// ignores.
func TestREADMENamesKEDAKeys(t *testing.T) {
	c := newChecker(t)
	got := slices.Sorted(slices.Values(c.Docs.KEDAKeys))
	want := c.External["triggerMetadata"]
	if !slices.Equal(got, want) {
		t.Errorf("README's KEDA keys %v; KEDA %s's external scaler reads %v", got, c.KEDA.Dir, want)
	}
	if len(c.External["authParams"]) == 0 || len(c.MetricsAPI["triggerMetadata"]) == 0 {
		t.Errorf("no keys read from KEDA's scalers: external %v, metrics-api %v", c.External, c.MetricsAPI)
	}
}
