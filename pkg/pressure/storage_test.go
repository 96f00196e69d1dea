package pressure

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

var storageT0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func stTree(name string, bytes, ceiling int64, sat WalSaturationState, accounts ...string) TreeObservation {
	return TreeObservation{Tree: name, RetainedBytes: bytes, RetainedBytesCeiling: ceiling, Saturation: sat, PartitionAccounts: accounts}
}

func stOpts(ratio float64, window time.Duration) StorageOptions {
	return StorageOptions{RetainedBytesAdvisoryRatio: ratio, AccountSaturationWindow: window, RecommendationsEnabled: true}
}

func TestDefaultStorageOptions(t *testing.T) {
	want := StorageOptions{RetainedBytesAdvisoryRatio: 0.8, AccountSaturationWindow: 30 * time.Second, RecommendationsEnabled: true}
	if got := DefaultStorageOptions(); got != want {
		t.Fatalf("DefaultStorageOptions() = %+v, want %+v", got, want)
	}
}

func TestStorageOptionsNormalised(t *testing.T) {
	cases := []struct {
		name       string
		ratio      float64
		window     time.Duration
		wantRatio  float64
		wantWindow time.Duration
	}{
		{"in range kept", 0.5, time.Minute, 0.5, time.Minute},
		{"one kept", 1, 0, 1, 0},
		{"above one becomes one", 1.5, 0, 1, 0},
		{"+Inf becomes one", math.Inf(1), 0, 1, 0},
		{"zero falls back", 0, 0, 0.8, 0},
		{"negative falls back", -0.3, 0, 0.8, 0},
		{"NaN falls back", math.NaN(), 0, 0.8, 0},
		{"negative window reads zero", 0.8, -time.Second, 0.8, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := StorageOptions{RetainedBytesAdvisoryRatio: tc.ratio, AccountSaturationWindow: tc.window, RecommendationsEnabled: true}.Normalised()
			if got.RetainedBytesAdvisoryRatio != tc.wantRatio || got.AccountSaturationWindow != tc.wantWindow || !got.RecommendationsEnabled {
				t.Fatalf("got %+v, want ratio %v window %v", got, tc.wantRatio, tc.wantWindow)
			}
		})
	}
}

