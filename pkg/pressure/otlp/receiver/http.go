package receiver

import (
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

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

// serveHTTP is POST /v1/metrics. The credential is checked from the
// headers, before any of the body is read; the body is read under
// MaxRequestBytes (decompressed too) and the minimum rate.
func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	rec := &statusRecorder{ResponseWriter: w}
	defer func() { r.m.requests.WithLabelValues("http", strconv.Itoa(rec.code())).Inc() }()
	w = rec
	ctype, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeMessage(w, ctype, http.StatusMethodNotAllowed, &spb.Status{Code: int32(codes.Unimplemented),
			Message: fmt.Sprintf("%s /v1/metrics: OTLP metrics are POSTed", req.Method)})
		return
	}
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
	resp, ref := r.exportHTTP(w, req, ctype, g)
	if ref != nil {
		if ref.retry {
			w.Header().Set("Retry-After", "1")
		}
		r.refuseHTTP(w, ctype, ref)
		return
	}
	writeMessage(w, ctype, http.StatusOK, resp)
}

func (r *Receiver) exportHTTP(w http.ResponseWriter, req *http.Request, ctype string, g grant) (*colmetrics.ExportMetricsServiceResponse, *refusal) {
	if ctype != contentProtobuf && ctype != contentJSON {
		return nil, &refusal{reason: "unsupported_media_type", code: codes.InvalidArgument, status: http.StatusUnsupportedMediaType,
			msg: fmt.Sprintf("Content-Type %q (allowed: %s, %s)", ctype, contentProtobuf, contentJSON)}
	}
	enc := req.Header.Get("Content-Encoding")
	if enc != "" && enc != "identity" && enc != "gzip" {
		return nil, &refusal{reason: "unsupported_media_type", code: codes.InvalidArgument, status: http.StatusUnsupportedMediaType,
			msg: fmt.Sprintf("Content-Encoding %q (allowed: gzip, identity)", enc)}
	}
	if req.ContentLength > int64(r.cfg.MaxRequestBytes) {
		return nil, refuseTooLarge(r.cfg.MaxRequestBytes)
	}
	done, ref := r.admit(g)
	if ref != nil {
		return nil, ref
	}
	defer done()
	body, ref := r.readBody(w, req, enc == "gzip")
	if ref != nil {
		return nil, ref
	}
	return r.push(req.Context(), g, ctype, body)
}

// bodyDeadline is how long a body of n bytes may take: the grace, then
// the minimum rate.
func (r *Receiver) bodyDeadline(n int) time.Duration {
	return r.cfg.BodyGrace + time.Duration(int64(n)*int64(time.Second)/int64(r.cfg.MinBodyBytesPerSecond))
}

// readBody reads the request body, gunzipped if need be, refusing one
// over MaxRequestBytes before or after decompression, or one that arrives
// slower than the minimum rate.
func (r *Receiver) readBody(w http.ResponseWriter, req *http.Request, gzipped bool) ([]byte, *refusal) {
	limit := int64(r.cfg.MaxRequestBytes)
	tooLarge := refuseTooLarge(r.cfg.MaxRequestBytes)
	timed := &minRate{r: req.Body, rc: http.NewResponseController(w), start: time.Now(), deadline: r.bodyDeadline}
	defer timed.clear()
	var body io.Reader = http.MaxBytesReader(w, io.NopCloser(timed), limit)
	if gzipped {
		gz, err := gzip.NewReader(body)
		if err != nil {
			return nil, bodyError(err, tooLarge)
		}
		defer gz.Close()
		body = gz
	}
	// Sized from Content-Length when it is given: read once, no copies.
	buf := bytes.NewBuffer(make([]byte, 0, min(max(req.ContentLength, 512), limit)+1))
	n, err := buf.ReadFrom(io.LimitReader(body, limit+1))
	if err == nil && n > limit {
		err = errTooLarge
	}
	if err != nil {
		return nil, bodyError(err, tooLarge)
	}
	return buf.Bytes(), nil
}

// minRate reads a body under a read deadline that moves with what has
// arrived: after n bytes it is the grace plus n bytes at the minimum
// rate, from the start.
type minRate struct {
	r        io.Reader
	rc       *http.ResponseController
	start    time.Time
	read     int
	deadline func(n int) time.Duration
}

func (m *minRate) Read(p []byte) (int, error) {
	if err := m.rc.SetReadDeadline(m.start.Add(m.deadline(m.read))); err != nil {
		return 0, fmt.Errorf("setting the body's read deadline: %w", err)
	}
	n, err := m.r.Read(p)
	m.read += n
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = errSlowBody
	}
	return n, err
}

// clear lifts the deadline, for the next request on the connection.
func (m *minRate) clear() { _ = m.rc.SetReadDeadline(time.Time{}) }

var errTooLarge = errors.New("too large")

func bodyError(err error, tooLarge *refusal) *refusal {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe) || errors.Is(err, errTooLarge):
		return tooLarge
	case errors.Is(err, errSlowBody):
		return refuseSlowBody
	}
	return &refusal{reason: "malformed", code: codes.InvalidArgument, status: http.StatusBadRequest, msg: "reading the request body: " + err.Error()}
}

// refuseHTTP answers a refusal with its status and, as OTLP/HTTP asks, a
// google.rpc.Status body in the request's encoding. A decoder's message
// may quote the body's bytes, which a Status's string must not carry
// unless they are UTF-8.
func (r *Receiver) refuseHTTP(w http.ResponseWriter, ctype string, ref *refusal) {
	r.m.refused.WithLabelValues("http", ref.reason).Inc()
	writeMessage(w, ctype, ref.status, &spb.Status{Code: int32(ref.code), Message: strings.ToValidUTF8(ref.msg, "\uFFFD")})
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

// Unwrap lets an http.ResponseController reach the connection.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}
