package promsource

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

var storageQueries = Queries{
	Activation:        "act",
	TreeRetainedBytes: "bytes", TreeRetainedBytesCeiling: "ceiling",
	TreeSaturation: "sat", PartitionAccount: "place",
}

func TestFoldsTrees(t *testing.T) {
	src, _ := testSource(storageQueries, map[string]any{
		"act": vec("pod=a", 1.0),
		// Two replicas expose tree t1; the larger reading counts, and a
		// third's NaN is no reading (as the scrape source merges them).
		"bytes":   vec("tree=t1,pod=a", 100.0, "tree=t1,pod=b", 120.0, "tree=t1,pod=c", math.NaN(), "tree=t2", -5.0),
		"ceiling": vec("tree=t1,pod=c", math.NaN(), "tree=t1", 1000.0),
		"sat":     vec("tree=t2", 2.0),
		"place": vec(
			"tree=t1,partition=0,account=s1", 1.0,
			"tree=t1,partition=2,account=s2", 1.0, // 1 is unreported: charged to nobody
			"tree=t1,partition=0,account=s0", 1.0, // mid-move: the smaller name wins
			"tree=t1,partition=1,account=old", 0.0, // a placement that no longer holds
			"tree=t1,partition=1,account=neg", -1.0,
			"tree=t1,partition=1,account=nan", math.NaN(),
			"tree=t2,partition=0,account=s2", 2.0, // any value above 0 places (a sum by of two replicas' 1)
		),
	})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []pressure.TreeObservation{
		{Tree: "t1", RetainedBytes: 120, RetainedBytesCeiling: 1000, PartitionAccounts: []string{"s0", "", "s2"}},
		{Tree: "t2", Saturation: pressure.Saturated, PartitionAccounts: []string{"s2"}},
	}
	if len(obs.Trees) != len(want) {
		t.Fatalf("trees = %+v, want %+v", obs.Trees, want)
	}
	for i, w := range want {
		g := obs.Trees[i]
		if g.Tree != w.Tree || g.RetainedBytes != w.RetainedBytes || g.RetainedBytesCeiling != w.RetainedBytesCeiling ||
			g.Saturation != w.Saturation || !slices.Equal(g.PartitionAccounts, w.PartitionAccounts) {
			t.Errorf("tree %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestEmptyStorageIsNoStorageView(t *testing.T) {
	src, _ := testSource(storageQueries, map[string]any{"act": vec("pod=a", 1.0)})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if obs.Trees != nil {
		t.Errorf("trees = %#v, want nil, as the scrape source reports no storage", obs.Trees)
	}
}

func TestUnreadableTreeFailsTheSample(t *testing.T) {
	for name, tc := range map[string]struct {
		query, answer string
		want          string
	}{
		"saturation out of range": {"sat", "tree=t1", "treeSaturationQuery"},
		"no tree label":           {"bytes", "pod=a", "has no tree label"},
		"bad partition":           {"place", "tree=t1,partition=x,account=s", "partition index"},
		"no account":              {"place", "tree=t1,partition=0", "has no account label"},
	} {
		t.Run(name, func(t *testing.T) {
			src, _ := testSource(storageQueries, map[string]any{
				"act":    vec("pod=a", 1.0),
				tc.query: vec(tc.answer, 9.0),
			})
			_, err := src.Observe(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
