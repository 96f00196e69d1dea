package promsource

import (
	"context"
	"time"

	"github.com/prometheus/common/model"
)

// AnswersBothWays asks every configured dimension of src at the instant
// at both ways: all in one combined query, and each alone. The two must
// be equal, series for series and in order.
func AnswersBothWays(ctx context.Context, src *Source, at time.Time) (combined, apart map[string]model.Vector, err error) {
	var dims []dimension
	for d, q := range src.queries {
		if q != "" {
			dims = append(dims, dimension(d))
		}
	}
	v, err := src.send(ctx, "combined", src.combinedQuery(dims), at, func(v model.Value) (any, error) { return split(v) })
	if err != nil {
		return nil, nil, err
	}
	combined, apart = map[string]model.Vector{}, map[string]model.Vector{}
	for _, d := range dims {
		combined[d.Key()] = v.(*answers)[d]
		r := src.query(ctx, d, at)
		if r.err != nil {
			return nil, nil, r.err
		}
		apart[d.Key()] = r.vec
	}
	return combined, apart, nil
}
