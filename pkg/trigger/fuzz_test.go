package trigger_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/pressure/host"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/promkind"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// maxErrorBytes bounds a metadata error's message whatever the input: the
// longest fixed text (a key's doc, what a key allows) plus a short
// quoted prefix of the key and of the value (trigger.Quote). A message that
// grows with the input would flood KEDA's logs.
const maxErrorBytes = 4096

// fuzzSchema is the scaler's schema, as cmd/scaler builds it.
func fuzzSchema() *trigger.Schema {
	return trigger.NewSchema(host.Kind(), scrape.Kind(nil, nil, scrape.Kube{}), promkind.Kind(nil, nil))
}

// decodeMetadata reads a fuzz input as scalerMetadata: one key=value per
// line. A key "#N" is the schema's Nth key and "#N!" the same with
// FromEnv, so the fuzzer reaches the checks behind real keys instead of
// stopping at "unknown key".
func decodeMetadata(data string, keys []string) map[string]string {
	raw := map[string]string{}
	for line := range strings.SplitSeq(data, "\n") {
		k, v, _ := strings.Cut(line, "=")
		if n, ok := strings.CutPrefix(k, "#"); ok {
			n, env := strings.CutSuffix(n, "!")
			if i, err := strconv.Atoi(n); err == nil && i >= 0 {
				k = keys[i%len(keys)]
				if env {
					k += "FromEnv"
				}
			}
		}
		raw[k] = v
	}
	return raw
}

func FuzzParse(f *testing.F) {
	s := fuzzSchema()
	var keys []string
	for _, info := range s.Keys() {
		keys = append(keys, info.Name)
	}
	keys = append(keys, trigger.KEDAKeys()...)
	for _, seed := range []string{
		"",
		"scalerAddress=x:6000",
		"source=host\ntargetPressure=0.5\nsampleInterval=2s",
		"source=scrape\ntargets=http://10.0.0.1:8080/metrics",
		"source=scrape\ntargets=http://a.svc:8080/metrics\nqueueArrivalsMetric=x\nqueueRunDurationMetric=x",
		"source=prometheus\nserverAddress=http://prom:9090\nselector=job=\"a\"",
		"source=prometheus\nserverAddress=http://prom:9090\nresourceQuery=up\ncpuQuery=up",
		"policy=queue\nminReplicas=3\nmaxReplicas=2",
		"policy=elasticity\nthreshold=0.5\nthresholdLow=0.9",
		"targetPressure=4.9e-324\ntargetPressureFromEnv=1",
		"#3=\xff\xfe\n#7!=" + strings.Repeat("x", 5000),
		"\xff" + strings.Repeat("k", 3000) + "FromEnv=1\n\xff" + strings.Repeat("k", 3000) + "=2",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		raw := decodeMetadata(data, keys)
		tr, err := s.Parse(raw, 5*time.Second)
		if err != nil {
			var me *keyschema.MetadataError
			if !errors.As(err, &me) {
				t.Fatalf("error %T %q is not a *keyschema.MetadataError", err, err)
			}
			msg := err.Error()
			if !utf8.ValidString(msg) || len(msg) > maxErrorBytes {
				t.Fatalf("error of %d bytes (valid UTF-8: %v): %.300q", len(msg), utf8.ValidString(msg), msg)
			}
			return
		}
		// The identity names a target: it must not depend on the map's
		// iteration order.
		again, err := s.Parse(raw, 5*time.Second)
		if err != nil || again.Identity() != tr.Identity() || again.PoolKey() != tr.PoolKey() {
			t.Fatalf("parsed twice: %v, identity %q then %q", err, tr.Identity(), again.Identity())
		}
	})
}
