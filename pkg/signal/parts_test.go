package signal

import (
	"strings"
	"testing"
	"time"
)

// Parts say what the reason says: each part is set exactly when its words
// are in the reason, sample by sample, for every profile over a rise to
// saturation, a fall and a plateau measured late.
func TestPartsAreTheReasons(t *testing.T) {
	words := map[Parts]string{
		PartGate: "; scale-in held by safety gate", PartChurn: "; scale-in held by churn budget", PartSurge: "; saturation surge",
		PartLead: "; lead +", PartHeadroom: "; headroom +", PartForecast: "; forecast +",
	}
	demands := []float64{1, 1.2, 1.5, 2, 3, 4, 4, 4, 2, 1, 1, 1, 0.5, 0.5, 3, 3, 0.4, 0.4, 0.4, 0.4}
	for _, profile := range ProfileNames() {
		o, err := ProfileOptions(profile)
		if err != nil {
			t.Fatal(err)
		}
		o.SurgeTarget = 0.7
		seen := Parts(0)
		for i, s := range drive(NewComputer(o), demands, 4, 20*time.Second) {
			for part, w := range words {
				if got, want := s.Parts&part != 0, strings.Contains(s.Reason, w); got != want {
					t.Errorf("%s sample %d: part %q %t, reason %q", profile, i, w, got, s.Reason)
				}
			}
			seen |= s.Parts
		}
		if seen == 0 && profile != ProfileOriginal {
			t.Errorf("%s: no part in any sample; the series does not test it", profile)
		}
	}
}
