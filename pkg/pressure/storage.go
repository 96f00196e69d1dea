package pressure

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// The storage option defaults.
const (
	DefaultRetainedBytesAdvisoryRatio = 0.8
	DefaultAccountSaturationWindow    = 30 * time.Second
)

// StorageOptions tune the storage collector.
type StorageOptions struct {
	// RetainedBytesAdvisoryRatio is the share of an account's budget at which
	// it reads over threshold. Above 1 reads as 1; <= 0 or NaN fall back to
	// DefaultRetainedBytesAdvisoryRatio.
	RetainedBytesAdvisoryRatio float64
	// AccountSaturationWindow is how long an account must stay saturated
	// before it is classified throughput-bound; <= 0 classifies it on the
	// first saturated sample.
	AccountSaturationWindow time.Duration
	// RecommendationsEnabled turns the rebalance recommendation on.
	RecommendationsEnabled bool
}

// DefaultStorageOptions returns the documented defaults: ratio 0.8, a 30 s
// saturation window, recommendations on.
func DefaultStorageOptions() StorageOptions {
	return StorageOptions{
		RetainedBytesAdvisoryRatio: DefaultRetainedBytesAdvisoryRatio,
		AccountSaturationWindow:    DefaultAccountSaturationWindow,
		RecommendationsEnabled:     true,
	}
}

// Normalised returns the options the collector actually uses.
func (o StorageOptions) Normalised() StorageOptions {
	switch r := o.RetainedBytesAdvisoryRatio; {
	case math.IsNaN(r) || r <= 0:
		o.RetainedBytesAdvisoryRatio = DefaultRetainedBytesAdvisoryRatio
	case r > 1:
		o.RetainedBytesAdvisoryRatio = 1
	}
	o.AccountSaturationWindow = max(o.AccountSaturationWindow, 0)
	return o
}

// StorageCollector folds tree observations into StoragePressure. It is
// stateful (it remembers since when each account has been saturated) and not
// safe for concurrent use: one sampler goroutine owns it.
type StorageCollector struct {
	opts StorageOptions
	// saturatedSince holds, per account, the first sample of its current
	// unbroken run of non-Healthy samples. It is rebuilt on every Collect,
	// so an account that turns Healthy or disappears starts over.
	saturatedSince map[string]time.Time
}

// NewStorageCollector returns a collector using the normalised opts.
func NewStorageCollector(opts StorageOptions) *StorageCollector {
	return &StorageCollector{opts: opts.Normalised(), saturatedSince: map[string]time.Time{}}
}

