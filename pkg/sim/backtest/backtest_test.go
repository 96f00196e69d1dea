package backtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

func TestPromSeriesFillsGaps(t *testing.T) {
	start := time.Unix(1000, 0)
	ss := &model.SampleStream{Values: []model.SamplePair{
		{Timestamp: model.TimeFromUnix(1010), Value: 5},
		{Timestamp: model.TimeFromUnix(1030), Value: 7},
	}}
	s, err := promSeries(ss, start, start.Add(40*time.Second), 10*time.Second, "p")
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{5, 5, 5, 7, 7}
	if fmt.Sprint(s.Load) != fmt.Sprint(want) {
		t.Errorf("load %v, want %v", s.Load, want)
	}
}
