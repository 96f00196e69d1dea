package check

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestScalerAcceptsExamples starts the scaler built as the image builds it
// and sends it every Barometer trigger of the examples (and of NOTES.txt)
// as KEDA would: GetMetricSpec fails only for metadata the scaler refuses,
// so this catches a bad value, not only an unknown key. A metrics-api
// trigger on GET /scale must find a number at its valueLocation in the
// scaler's real answer.
func TestScalerAcceptsExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not starting the scaler")
	}
	docs := exampleDocs(t)
	for _, f := range envFiles(notesEnv) {
		ds, err := ReadNotes(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, ds...)
	}
	// A kubeconfig that names no reachable server: reading it does no I/O,
	// so the k8s:// example's metadata is parsed as a scaler in a cluster
	// parses it (its samples fail, which this test does not read).
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(unreachableKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	// The OTLP receiver on, so the otlp example's metadata is parsed as a
	// scaler that serves it parses it.
	otlpCreds := filepath.Join(t.TempDir(), "credentials.yaml")
	if err := os.WriteFile(otlpCreds, []byte("credentials: [{name: collector, client_certificate: collector, namespaces: [\"*\"]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	grpcAddr, httpAddr := startScaler(t, "BAROMETER_KUBECONFIG="+kubeconfig, "BAROMETER_VICTIM_HINTS=true",
		"BAROMETER_OTLP_HTTP_ADDR="+freeAddr(t), "BAROMETER_OTLP_CREDENTIALS="+otlpCreds)

	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := externalscaler.NewExternalScalerClient(conn)

	var checked int
	for _, d := range docs {
		so, ok := d.Object.(*kedav1alpha1.ScaledObject)
		if !ok {
			continue
		}
		for i, tr := range so.Spec.Triggers {
			at := fmt.Sprintf("%s: triggers[%d] (%s)", d.Where(), i, tr.Type)
			switch {
			case barometerTriggers[tr.Type]:
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				resp, err := client.GetMetricSpec(ctx, &externalscaler.ScaledObjectRef{
					Name: so.Name, Namespace: so.Namespace, ScalerMetadata: tr.Metadata,
				})
				cancel()
				if err != nil {
					t.Errorf("%s: the scaler refuses the metadata: %v", at, err)
					continue
				}
				if len(resp.GetMetricSpecs()) != 1 || resp.GetMetricSpecs()[0].GetTargetSizeFloat() <= 0 {
					t.Errorf("%s: GetMetricSpec answered %v", at, resp)
				}
				checked++
			case tr.Type == "metrics-api":
				u, err := url.Parse(tr.Metadata["url"])
				if err != nil || u.Path != "/scale" {
					continue
				}
				body := waitHTTP(t, "http://"+httpAddr+u.Path)
				var v any
				if err := json.Unmarshal(body, &v); err != nil {
					t.Fatalf("GET /scale: %v", err)
				}
				if n, ok := Lookup(v, tr.Metadata["valueLocation"]); !ok {
					t.Errorf("%s: valueLocation %q is not in the scaler's GET /scale answer %s", at, tr.Metadata["valueLocation"], body)
				} else if _, isNum := n.(float64); !isNum {
					t.Errorf("%s: valueLocation %q is %v, not a number", at, tr.Metadata["valueLocation"], n)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no Barometer or GET /scale trigger found")
	}
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitHTTP polls a URL until it answers 200, for at most 15 s.
func waitHTTP(t *testing.T, u string) []byte {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(u)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return body
			}
			err = fmt.Errorf("status %s: %s", resp.Status, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", u, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const unreachableKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
`