// Collect charges each tree's retained bytes and ceiling to the accounts its
// partitions are placed on, classifies every account, and, when enabled,
// recommends moving one partition off the hottest account. now is the
// sample's time, used only for the saturation window.
//
// A tree with no partitions (or a partition with an empty provider key) is
// not placed on any account, so it is charged nowhere: its bytes are left out
// of the aggregate as well, which keeps the aggregate equal to the sum of
// the accounts, and its budget could not be weighed against them anyway.
func (c *StorageCollector) Collect(trees []TreeObservation, now time.Time) StoragePressure {
	charged := charge(trees)
	keys := make([]string, 0, len(charged))
	for k := range charged {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	// Accounts is never nil so that JSON serves [] rather than null.
	out := StoragePressure{Accounts: make([]WalAccountPressure, 0, len(keys))}
	since := make(map[string]time.Time, len(keys))
	var budget int64
	for _, k := range keys {
		a := *charged[k]
		a.OverThreshold = c.overThreshold(a.WalRetainedBytes, a.BudgetBytes)
		if a.Saturation != Healthy {
			s, ok := c.saturatedSince[k]
			if !ok {
				s = now
			}
			since[k] = s
			// A clock stepping backwards only delays classification.
			if now.Sub(s) >= c.opts.AccountSaturationWindow {
				a.Classification = ThroughputBound
			}
		}
		if a.Classification == ClassNone && a.OverThreshold {
			a.Classification = CapacityBound
		}
		out.WalRetainedBytes += a.WalRetainedBytes
		budget += a.BudgetBytes
		out.Accounts = append(out.Accounts, a)
	}
	c.saturatedSince = since
	out.OverThreshold = c.overThreshold(out.WalRetainedBytes, budget)
	if c.opts.RecommendationsEnabled {
		out.Recommendation = c.recommend(trees, out.Accounts, now)
	}
	return out
}

// charge splits each tree's bytes and ceiling evenly across its partitions
// and adds each share to the partition's account, along with the tree's
// saturation. Accounts carrying only no-ceiling trees are still listed: they
// have partitions (so can be moved off or onto) and a saturation.
func charge(trees []TreeObservation) map[string]*WalAccountPressure {
	accounts := map[string]*WalAccountPressure{}
	for _, t := range trees {
		n := int64(len(t.PartitionAccounts))
		if n == 0 {
			continue
		}
		var bytes, ceiling int64
		if t.RetainedBytesCeiling > 0 {
			// Negative bytes can only come from a broken source; read 0.
			bytes, ceiling = max(t.RetainedBytes, 0), t.RetainedBytesCeiling
		}
		for i, key := range t.PartitionAccounts {
			if key == "" {
				continue
			}
			a := accounts[key]
			if a == nil {
				a = &WalAccountPressure{ProviderKey: key}
				accounts[key] = a
			}
			a.WalRetainedBytes += share(bytes, n, i)
			a.BudgetBytes += share(ceiling, n, i)
			a.Saturation = Worse(a.Saturation, t.Saturation)
		}
	}
	return accounts
}

// share is partition i's even share of total across n partitions; partition
// 0 also takes the remainder, so the shares sum to total exactly.
func share(total, n int64, i int) int64 {
	s := total / n
	if i == 0 {
		s += total % n
	}
	return s
}

// overThreshold reports bytes >= budget x ratio. A zero threshold (no budget)
// never trips, or every account without a ceiling would read over.
func (c *StorageCollector) overThreshold(bytes, budget int64) bool {
	threshold := float64(budget) * c.opts.RetainedBytesAdvisoryRatio
	return threshold > 0 && float64(bytes) >= threshold
}

// hotter reports whether a should be relieved before b: throughput-bound
// before capacity-bound (the enum is ordered by severity), then, between
// throughput-bound accounts, the worse saturation, then more retained bytes,
// then the smaller key.
func hotter(a, b WalAccountPressure) bool {
	switch {
	case a.Classification != b.Classification:
		return a.Classification > b.Classification
	case a.Classification == ThroughputBound && a.Saturation != b.Saturation:
		return a.Saturation > b.Saturation
	case a.WalRetainedBytes != b.WalRetainedBytes:
		return a.WalRetainedBytes > b.WalRetainedBytes
	default:
		return a.ProviderKey < b.ProviderKey
	}
}

// recommend proposes one partition move off the hottest classified account,
// or returns nil when no account is classified.
func (c *StorageCollector) recommend(trees []TreeObservation, accounts []WalAccountPressure, now time.Time) *WalRebalanceRecommendation {
	var hot *WalAccountPressure
	for i := range accounts {
		if a := &accounts[i]; a.Classification != ClassNone && (hot == nil || hotter(*a, *hot)) {
			hot = a
		}
	}
	if hot == nil {
		return nil
	}
	tree, part := partitionToMove(trees, *hot)

	// The smallest unclassified account has the most headroom. Accounts are
	// sorted by key, so a strict < leaves ties with the smaller key.
	var target *WalAccountPressure
	for i := range accounts {
		a := &accounts[i]
		if a.Classification == ClassNone && a.ProviderKey != hot.ProviderKey &&
			(target == nil || a.WalRetainedBytes < target.WalRetainedBytes) {
			target = a
		}
	}

	rec := &WalRebalanceRecommendation{
		Tree:               tree,
		Partition:          part,
		CurrentProviderKey: hot.ProviderKey,
		Classification:     hot.Classification,
	}
	var why string
	if hot.Classification == ThroughputBound {
		why = fmt.Sprintf("account %q is throughput-bound: WAL %s for %s (window %s)",
			hot.ProviderKey, hot.Saturation, now.Sub(c.saturatedSince[hot.ProviderKey]), c.opts.AccountSaturationWindow)
	} else {
		why = fmt.Sprintf("account %q is capacity-bound: %d of %d budgeted bytes retained (advisory threshold %.0f bytes)",
			hot.ProviderKey, hot.WalRetainedBytes, hot.BudgetBytes, float64(hot.BudgetBytes)*c.opts.RetainedBytesAdvisoryRatio)
	}
	if target == nil {
		rec.Rationale = fmt.Sprintf("%s; no other account has headroom: provision another storage account and move tree %q partition %d to it",
			why, tree, part)
		return rec
	}
	rec.TargetProviderKey, rec.HasHeadroom = target.ProviderKey, true
	rec.Rationale = fmt.Sprintf("%s; move tree %q partition %d to account %q, which is unpressured with %d bytes retained",
		why, tree, part, target.ProviderKey, target.WalRetainedBytes)
	return rec
}

// partitionToMove returns the first partition placed on the hot account, in
// tree then partition order. A throughput-bound account prefers a partition
// of a non-Healthy tree, since moving that one relieves the saturation.
func partitionToMove(trees []TreeObservation, hot WalAccountPressure) (tree string, partition int) {
	for _, t := range trees {
		if hot.Classification == ThroughputBound && t.Saturation == Healthy {
			continue
		}
		for i, key := range t.PartitionAccounts {
			if key == hot.ProviderKey {
				return t.Tree, i
			}
		}
	}
	// Unreachable: the hot account exists because a partition is placed on
	// it, and a throughput-bound account has a non-Healthy tree by definition.
	return "", 0
}
