package signal

import (
	"fmt"
	"strings"
)

// The profiles: named sets of the computer's behaviour options.
const (
	// ProfileOriginal is the signal as first built, exactly: slow release
	// (EWMA, a 2-minute gate, scale-in blocked while any dimension is at or
	// above 0.25) and no lag compensation (docs/semantics.md, "Defaults:
	// the `original` profile").
	ProfileOriginal = "original"
	// ProfileResponsive follows demand and compensates the lag: only a
	// saturated dimension blocks scale-in, the gate opens on the second
	// eligible sample, no EWMA; the lead, the stale-sample hysteresis and
	// the saturation surge are on (docs/compensation.md,
	// docs/decision-quality.md).
	ProfileResponsive = "responsive"
	// ProfileBudgeted is the responsive profile provisioning to budgets:
	// headroom fed back from the samples so that at most a shortfall
	// budget's share of them see the pool short, and a churn budget that
	// publishes a fall only once the lower level has lasted
	// DefaultScaleInHold (docs/compensation.md, "The budgets"); the
	// seasonal forecast is on (docs/compensation.md, "The seasonal
	// forecast").
	ProfileBudgeted = "budgeted"
	// DefaultProfile is the profile a trigger gets when it names none: the
	// one the decision-quality report measures on real traffic
	// (docs/decision-quality.md; README, "Profiles").
	DefaultProfile = ProfileBudgeted
)

// ProfileNames lists the profiles, the default first.
func ProfileNames() []string { return []string{ProfileBudgeted, ProfileResponsive, ProfileOriginal} }

// ProfileOptions returns a profile's options. A profile sets behaviour
// only: MinReplicas, FloorTarget and SurgeTarget stay 0 for the caller to
// set from its trigger, and any field may be overridden after.
func ProfileOptions(name string) (Options, error) {
	o := DefaultOptions()
	switch name {
	case ProfileOriginal:
		return o, nil
	case ProfileResponsive, ProfileBudgeted:
		o.ActivationScaleInThreshold = 1
		o.ResourceScaleInThreshold = 1
		o.WalDispatchScaleInThreshold = 1
		o.ScaleInGateWindow = 0
		o.EwmaHalfLife = 0
		o.LeadWindow, o.LeadSignificance = DefaultLeadWindow, DefaultLeadSignificance
		o.ScaleInHysteresis = DefaultScaleInHysteresis
		o.ScaleInNoiseMargin = DefaultScaleInNoiseMargin
		o.SaturationSurge, o.SurgeLevel = true, DefaultSurgeLevel
		if name == ProfileBudgeted {
			// The churn budget's hold replaces the stale-sample margins.
			o.ScaleInHysteresis, o.ScaleInNoiseMargin = 0, 0
			o.ShortfallBudget, o.ScaleInHold, o.ChangeCost = DefaultShortfallBudget, DefaultScaleInHold, DefaultChangeCost
			o.Forecast = ForecastOn
		}
		return o, nil
	}
	return Options{}, fmt.Errorf("profile %q (allowed: %s)", name, strings.Join(ProfileNames(), ", "))
}