func TestStorageCharging(t *testing.T) {
	type acct struct {
		key           string
		bytes, budget int64
		sat           WalSaturationState
	}
	cases := []struct {
		name      string
		trees     []TreeObservation
		want      []acct
		wantBytes int64
	}{
		{
			name:      "split with remainder to partition 0",
			trees:     []TreeObservation{stTree("t", 11, 101, Healthy, "a", "b", "c")},
			want:      []acct{{"a", 5, 35, Healthy}, {"b", 3, 33, Healthy}, {"c", 3, 33, Healthy}},
			wantBytes: 11,
		},
		{
			name:      "partitions of one tree on one account add up",
			trees:     []TreeObservation{stTree("t", 10, 100, Healthy, "a", "b", "a")},
			want:      []acct{{"a", 7, 67, Healthy}, {"b", 3, 33, Healthy}},
			wantBytes: 10,
		},
		{
			name:      "trees add up per account",
			trees:     []TreeObservation{stTree("t1", 10, 100, Healthy, "a"), stTree("t2", 4, 50, Healthy, "a", "b")},
			want:      []acct{{"a", 12, 125, Healthy}, {"b", 2, 25, Healthy}},
			wantBytes: 14,
		},
		{
			name:      "no-ceiling tree adds no bytes or budget but its saturation and account",
			trees:     []TreeObservation{stTree("t1", 10, 100, Healthy, "a"), stTree("t2", 999, 0, Throttled, "a", "b"), stTree("t3", 5, -1, Healthy, "c")},
			want:      []acct{{"a", 10, 100, Throttled}, {"b", 0, 0, Throttled}, {"c", 0, 0, Healthy}},
			wantBytes: 10,
		},
		{
			name:      "tree with no partitions is charged nowhere, aggregate included",
			trees:     []TreeObservation{stTree("t1", 10, 100, Healthy, "a"), stTree("orphan", 500, 1000, Saturated)},
			want:      []acct{{"a", 10, 100, Healthy}},
			wantBytes: 10,
		},
		{
			name:      "unplaced partition (empty key) is charged nowhere",
			trees:     []TreeObservation{stTree("t", 10, 100, Healthy, "a", "")},
			want:      []acct{{"a", 5, 50, Healthy}},
			wantBytes: 5,
		},
		{
			name:      "negative bytes read zero",
			trees:     []TreeObservation{stTree("t", -7, 100, Healthy, "a")},
			want:      []acct{{"a", 0, 100, Healthy}},
			wantBytes: 0,
		},
		{
			name:      "saturation is the worst tree's and accounts sort by key",
			trees:     []TreeObservation{stTree("t1", 1, 10, Saturated, "z"), stTree("t2", 1, 10, Throttled, "m", "z"), stTree("t3", 1, 10, Healthy, "a", "m")},
			want:      []acct{{"a", 1, 5, Healthy}, {"m", 1, 10, Throttled}, {"z", 1, 15, Saturated}},
			wantBytes: 3,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := NewStorageCollector(stOpts(0.8, time.Hour)).Collect(tc.trees, storageT0)
			var accts []acct
			for _, a := range got.Accounts {
				accts = append(accts, acct{a.ProviderKey, a.WalRetainedBytes, a.BudgetBytes, a.Saturation})
			}
			if !reflect.DeepEqual(accts, tc.want) {
				t.Errorf("accounts = %+v, want %+v", accts, tc.want)
			}
			if got.WalRetainedBytes != tc.wantBytes {
				t.Errorf("WalRetainedBytes = %d, want %d", got.WalRetainedBytes, tc.wantBytes)
			}
		})
	}
}

func TestStorageThreshold(t *testing.T) {
	cases := []struct {
		name          string
		ratio         float64
		bytes, budget int64
		want          bool
	}{
		{"below", 0.8, 79, 100, false},
		{"equal is over", 0.8, 80, 100, true},
		{"above", 0.8, 95, 100, true},
		{"ratio above one reads one: below", 2, 99, 100, false},
		{"ratio above one reads one: equal", 2, 100, 100, true},
		{"ratio zero reads 0.8", 0, 80, 100, true},
		{"ratio zero reads 0.8: below", 0, 79, 100, false},
		{"ratio NaN reads 0.8", math.NaN(), 80, 100, true},
		{"ratio NaN reads 0.8: below", math.NaN(), 79, 100, false},
		{"no budget never trips", 0.8, 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := NewStorageCollector(stOpts(tc.ratio, time.Hour)).Collect([]TreeObservation{stTree("t", tc.bytes, tc.budget, Healthy, "a")}, storageT0)
			a := got.Accounts[0]
			wantClass := ClassNone
			if tc.want {
				wantClass = CapacityBound
			}
			if a.OverThreshold != tc.want || a.Classification != wantClass || got.OverThreshold != tc.want {
				t.Fatalf("account over %v class %v, aggregate over %v; want over %v class %v",
					a.OverThreshold, a.Classification, got.OverThreshold, tc.want, wantClass)
			}
		})
	}
}

func TestStorageAggregateThreshold(t *testing.T) {
	cases := []struct {
		name  string
		trees []TreeObservation
		want  bool
	}{
		{"one hot account diluted by a cold one", []TreeObservation{stTree("t1", 90, 100, Healthy, "a"), stTree("t2", 10, 100, Healthy, "b")}, false},
		{"summed exactly at threshold", []TreeObservation{stTree("t1", 90, 100, Healthy, "a"), stTree("t2", 70, 100, Healthy, "b")}, true},
		{"summed just below", []TreeObservation{stTree("t1", 90, 100, Healthy, "a"), stTree("t2", 69, 100, Healthy, "b")}, false},
		{"no budget anywhere", []TreeObservation{stTree("t1", 90, 0, Healthy, "a")}, false},
		{"orphan bytes not counted", []TreeObservation{stTree("t1", 10, 100, Healthy, "a"), stTree("orphan", 1000, 100, Healthy)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewStorageCollector(DefaultStorageOptions()).Collect(tc.trees, storageT0); got.OverThreshold != tc.want {
				t.Fatalf("OverThreshold = %v, want %v", got.OverThreshold, tc.want)
			}
		})
	}
}

