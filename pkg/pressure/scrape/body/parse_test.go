package body

import (
	"math"
	"slices"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// TestFeedTreesInEitherOrder: whichever replica's name sorts first, a
// contested partition and a NaN report merge the same (the scrape
// source's TestStorageMerge reads the rest of the merge through replicas).
func TestFeedTreesInEitherOrder(t *testing.T) {
	x := Sample{trees: map[string]*treeSample{"t": {
		retained: Scalar{V: math.NaN(), OK: true}, partitions: map[int]string{0: "acct-z"}}}}
	y := Sample{trees: map[string]*treeSample{"t": {
		retained: Scalar{V: 7, OK: true}, ceiling: Scalar{V: 9, OK: true}, partitions: map[int]string{0: "acct-a"}}}}
	for _, order := range [][]*Sample{{&x, &y}, {&y, &x}} {
		var f exposition.TreeFold
		for _, s := range order {
			s.FeedTrees(&f)
		}
		got := f.Trees()
		if len(got) != 1 || got[0].RetainedBytes != 7 || got[0].RetainedBytesCeiling != 9 || !slices.Equal(got[0].PartitionAccounts, []string{"acct-a"}) {
			name := map[*Sample]string{&x: "x", &y: "y"}
			t.Errorf("merged %s then %s: %+v", name[order[0]], name[order[1]], got)
		}
	}
}
