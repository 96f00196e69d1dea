package receiver

import (
	"fmt"
	"net/http"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/wirescan"
)

// scan refuses a body whose wire form holds more than the caps allow,
// before it is decoded; for JSON the counts wait for the decode.
func (r *Receiver) scan(ctype string, body []byte) (wirescan.Tally, *refusal) {
	var t wirescan.Tally
	var err error
	if ctype == contentJSON {
		t.Decoded, err = wirescan.JSON(body)
	} else {
		t, err = wirescan.Proto(body)
	}
	if err != nil {
		return t, malformed(err)
	}
	if ref := r.overCounts(t); ref != nil {
		return t, ref
	}
	if t.Decoded > int64(r.cfg.MaxDecodedBytes) {
		return t, &refusal{reason: "decoded_too_large", code: codes.ResourceExhausted, status: http.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf("request would decode into about %d bytes (allowed: at most %d)", t.Decoded, r.cfg.MaxDecodedBytes)}
	}
	return t, nil
}

// overCounts refuses a request of more resources, scopes, metrics or data
// points than the store's MaxPointsPerRequest: a resource, a scope and a
// metric carry a point at least, or nothing.
func (r *Receiver) overCounts(t wirescan.Tally) *refusal {
	limit := r.store.Options().MaxPointsPerRequest
	for _, c := range []struct {
		n            int
		what, reason string
	}{
		{t.Resources, "resources", "too_many_resources"},
		{t.Scopes, "scopes", "too_many_scopes"},
		{t.Metrics, "metrics", "too_many_metrics"},
		{t.Points, "data points", "too_many_points"},
	} {
		if c.n > limit {
			return &refusal{reason: c.reason, code: codes.ResourceExhausted, status: http.StatusRequestEntityTooLarge,
				msg: fmt.Sprintf("%d %s in one request (allowed: at most %d)", c.n, c.what, limit)}
		}
	}
	return nil
}

// decode reads a scanned body of content type ctype. OTLP/JSON is
// protojson of the same types; unknown fields are ignored, as OTLP asks of
// receivers. JSON's counts are checked once it is decoded.
func (r *Receiver) decode(ctype string, body []byte) (*colmetrics.ExportMetricsServiceRequest, *refusal) {
	req, err := decode(ctype, body)
	if err != nil {
		return nil, malformed(err)
	}
	if ctype == contentJSON {
		if ref := r.overCounts(wirescan.Count(req)); ref != nil {
			return nil, ref
		}
	}
	return req, nil
}

func decode(ctype string, body []byte) (*colmetrics.ExportMetricsServiceRequest, error) {
	req := &colmetrics.ExportMetricsServiceRequest{}
	var err error
	if ctype == contentJSON {
		// A JSON message is two levels deep for every protobuf one (its
		// repeated fields are arrays).
		err = protojson.UnmarshalOptions{DiscardUnknown: true, RecursionLimit: 2*wirescan.MaxDepth + 2}.Unmarshal(body, req)
	} else {
		err = proto.UnmarshalOptions{RecursionLimit: wirescan.MaxDepth + 1}.Unmarshal(body, req)
	}
	return req, err
}

func malformed(err error) *refusal {
	return &refusal{reason: "malformed", code: codes.InvalidArgument, status: http.StatusBadRequest,
		msg: "request does not decode as an OTLP ExportMetricsServiceRequest: " + err.Error()}
}
