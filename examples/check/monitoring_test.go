package check

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/yaml"
)

// rulesEnv names the PrometheusRule rendered with the chart's defaults, the
// one testdata/alerts-test.yaml is written against (.ci/charts.sh sets it).
const rulesEnv = "BAROMETER_CHECK_RULES"

// dashboardFile is the Grafana dashboard the chart ships.
const dashboardFile = "charts/barometer/dashboards/barometer.json"

// TestPrometheusRules runs every rendered PrometheusRule's groups through
// promtool check rules, and the default one through the unit tests of
// testdata/alerts-test.yaml, which must test every alert both firing and
// silent.
func TestPrometheusRules(t *testing.T) {
	defaults := envFiles(rulesEnv)
	if len(defaults) == 0 {
		t.Skipf("%s not set: no rendered PrometheusRule to check (.ci/charts.sh sets it)", rulesEnv)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (.ci/install-prometheus.sh installs Debian's prometheus package, which ships it): %v", err)
	}
	var checked int
	for _, f := range append(envFiles(renderedEnv), defaults...) {
		for _, r := range prometheusRules(t, f) {
			path := writeRuleGroups(t, t.TempDir(), r)
			promtoolRun(t, promtool, "check", "rules", path)
			checked++
		}
	}
	if checked < 2 {
		t.Fatalf("checked %d PrometheusRules; want the default one and one from a ci/*-values.yaml", checked)
	}

	rules := prometheusRules(t, defaults[0])
	if len(rules) != 1 {
		t.Fatalf("%s: want one PrometheusRule, found %d", defaults[0], len(rules))
	}
	dir := t.TempDir()
	writeRuleGroups(t, dir, rules[0])
	test, err := os.ReadFile(filepath.Join("testdata", "alerts-test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts-test.yaml"), test, 0o644); err != nil {
		t.Fatal(err)
	}
	promtoolRun(t, promtool, "test", "rules", filepath.Join(dir, "alerts-test.yaml"))

	// Every alert is tested firing and silent.
	var unit struct {
		Tests []struct {
			Alerts []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(test, &unit); err != nil {
		t.Fatal(err)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range unit.Tests {
		for _, a := range tc.Alerts {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	for _, g := range rules[0].Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if !fires[r.Alert] {
				t.Errorf("testdata/alerts-test.yaml: no case where %s fires", r.Alert)
			}
			if !silent[r.Alert] {
				t.Errorf("testdata/alerts-test.yaml: no case where %s stays silent", r.Alert)
			}
		}
	}
}

func prometheusRules(t *testing.T, file string) []*monitoringv1.PrometheusRule {
	t.Helper()
	docs, err := ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []*monitoringv1.PrometheusRule
	for _, d := range docs {
		if r, ok := d.Object.(*monitoringv1.PrometheusRule); ok {
			out = append(out, r)
		}
	}
	return out
}

// writeRuleGroups writes a PrometheusRule's groups as a Prometheus rule
// file, dir/rules.yaml, as the operator hands them to Prometheus.
func writeRuleGroups(t *testing.T, dir string, r *monitoringv1.PrometheusRule) string {
	t.Helper()
	data, err := yaml.Marshal(map[string]any{"groups": r.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func promtoolRun(t *testing.T, promtool string, args ...string) {
	t.Helper()
	out, err := exec.Command(promtool, args...).CombinedOutput()
	if err != nil {
		t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// dashboard is the part of Grafana's dashboard model the checks read.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"` // a string, or {query: ...}
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"` // a collapsed row's
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// promQL is one PromQL expression of the dashboard or the rules, with the
// place it comes from.
type promQL struct{ where, expr string }

// dashboardExprs reads the dashboard and returns its PromQL: every panel
// target, and the expression inside each query variable's label_values().
func dashboardExprs(t *testing.T) (*dashboard, []promQL) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(data) {
		t.Fatalf("%s: not valid JSON", dashboardFile)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var exprs []promQL
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, tg := range p.Targets {
				exprs = append(exprs, promQL{fmt.Sprintf("panel %d %q target %s", p.ID, p.Title, tg.RefID), tg.Expr})
			}
		}
	}
	walk(d.Panels)
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		if m := labelValues.FindStringSubmatch(q); m != nil {
			exprs = append(exprs, promQL{fmt.Sprintf("variable %s", v.Name), m[1]})
		} else {
			t.Errorf("%s: variable %s: query %q is not label_values(<PromQL>, <label>)", dashboardFile, v.Name, q)
		}
	}
	return &d, exprs
}

// grafanaVar is a dashboard variable: $name or ${name}.
var grafanaVar = regexp.MustCompile(`\$\{?([a-zA-Z_][a-zA-Z0-9_]*)\}?`)

// parsePromQL parses an expression with Prometheus' own parser, Grafana's
// variables replaced as Grafana would: intervals by a duration, the
// dashboard's own variables (which stand inside =~ matchers) by a regexp.
func parsePromQL(q promQL) (parser.Expr, error) {
	expr := grafanaVar.ReplaceAllStringFunc(q.expr, func(v string) string {
		name := grafanaVar.FindStringSubmatch(v)[1]
		if strings.HasPrefix(name, "__") {
			return "5m" // $__rate_interval, $__interval, $__range
		}
		return ".*"
	})
	// Default options: no experimental syntax, as a stock Prometheus parses.
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("%s: %q: %w", q.where, q.expr, err)
	}
	return e, nil
}

// metricNames returns the metric names an expression selects.
func metricNames(e parser.Expr) []string {
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel {
					name = m.Value
				}
			}
			if name != "" && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		return nil
	})
	return names
}

// TestDashboard checks the Grafana dashboard: valid JSON, panels with
// queries, every PromQL expression parsed by Prometheus' parser, and the
// chart's ConfigMap carrying exactly this file.
func TestDashboard(t *testing.T) {
	d, exprs := dashboardExprs(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("%s: uid and title are required (the sidecar keys dashboards by uid)", dashboardFile)
	}
	ids := map[int]bool{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("%s: panel id %d used twice", dashboardFile, p.ID)
			}
			ids[p.ID] = true
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("%s: panel %d %q has no query", dashboardFile, p.ID, p.Title)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	if len(exprs) == 0 {
		t.Fatalf("%s: no PromQL found", dashboardFile)
	}
	for _, q := range exprs {
		if _, err := parsePromQL(q); err != nil {
			t.Errorf("%s: %v", dashboardFile, err)
		}
	}

	rendered := envFiles(renderedEnv)
	if len(rendered) == 0 {
		t.Logf("%s not set: the chart's dashboard ConfigMap is not checked (.ci/charts.sh sets it)", renderedEnv)
		return
	}
	want, err := os.ReadFile(filepath.Join(repoRoot(t), dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var found int
	for _, f := range rendered {
		docs, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range docs {
			if strings.HasSuffix(doc.Meta().Name, "-dashboard") && doc.GVK.Kind == "ConfigMap" {
				found++
				cm := doc.JSON
				var obj struct {
					Metadata struct {
						Labels map[string]string `json:"labels"`
					} `json:"metadata"`
					Data map[string]string `json:"data"`
				}
				if err := json.Unmarshal(cm, &obj); err != nil {
					t.Fatal(err)
				}
				if got := obj.Data["barometer.json"]; strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
					t.Errorf("%s: data[barometer.json] is not %s", doc.Where(), dashboardFile)
				}
				if obj.Metadata.Labels["grafana_dashboard"] != "1" {
					t.Errorf("%s: no grafana_dashboard: \"1\" label for the sidecar", doc.Where())
				}
			}
		}
	}
	if found == 0 {
		t.Error("no rendered values file enables grafanaDashboard: the ConfigMap is never rendered")
	}
}

// TestMonitoringNamesExposedMetrics starts the scaler as the image builds
// it, with what makes every metric appear (TLS, a target that samples, a
// scrape target whose replica is down, a GetMetrics call answered and one
// refused), and requires every metric the dashboard and the alerts select
// to be among those its /metrics serves.
func TestMonitoringNamesExposedMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not starting the scaler")
	}
	uses := map[string][]string{} // metric name to where it is used
	_, exprs := dashboardExprs(t)
	rules := envFiles(rulesEnv)
	if len(rules) == 0 {
		t.Logf("%s not set: the alerts' metric names are not checked (.ci/charts.sh sets it)", rulesEnv)
	} else {
		for _, r := range prometheusRules(t, rules[0]) {
			for _, g := range r.Spec.Groups {
				for _, rule := range g.Rules {
					exprs = append(exprs, promQL{"alert " + rule.Alert, rule.Expr.String()})
				}
			}
		}
	}
	for _, q := range exprs {
		e, err := parsePromQL(q)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, n := range metricNames(e) {
			uses[n] = append(uses[n], q.where)
		}
	}

	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	down := freeAddr(t) // nothing listens: every scrape of it fails
	grpcAddr, httpAddr := startScaler(t,
		"BAROMETER_TLS_CERT_FILE="+certFile, "BAROMETER_TLS_KEY_FILE="+keyFile,
		"BAROMETER_ALLOWED_TARGETS=127.0.0.1")
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := externalscaler.NewExternalScalerClient(conn)
	call := func(name string, md map[string]string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := client.GetMetrics(ctx, &externalscaler.GetMetricsRequest{
			ScaledObjectRef: &externalscaler.ScaledObjectRef{Name: name, Namespace: "check", ScalerMetadata: md},
			MetricName:      "barometer-pressure", // the scaler's default metricName
		})
		return err
	}
	if err := call("host", map[string]string{"source": "host"}); err != nil {
		t.Fatalf("GetMetrics on the host source: %v", err)
	}
	if err := call("down", map[string]string{"source": "scrape", "targets": "http://" + down + "/metrics"}); status.Code(err) != codes.Unavailable {
		t.Fatalf("GetMetrics on a scrape target that is down: %v, want Unavailable", err)
	}

	// Series appear as samples happen: wait for all of them, then report
	// the ones still missing.
	var exposed map[string]*dto.MetricFamily
	var missing []string
	deadline := time.Now().Add(15 * time.Second)
	for {
		exposed = scrapeMetrics(t, "http://"+httpAddr+"/metrics")
		missing = missing[:0]
		for name := range uses {
			if !hasMetric(exposed, name) {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	slices.Sort(missing)
	for _, name := range missing {
		t.Errorf("%s is not served by /metrics, but is used by: %s", name, strings.Join(uses[name], "; "))
	}
	t.Logf("%d metric names used by the dashboard and the alerts, all served", len(uses))
}

// hasMetric reports whether /metrics serves name, counting a histogram's
// or summary's _bucket, _sum and _count series.
func hasMetric(fams map[string]*dto.MetricFamily, name string) bool {
	if _, ok := fams[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f, ok := fams[base]; ok && (f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY) {
				return suffix != "_bucket" || f.GetType() == dto.MetricType_HISTOGRAM
			}
		}
	}
	return false
}

func scrapeMetrics(t *testing.T, u string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return fams
}

// startScaler runs the scaler built as the image builds it, on free
// loopback ports, with env added to the test's environment, until the test
// ends; it returns once /livez answers.
func startScaler(t *testing.T, env ...string) (grpcAddr, httpAddr string) {
	t.Helper()
	bin := imageBinaries(t)["./cmd/scaler"]
	grpcAddr, httpAddr = freeAddr(t), freeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(append(os.Environ(), "BAROMETER_GRPC_ADDR="+grpcAddr, "BAROMETER_HTTP_ADDR="+httpAddr,
		"BAROMETER_LOG_LEVEL=error", "BAROMETER_SAMPLE_INTERVAL=200ms"), env...)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("scaler output:\n%s", logs.String())
		}
	})
	waitHTTP(t, "http://"+httpAddr+"/livez")
	return grpcAddr, httpAddr
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key to
// dir and returns their paths and a pool trusting it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "barometer-check"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for path, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
