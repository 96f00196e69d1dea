package envconfig

import (
	"strings"
	"testing"
)

// TestOTLPSettings: the receiver is off by default; on, its credentials
// file is required and each bad setting is refused naming its variable.
func TestOTLPConfigFromEnvironment(t *testing.T) {
	cfg, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OTLPEnabled() || cfg.OTLPMaxSeries != 100000 || cfg.OTLPMaxMemoryBytes != 64<<20 || cfg.OTLPMaxConcurrentRequests != 2 {
		t.Fatalf("OTLP defaults: %+v", cfg)
	}
	on := []string{"BAROMETER_OTLP_GRPC_ADDR=:4317", "BAROMETER_OTLP_CREDENTIALS=/etc/barometer/otlp/credentials.yaml"}
	if cfg, err = Load(on); err != nil || cfg.OTLPGRPCAddr != ":4317" || !cfg.OTLPEnabled() {
		t.Fatalf("receiver on: %+v %v", cfg, err)
	}
	for env, val := range map[string]string{
		"BAROMETER_OTLP_CREDENTIALS":                      "",
		"BAROMETER_OTLP_TLS_KEY_FILE":                     "/only/key",
		"BAROMETER_OTLP_TLS_CLIENT_CA_FILE":               "/ca",
		"BAROMETER_OTLP_MAX_SERIES":                       "0",
		"BAROMETER_OTLP_MAX_SERIES_PER_NAMESPACE":         "200000",
		"BAROMETER_OTLP_MAX_REQUEST_BYTES":                "-1",
		"BAROMETER_OTLP_MAX_MEMORY_BYTES_PER_NAMESPACE":   "134217728",
		"BAROMETER_OTLP_MAX_OPEN_REQUESTS_PER_CREDENTIAL": "9",
	} {
		t.Run(env, func(t *testing.T) {
			if _, err := Load(append(on, env+"="+val)); err == nil || !strings.Contains(err.Error(), env) {
				t.Fatalf("%s=%q accepted: %v", env, val, err)
			}
		})
	}
}

// Peering needs the receiver it shares and the peer token; each missing
// one is refused naming its variable.
func TestPeerConfigFromEnvironment(t *testing.T) {
	on := []string{"BAROMETER_OTLP_GRPC_ADDR=:4317", "BAROMETER_OTLP_CREDENTIALS=/c.yaml",
		"BAROMETER_PEER_ADDR=:4319", "BAROMETER_PEER_TOKEN_FILE=/peer/token", "BAROMETER_PEERS=k8s://barometer-peers.barometer:peer"}
	if cfg, err := Load(on); err != nil || cfg.PeerAddr != ":4319" || cfg.Peers != "k8s://barometer-peers.barometer:peer" {
		t.Fatalf("peering on: %+v %v", cfg, err)
	}
	for _, tc := range []struct {
		drop, want string
	}{
		{"BAROMETER_PEER_TOKEN_FILE", "BAROMETER_PEER_TOKEN_FILE"},
		{"BAROMETER_OTLP_GRPC_ADDR", "BAROMETER_PEER_ADDR"},
	} {
		var env []string
		for _, e := range on {
			if !strings.HasPrefix(e, tc.drop+"=") {
				env = append(env, e)
			}
		}
		if _, err := Load(env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("without %s: %v, want an error naming %s", tc.drop, err, tc.want)
		}
	}
}
