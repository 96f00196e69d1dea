package receiver

import (
	"compress/gzip"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The OTLP/HTTP content types.
const (
	contentProtobuf = "application/x-protobuf"
	contentJSON     = "application/json"
)

// serveHTTP is POST /v1/metrics. The credential is checked before the
// body is read, and the body is read under MaxRequestBytes, decompressed
// too.
func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	rec := &statusRecorder{ResponseWriter: w}
	defer func() { r.m.requests.WithLabelValues("http", strconv.Itoa(rec.code())).Inc() }()
	w = rec
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "OTLP metrics are POSTed", http.StatusMethodNotAllowed)
		return
	}
	ctype, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	var chains [][]*x509.Certificate
	if req.TLS != nil {
		chains = req.TLS.VerifiedChains
	}
	g, ref := r.authenticate(req.Header.Get("Authorization"), chains)
	if ref != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="otlp"`)
		r.refuseHTTP(w, ctype, ref)
		return
	}
	if ctype != contentProtobuf && ctype != contentJSON {
		r.refuseHTTP(w, ctype, &refusal{reason: "unsupported_media_type", code: codes.InvalidArgument, status: http.StatusUnsupportedMediaType,
			msg: fmt.Sprintf("Content-Type %q (allowed: %s, %s)", ctype, contentProtobuf, contentJSON)})
		return
	}
	if !r.acquire() {
		w.Header().Set("Retry-After", "1")
		r.refuseHTTP(w, ctype, refuseBusy)
		return
	}
	defer r.release()
	body, ref := r.readBody(w, req)
	if ref != nil {
		r.refuseHTTP(w, ctype, ref)
		return
	}
	msg, err := decode(ctype, body)
	if err != nil {
		r.refuseHTTP(w, ctype, &refusal{reason: "malformed", code: codes.InvalidArgument, status: http.StatusBadRequest, msg: "request does not decode as an OTLP ExportMetricsServiceRequest: " + err.Error()})
		return
	}
	resp, ref := r.ingest(msg, g)
	if ref != nil {
		r.refuseHTTP(w, ctype, ref)
		return
	}
	writeMessage(w, ctype, http.StatusOK, resp)
}

// decode reads an OTLP/HTTP body of content type ctype. OTLP/JSON is
// protojson of the same types; unknown fields are ignored, as OTLP asks of
// receivers.
func decode(ctype string, body []byte) (*colmetrics.ExportMetricsServiceRequest, error) {
	msg := &colmetrics.ExportMetricsServiceRequest{}
	var err error
	if ctype == contentJSON {
		err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, msg)
	} else {
		err = proto.Unmarshal(body, msg)
	}
	return msg, err
}

var errTooLarge = errors.New("too large")

// readBody reads the request body, gunzipped if need be, refusing one
// over MaxRequestBytes before or after decompression.
func (r *Receiver) readBody(w http.ResponseWriter, req *http.Request) ([]byte, *refusal) {
	limit := int64(r.cfg.MaxRequestBytes)
	tooLarge := &refusal{reason: "too_large", code: codes.ResourceExhausted, status: http.StatusRequestEntityTooLarge,
		msg: fmt.Sprintf("request body over %d bytes", limit)}
	if req.ContentLength > limit {
		return nil, tooLarge
	}
	var body io.Reader = http.MaxBytesReader(w, req.Body, limit)
	switch enc := req.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		gz, err := gzip.NewReader(body)
		if err != nil {
			return nil, bodyError(err, tooLarge)
		}
		defer gz.Close()
		body = gz
	default:
		return nil, &refusal{reason: "unsupported_media_type", code: codes.InvalidArgument, status: http.StatusUnsupportedMediaType,
			msg: fmt.Sprintf("Content-Encoding %q (allowed: gzip, identity)", enc)}
	}
	data, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = errTooLarge
	}
	if err != nil {
		return nil, bodyError(err, tooLarge)
	}
	return data, nil
}

func bodyError(err error, tooLarge *refusal) *refusal {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || errors.Is(err, errTooLarge) {
		return tooLarge
	}
	return &refusal{reason: "malformed", code: codes.InvalidArgument, status: http.StatusBadRequest, msg: "reading the request body: " + err.Error()}
}

// refuseHTTP answers a refusal with its status and, as OTLP/HTTP asks, a
// google.rpc.Status body in the request's encoding.
func (r *Receiver) refuseHTTP(w http.ResponseWriter, ctype string, ref *refusal) {
	r.m.refused.WithLabelValues("http", ref.reason).Inc()
	writeMessage(w, ctype, ref.status, &spb.Status{Code: int32(ref.code), Message: ref.msg})
}

func writeMessage(w http.ResponseWriter, ctype string, code int, m proto.Message) {
	var data []byte
	var err error
	if ctype == contentJSON {
		data, err = protojson.Marshal(m)
	} else {
		ctype = contentProtobuf
		data, err = proto.Marshal(m)
	}
	if err != nil {
		http.Error(w, "encoding the response", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// statusRecorder remembers the status written, for the request count.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}