func TestStorageSaturationWindow(t *testing.T) {
	type step struct {
		at    time.Duration // since storageT0
		trees []TreeObservation
		want  AccountClassification // of account "a"; absent accounts are skipped
	}
	sat := func(s WalSaturationState) []TreeObservation { return []TreeObservation{stTree("t", 1, 100, s, "a")} }
	full := func(s WalSaturationState) []TreeObservation { return []TreeObservation{stTree("t", 90, 100, s, "a")} }
	gone := []TreeObservation{stTree("t", 1, 100, Healthy, "b")}
	cases := []struct {
		name   string
		window time.Duration
		steps  []step
	}{
		{"not yet, then exactly at window", 30 * time.Second, []step{
			{0, sat(Saturated), ClassNone},
			{29 * time.Second, sat(Saturated), ClassNone},
			{30 * time.Second, sat(Saturated), ThroughputBound},
		}},
		{"window zero classifies on the first sample", 0, []step{
			{0, sat(Throttled), ThroughputBound},
		}},
		{"Throttled counts and worsening does not reset", 30 * time.Second, []step{
			{0, sat(Throttled), ClassNone},
			{20 * time.Second, sat(Saturated), ClassNone},
			{30 * time.Second, sat(Saturated), ThroughputBound},
		}},
		{"Healthy resets", 30 * time.Second, []step{
			{0, sat(Saturated), ClassNone},
			{20 * time.Second, sat(Healthy), ClassNone},
			{40 * time.Second, sat(Saturated), ClassNone},
			{69 * time.Second, sat(Saturated), ClassNone},
			{70 * time.Second, sat(Saturated), ThroughputBound},
		}},
		{"disappearing resets", 30 * time.Second, []step{
			{0, sat(Saturated), ClassNone},
			{20 * time.Second, gone, ClassNone},
			{40 * time.Second, sat(Saturated), ClassNone},
			{70 * time.Second, sat(Saturated), ThroughputBound},
		}},
		{"over threshold is capacity-bound until the window, then throughput-bound", 30 * time.Second, []step{
			{0, full(Saturated), CapacityBound},
			{30 * time.Second, full(Saturated), ThroughputBound},
			{40 * time.Second, full(Healthy), CapacityBound},
		}},
		{"clock stepping back delays", 30 * time.Second, []step{
			{time.Minute, sat(Saturated), ClassNone},
			{0, sat(Saturated), ClassNone},
			{90 * time.Second, sat(Saturated), ThroughputBound},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewStorageCollector(stOpts(0.8, tc.window))
			for i, s := range tc.steps {
				for _, a := range c.Collect(s.trees, storageT0.Add(s.at)).Accounts {
					if a.ProviderKey == "a" && a.Classification != s.want {
						t.Fatalf("step %d (+%v): class %v, want %v", i, s.at, a.Classification, s.want)
					}
				}
			}
		})
	}
}

