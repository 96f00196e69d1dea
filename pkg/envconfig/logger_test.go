package envconfig

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// JSON logs give durations in seconds, as every other duration the scaler
// publishes (/scale's dataAgeSeconds, the metrics), not in nanoseconds;
// text logs keep Go's "1.5s".
func TestLoggerDurationsInSeconds(t *testing.T) {
	var out bytes.Buffer
	Config{LogLevel: "info", LogFormat: "json"}.Logger(&out).Info("shutting down", "delay", 1500*time.Millisecond, "n", 3)
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line["delay"] != 1.5 || line["n"] != 3.0 {
		t.Errorf("JSON log line %s: want delay 1.5 (seconds) and n 3 untouched", out.Bytes())
	}
	out.Reset()
	Config{LogLevel: "info", LogFormat: "text"}.Logger(&out).Info("shutting down", "delay", 1500*time.Millisecond)
	if !strings.Contains(out.String(), "delay=1.5s") {
		t.Errorf("text log line %q: want delay=1.5s", out.String())
	}
}
