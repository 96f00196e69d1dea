package envconfig

import (
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

func TestLoad(t *testing.T) {
	cfg, err := Load([]string{"BAROMETER_SAMPLE_INTERVAL=2s", "BAROMETER_DEFAULT_TARGET=source=host;targetPressure=0.5", "BAROMETER_VICTIM_HINTS=true"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GRPCAddr != ":6000" || cfg.HTTPAddr != ":8080" || cfg.SampleInterval != 2*time.Second || !cfg.VictimHints ||
		cfg.DefaultTarget["targetPressure"] != "0.5" || cfg.DefaultTarget["source"] != "host" {
		t.Fatalf("config: %+v", cfg)
	}
}

// The defaults other packages fall back on, and the sampleInterval key's
// range, are the ones declared here: an empty environment configures the
// scaler as its packages' own defaults would.
func TestDefaultsAgreeWithTheirPackages(t *testing.T) {
	cfg, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SampleInterval != signal.DefaultSampleInterval || cfg.IdleTimeout != registry.DefaultIdleTimeout ||
		cfg.MaxTargets != registry.DefaultMaxTargets || cfg.MaxTargetsPerNamespace != registry.DefaultMaxTargetsPerNamespace {
		t.Errorf("defaults %+v disagree with signal.DefaultSampleInterval %s, registry's %s, %d, %d", cfg, signal.DefaultSampleInterval,
			registry.DefaultIdleTimeout, registry.DefaultMaxTargets, registry.DefaultMaxTargetsPerNamespace)
	}
	for _, d := range []time.Duration{trigger.MinInterval, trigger.MaxInterval} {
		if _, err := Load([]string{"BAROMETER_SAMPLE_INTERVAL=" + d.String()}); err != nil {
			t.Errorf("sampleInterval's bound %s refused: %v", d, err)
		}
	}
	for _, d := range []time.Duration{trigger.MinInterval - 1, trigger.MaxInterval + 1} {
		if _, err := Load([]string{"BAROMETER_SAMPLE_INTERVAL=" + d.String()}); err == nil {
			t.Errorf("%s, outside the sampleInterval key's range, accepted", d)
		}
	}
}

// Every kind of setting, refused: the error names the variable, the value
// and what it accepts, never the Go field or type. (No setting is a float
// or a list: BAROMETER_ALLOWED_TARGETS is one text that pkg/allow parses.)
func TestRefusalsNameTheVariable(t *testing.T) {
	for _, c := range []struct{ kind, env, want string }{
		{"duration", "BAROMETER_SAMPLE_INTERVAL=5", `BAROMETER_SAMPLE_INTERVAL "5": allowed a duration such as 30s or 2m, from 100ms to 10m`},
		{"duration range", "BAROMETER_SAMPLE_INTERVAL=10ms", `BAROMETER_SAMPLE_INTERVAL 10ms: allowed a duration such as 30s or 2m, from 100ms to 10m`},
		{"duration floor", "BAROMETER_IDLE_TIMEOUT=30s", `BAROMETER_IDLE_TIMEOUT 30s: allowed a duration such as 30s or 2m, 1m or more`},
		{"int", "BAROMETER_AUDIT_SIZE=many", `BAROMETER_AUDIT_SIZE "many": allowed a whole number, from 1 to 100000`},
		{"int range", "BAROMETER_MAX_TARGETS=0", `BAROMETER_MAX_TARGETS 0: allowed a whole number, from 1 to 1000000`},
		{"bool", "BAROMETER_VICTIM_HINTS=yes", `BAROMETER_VICTIM_HINTS "yes": allowed true or false`},
		{"key=value map", "BAROMETER_DEFAULT_TARGET=source", `BAROMETER_DEFAULT_TARGET "source": allowed key=value pairs separated by ";"`},
		{"one of", "BAROMETER_LOG_FORMAT=xml", `BAROMETER_LOG_FORMAT "xml": allowed text or json`},
		{"level", "BAROMETER_LOG_LEVEL=loud", `BAROMETER_LOG_LEVEL "loud": allowed debug, info, warn or error`},
		{"pair", "BAROMETER_TLS_CERT_FILE=/only/cert", "BAROMETER_TLS_CERT_FILE and BAROMETER_TLS_KEY_FILE must be set together"},
		{"needs", "BAROMETER_TLS_CLIENT_CA_FILE=/ca", "BAROMETER_TLS_CLIENT_CA_FILE needs BAROMETER_TLS_CERT_FILE"},
	} {
		t.Run(c.kind, func(t *testing.T) {
			_, err := Load([]string{c.env})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%s: %v; want %q", c.env, err, c.want)
			}
			for _, leak := range []string{"field", "time.Duration", "SampleInterval", "int\"", "map["} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("%s: %v names the Go declaration (%s)", c.env, err, leak)
				}
			}
		})
	}
}

func TestEveryVariableIsDeclared(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range Vars() {
		if !strings.HasPrefix(v.Name, "BAROMETER_") || v.Doc == "" || seen[v.Name] {
			t.Errorf("%+v: want a BAROMETER_ name, declared once, with a doc line", v)
		}
		seen[v.Name] = true
		for _, tag := range []string{"min", "max"} {
			if text := v.field.Tag.Get(tag); text != "" {
				if _, err := parseBound(v.field.Type, text); err != nil {
					t.Errorf("%s: its %s tag: %v", v.Name, tag, err)
				}
			}
		}
	}
}
