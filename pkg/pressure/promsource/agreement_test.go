package promsource_test

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape"
)

// cpuTolerance absorbs the one thing the two reads measure differently: the
// CPU rate spans two different pairs of scrapes of a one-second interval,
// each timed at the scrape's start while the demo counts CPU when it
// answers; on a loaded machine under -race that gap reaches tens of
// milliseconds. The loads under test are far further apart than this.
const cpuTolerance = 0.05

// agreement reads the same replicas both ways, by scraping them and by
// asking the Prometheus that scrapes them, under steady load and again after
// the load moved, and requires the same pressure.
func (f *fixture) agreement(t *testing.T) {
	var targets []scrape.Target
	for _, u := range f.urls {
		tg, err := scrape.ParseTarget(u)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tg)
	}
	scr, err := scrape.New(scrape.Options{Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	defer scr.Close()
	prom := f.source(t, nil)

	compare := func(phase string) {
		// The scrape source's CPU rate needs two of its own scrapes.
		if _, err := observe(t, scr); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		byScrape, err := observe(t, scr)
		if err != nil {
			t.Fatal(err)
		}
		byProm, err := observe(t, prom)
		if err != nil {
			t.Fatal(err)
		}
		agree(t, phase, byScrape, byProm)
	}
	compare("steady load")

	// The saturated replica drains and the split finishes.
	f.replicas[2].SetLoad(10)
	f.replicas[1].SetSplits(0)
	f.waitLoad(t, 2, 0.10)
	compare("after the load moved")
}

func agree(t *testing.T, phase string, byScrape, byProm pressure.Observation) {
	t.Helper()
	if len(byScrape.Replicas) != len(byProm.Replicas) {
		t.Fatalf("%s: %d replicas scraped, %d from prometheus", phase, len(byScrape.Replicas), len(byProm.Replicas))
	}
	for i, s := range byScrape.Replicas {
		p := byProm.Replicas[i]
		cpuS, cpuP := s.CPUUtilisation, p.CPUUtilisation
		s.CPUUtilisation, p.CPUUtilisation = 0, 0
		if s != p || math.Abs(cpuS-cpuP) > cpuTolerance {
			t.Errorf("%s: replica %d\n  scraped    %+v cpu %.4f\n  prometheus %+v cpu %.4f", phase, i, s, cpuS, p, cpuP)
		}
	}
	if !reflect.DeepEqual(byScrape.Trees, byProm.Trees) {
		t.Errorf("%s: trees\n  scraped    %+v\n  prometheus %+v", phase, byScrape.Trees, byProm.Trees)
	}

	// And so the folded pressure, which is what the signal is made of.
	c := pressure.ComputeCollector{ActivationWorkingSetTarget: pressure.DefaultActivationWorkingSetTarget}
	cs, cp := c.Collect(byScrape), c.Collect(byProm)
	if cs.ReplicaCount != cp.ReplicaCount || cs.WalSaturation != cp.WalSaturation || cs.Activation != cp.Activation ||
		cs.WalDispatch != cp.WalDispatch || math.Abs(cs.Resource-cp.Resource) > cpuTolerance {
		t.Errorf("%s: compute pressure\n  scraped    %+v\n  prometheus %+v", phase, cs, cp)
	}
	now := time.Now()
	ss := pressure.NewStorageCollector(pressure.DefaultStorageOptions()).Collect(byScrape.Trees, now)
	sp := pressure.NewStorageCollector(pressure.DefaultStorageOptions()).Collect(byProm.Trees, now)
	if !reflect.DeepEqual(ss, sp) {
		t.Errorf("%s: storage pressure\n  scraped    %+v\n  prometheus %+v", phase, ss, sp)
	}
	t.Logf("%s: activation %.3f/%.3f resource %.3f/%.3f wal %v/%v across %d replicas (scraped/prometheus)",
		phase, cs.Activation, cp.Activation, cs.Resource, cp.Resource, cs.WalSaturation, cp.WalSaturation, cs.ReplicaCount)
}
