package trigger_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/pressure/host"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/promkind"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

const promServer = "http://prometheus.monitoring.svc:9090"

// An unknown key names the nearest key, not every key (seventy of them,
// 796 bytes, hid the one meant).
func TestParseSuggestsTheNearestKey(t *testing.T) {
	var me *keyschema.MetadataError
	full := trigger.NewSchema(host.Kind(), scrape.Kind(nil, nil, scrape.Kube{}), promkind.Kind(nil, nil))
	for typo, want := range map[string]string{"tagetPressure": "targetPressure", "sorce": "source", "serverAdress": "serverAddress"} {
		_, err := full.Parse(map[string]string{"source": promkind.KindName, "serverAddress": promServer, typo: "x"}, time.Second)
		if !errors.As(err, &me) || me.Key != typo || !strings.Contains(err.Error(), `did you mean "`+want+`"?`) || len(err.Error()) > 120 {
			t.Errorf("unknown key %s: %v (%d bytes), want a suggestion of %s", typo, err, len(fmt.Sprint(err)), want)
		}
	}
}
