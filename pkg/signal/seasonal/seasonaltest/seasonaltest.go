// Package seasonaltest holds what the tests of the seasonal forecast and
// of the computer that runs it share: demands with a daily and a weekly
// season, and the history a source that keeps one yields for them.
package seasonaltest

import (
	"math"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// Start is the instant the demands' days count from: a Monday, midnight.
var Start = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// Daily is a demand with a daily wave: 10 replicas of work at midday, 4 at
// midnight.
func Daily(t time.Time) float64 {
	h := float64(t.Sub(Start)) / float64(24*time.Hour)
	return 7 - 3*math.Cos(2*math.Pi*h)
}

// Weekly is the daily wave on five days of seven and a flat 3 on the other
// two, so days one apart differ where days one week apart do not.
func Weekly(t time.Time) float64 {
	if int(t.Sub(Start)/(24*time.Hour))%7 >= 5 {
		return 3
	}
	return Daily(t)
}

// PointsOf is demand on the source's grid from from to to, as a source
// that holds the history yields it.
func PointsOf(demand func(time.Time) float64, from, to time.Time) []pressure.DemandPoint {
	var out []pressure.DemandPoint
	for t := from; !t.After(to); t = t.Add(pressure.SeasonStep) {
		out = append(out, pressure.DemandPoint{At: t, Demand: demand(t)})
	}
	return out
}

// SourceSeason is what a source yields at the grid instant at: the recent
// windows, and the long history when long.
func SourceSeason(demand func(time.Time) float64, at time.Time, long bool) *pressure.Season {
	var s pressure.Season
	for _, p := range []time.Duration{pressure.SeasonWeek, pressure.SeasonDay} {
		s.Recent = append(s.Recent, PointsOf(demand, at.Add(-p-pressure.SeasonSmooth), at.Add(-p+pressure.SeasonHorizon+pressure.SeasonSmooth))...)
	}
	s.Recent = append(s.Recent, PointsOf(demand, at.Add(-pressure.SeasonLevel+pressure.SeasonStep), at)...)
	if long {
		s.Long = PointsOf(demand, at.Add(-pressure.SeasonLong+pressure.SeasonStep), at)
	}
	return &s
}