func TestStorageRecommendation(t *testing.T) {
	cases := []struct {
		name      string
		opts      StorageOptions
		trees     []TreeObservation
		want      *WalRebalanceRecommendation // Rationale is checked by substrings
		rationale []string
	}{
		{
			name:  "nothing classified, no recommendation",
			opts:  stOpts(0.8, 0),
			trees: []TreeObservation{stTree("t", 10, 100, Healthy, "a", "b")},
		},
		{
			name:  "disabled",
			opts:  StorageOptions{RetainedBytesAdvisoryRatio: 0.8},
			trees: []TreeObservation{stTree("t", 100, 100, Saturated, "a"), stTree("u", 0, 100, Healthy, "b")},
		},
		{
			name:      "throughput-bound before capacity-bound",
			opts:      stOpts(0.8, 0),
			trees:     []TreeObservation{stTree("big", 100, 100, Healthy, "a"), stTree("hot", 1, 100, Throttled, "b"), stTree("idle", 0, 100, Healthy, "c")},
			want:      &WalRebalanceRecommendation{Tree: "hot", CurrentProviderKey: "b", TargetProviderKey: "c", HasHeadroom: true, Classification: ThroughputBound},
			rationale: []string{`account "b" is throughput-bound`, "WAL Throttled", `to account "c"`, "0 bytes retained"},
		},
		{
			name:  "throughput tie goes to higher saturation over more bytes",
			opts:  stOpts(0.8, 0),
			trees: []TreeObservation{stTree("t1", 50, 100, Throttled, "a"), stTree("t2", 10, 100, Saturated, "b"), stTree("t3", 0, 100, Healthy, "c")},
			want:  &WalRebalanceRecommendation{Tree: "t2", CurrentProviderKey: "b", TargetProviderKey: "c", HasHeadroom: true, Classification: ThroughputBound},
		},
		{
			name:  "then more retained bytes",
			opts:  stOpts(0.8, 0),
			trees: []TreeObservation{stTree("t1", 10, 100, Saturated, "a"), stTree("t2", 50, 100, Saturated, "b"), stTree("t3", 0, 100, Healthy, "c")},
			want:  &WalRebalanceRecommendation{Tree: "t2", CurrentProviderKey: "b", TargetProviderKey: "c", HasHeadroom: true, Classification: ThroughputBound},
		},
		{
			name:  "then the smaller key",
			opts:  stOpts(0.8, 0),
			trees: []TreeObservation{stTree("t1", 10, 100, Saturated, "b"), stTree("t2", 10, 100, Saturated, "a"), stTree("t3", 0, 100, Healthy, "c")},
			want:  &WalRebalanceRecommendation{Tree: "t2", CurrentProviderKey: "a", TargetProviderKey: "c", HasHeadroom: true, Classification: ThroughputBound},
		},
		{
			name: "capacity-bound ties ignore saturation: more bytes wins",
			opts: stOpts(0.8, time.Hour), // saturation never lasts long enough
			trees: []TreeObservation{stTree("t1", 85, 100, Saturated, "a"), stTree("t2", 95, 100, Healthy, "b"),
				stTree("t3", 0, 100, Healthy, "c")},
			want:      &WalRebalanceRecommendation{Tree: "t2", CurrentProviderKey: "b", TargetProviderKey: "c", HasHeadroom: true, Classification: CapacityBound},
			rationale: []string{`account "b" is capacity-bound`, "95 of 100 budgeted bytes", "threshold 80 bytes", `move tree "t2" partition 0 to account "c"`},
		},
		{
			name:  "capacity-bound tie on bytes goes to the smaller key",
			opts:  stOpts(0.8, 0),
			trees: []TreeObservation{stTree("t1", 90, 100, Healthy, "b"), stTree("t2", 90, 100, Healthy, "a"), stTree("t3", 0, 100, Healthy, "c")},
			want:  &WalRebalanceRecommendation{Tree: "t2", CurrentProviderKey: "a", TargetProviderKey: "c", HasHeadroom: true, Classification: CapacityBound},
		},
		{
			name: "throughput-bound prefers a partition of a non-Healthy tree",
			opts: stOpts(0.8, 0),
			trees: []TreeObservation{stTree("calm", 1, 100, Healthy, "x", "a"), stTree("hot", 2, 100, Saturated, "x", "x", "a"),
				stTree("later", 50, 100, Saturated, "a")},
			want: &WalRebalanceRecommendation{Tree: "hot", Partition: 2, CurrentProviderKey: "a", TargetProviderKey: "", HasHeadroom: false, Classification: ThroughputBound},
		},
		{
			name: "capacity-bound takes the first partition whatever its tree",
			opts: stOpts(0.8, time.Hour),
			trees: []TreeObservation{stTree("calm", 100, 100, Healthy, "x", "a"), stTree("hot", 100, 100, Saturated, "a"),
				stTree("idle", 0, 100, Healthy, "y")},
			want: &WalRebalanceRecommendation{Tree: "calm", Partition: 1, CurrentProviderKey: "a", TargetProviderKey: "y", HasHeadroom: true, Classification: CapacityBound},
		},
		{
			name: "target is the unclassified account with fewest bytes",
			opts: stOpts(0.8, 0),
			// e is capacity-bound with fewer bytes than c, so it is no target.
			trees: []TreeObservation{stTree("t", 100, 100, Healthy, "a"), stTree("u", 30, 100, Healthy, "b"),
				stTree("v", 20, 100, Healthy, "c"), stTree("w", 9, 10, Healthy, "e")},
			want: &WalRebalanceRecommendation{Tree: "t", CurrentProviderKey: "a", TargetProviderKey: "c", HasHeadroom: true, Classification: CapacityBound},
		},
		{
			name:  "target tie goes to the smaller key",
			opts:  stOpts(0.8, 0),
			trees: []TreeObservation{stTree("t", 100, 100, Healthy, "a"), stTree("u", 20, 100, Healthy, "c"), stTree("v", 20, 100, Healthy, "b")},
			want:  &WalRebalanceRecommendation{Tree: "t", CurrentProviderKey: "a", TargetProviderKey: "b", HasHeadroom: true, Classification: CapacityBound},
		},
		{
			name:      "no unclassified account: provision another",
			opts:      stOpts(0.8, 0),
			trees:     []TreeObservation{stTree("t", 100, 100, Healthy, "a"), stTree("u", 0, 100, Saturated, "b")},
			want:      &WalRebalanceRecommendation{Tree: "u", CurrentProviderKey: "b", TargetProviderKey: "", HasHeadroom: false, Classification: ThroughputBound},
			rationale: []string{`account "b" is throughput-bound`, "provision another storage account", `tree "u" partition 0`},
		},
		{
			name:      "single account: provision another",
			opts:      stOpts(0.8, 0),
			trees:     []TreeObservation{stTree("t", 100, 100, Healthy, "a", "a")},
			want:      &WalRebalanceRecommendation{Tree: "t", CurrentProviderKey: "a", HasHeadroom: false, Classification: CapacityBound},
			rationale: []string{`account "a" is capacity-bound`, "100 of 100", "provision another storage account"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := NewStorageCollector(tc.opts).Collect(tc.trees, storageT0).Recommendation
			if tc.want == nil {
				if got != nil {
					t.Fatalf("recommendation = %+v, want none", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("no recommendation, want %+v", tc.want)
			}
			rationale := got.Rationale
			g := *got
			g.Rationale = ""
			if g != *tc.want {
				t.Errorf("recommendation = %+v, want %+v", g, *tc.want)
			}
			for _, s := range tc.rationale {
				if !strings.Contains(rationale, s) {
					t.Errorf("rationale %q lacks %q", rationale, s)
				}
			}
		})
	}
}

func TestStorageEmptyInputServesEmptyAccounts(t *testing.T) {
	for _, trees := range [][]TreeObservation{nil, {}, {stTree("orphan", 10, 100, Saturated)}} {
		got := NewStorageCollector(DefaultStorageOptions()).Collect(trees, storageT0)
		if got.Accounts == nil || len(got.Accounts) != 0 || got.OverThreshold || got.WalRetainedBytes != 0 || got.Recommendation != nil {
			t.Fatalf("Collect(%v) = %+v, want empty non-nil accounts and zero values", trees, got)
		}
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"overThreshold":false,"walRetainedBytes":0,"accounts":[],"recommendation":null}`; string(b) != want {
			t.Fatalf("JSON = %s, want %s", b, want)
		}
	}
}
