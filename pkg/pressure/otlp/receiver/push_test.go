package receiver

import (
	"testing"

	"github.com/barometer-scaler/barometer/pkg/envconfig"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// The OTLP defaults the environment declares are the receiver's and the
// store's own, and PushConfigFrom carries each one to its field.
func TestOTLPDefaultsAgreeWithTheirPackages(t *testing.T) {
	cfg, err := envconfig.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	pc, st := PushConfigFrom(cfg), store.DefaultOptions()
	for name, pair := range map[string][2]int64{
		"max series":                       {int64(pc.Store.MaxSeries), int64(st.MaxSeries)},
		"max series per namespace":         {int64(pc.Store.MaxSeriesPerNamespace), int64(st.MaxSeriesPerNamespace)},
		"max memory":                       {pc.Store.MaxMemoryBytes, st.MaxMemoryBytes},
		"max memory per namespace":         {pc.Store.MaxMemoryBytesPerNamespace, st.MaxMemoryBytes / 4},
		"max points per request":           {int64(pc.Store.MaxPointsPerRequest), int64(st.MaxPointsPerRequest)},
		"max request bytes":                {int64(pc.MaxRequestBytes), DefaultMaxRequestBytes},
		"max decoded bytes":                {int64(pc.MaxDecodedBytes), DefaultMaxDecodedBytes},
		"max open requests":                {int64(pc.MaxOpenRequests), DefaultMaxOpenRequests},
		"max open requests per credential": {int64(pc.MaxOpenRequestsPerCredential), DefaultMaxOpenRequestsPerCredential},
		"max concurrent requests":          {int64(pc.MaxConcurrentRequests), DefaultMaxConcurrentRequests},
		"min body bytes per second":        {int64(pc.MinBodyBytesPerSecond), DefaultMinBodyBytesPerSecond},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s: declared %d, its package's default %d", name, pair[0], pair[1])
		}
	}
}
