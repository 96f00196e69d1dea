package pressure

import "fmt"

// AccountClassification says what kind of storage problem an account has.
type AccountClassification int

// The account classifications. None is the zero value.
const (
	ClassNone AccountClassification = iota
	CapacityBound
	ThroughputBound
)

var classNames = [...]string{"None", "CapacityBound", "ThroughputBound"}

// String returns the classification's name, as served in JSON.
func (c AccountClassification) String() string {
	if c < ClassNone || c > ThroughputBound {
		return fmt.Sprintf("AccountClassification(%d)", int(c))
	}
	return classNames[c]
}

// MarshalText serves the classification by name.
func (c AccountClassification) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// WalAccountPressure is one storage account's share of the WAL.
type WalAccountPressure struct {
	ProviderKey      string `json:"providerKey"`
	WalRetainedBytes int64  `json:"walRetainedBytes"`
	// BudgetBytes is the account's share of the trees' retained-bytes ceilings.
	BudgetBytes    int64                 `json:"-"`
	Saturation     WalSaturationState    `json:"saturation"`
	Classification AccountClassification `json:"classification"`
	OverThreshold  bool                  `json:"overThreshold"`
}

// WalRebalanceRecommendation proposes moving one partition off a hot account.
type WalRebalanceRecommendation struct {
	Tree               string                `json:"tree"`
	Partition          int                   `json:"partition"`
	CurrentProviderKey string                `json:"currentProviderKey"`
	TargetProviderKey  string                `json:"targetProviderKey"`
	Rationale          string                `json:"rationale"`
	HasHeadroom        bool                  `json:"hasHeadroom"`
	Classification     AccountClassification `json:"classification"`
}

// StoragePressure is the storage axis. It is carried on the signal for
// operators and health checks and never enters the replica demand.
type StoragePressure struct {
	OverThreshold    bool                        `json:"overThreshold"`
	WalRetainedBytes int64                       `json:"walRetainedBytes"`
	Accounts         []WalAccountPressure        `json:"accounts"`
	Recommendation   *WalRebalanceRecommendation `json:"recommendation"`
}
