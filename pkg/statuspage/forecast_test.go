package statuspage

import (
	"bytes"
	"strings"
	"testing"
)

// TestForecastPendingIsShown: a ScaledObject's page says its forecast is
// waiting for history exactly when /scale's forecastHistoryPending does
// (a prometheus source's long history read is an hour long; the page is
// rendered from the view here rather than waiting for one).
func TestForecastPendingIsShown(t *testing.T) {
	for _, pending := range []bool{false, true} {
		var b bytes.Buffer
		if err := pages.ExecuteTemplate(&b, "object", objectView{Object: "shop/checkout", ForecastPending: pending}); err != nil {
			t.Fatal(err)
		}
		if shown := strings.Contains(b.String(), `id="forecast-pending"`); shown != pending {
			t.Errorf("forecast history pending %t: shown %t", pending, shown)
		}
	}
}
