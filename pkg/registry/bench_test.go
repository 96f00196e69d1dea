package registry

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure/scrape"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// A repeated call with a 1,000-URL scrape trigger is a hash of its
// metadata, a lookup and a comparison with the cached copy: no parse.
//
//	go test -run xxx -bench Resolve -benchmem ./pkg/registry/
func BenchmarkResolve(b *testing.B) {
	urls := make([]string, scrape.MaxScrapeTargets)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://web-%d.web.shop.svc:9100/metrics", i)
	}
	for _, c := range []struct {
		name string
		raw  map[string]string
	}{
		{"typical", map[string]string{"source": "const", "name": "q", "targetPressure": "0.7", "minReplicas": "2", "sampleInterval": "1m", "activationValue": "0.1"}},
		{"scrape-1000-targets", map[string]string{"source": "scrape", "targets": strings.Join(urls, ","), "sampleInterval": "10m"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			schema := trigger.NewSchema(append(testSources().Kinds(), scrape.Kind(nil, nil, scrape.Kube{}))...)
			reg := NewRegistry(ctx, Config{Schema: schema, IdleTimeout: time.Hour})
			ref := Ref{Namespace: "shop", Name: "orders"}
			if _, _, err := reg.Resolve(ref, c.raw); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := reg.Resolve(ref, c.raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
