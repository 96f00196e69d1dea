package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// proxy stands between the scaler and Prometheus: it records every query
// the server is sent (when, for which workload, what kind, how it was
// answered) and can hold each one for delay first, as a slower server
// would. It is how the bench counts what the server receives from the
// outside, without asking the scaler.
type proxy struct {
	next     *httputil.ReverseProxy
	delay    time.Duration
	interval time.Duration // the sample interval: a backfill's step

	mu   sync.Mutex
	sent []query
}

// query is one query request as the server received it.
type query struct {
	at       time.Time // when it arrived
	workload int       // the w<i> of its job="w<i>" selector; -1 for none
	text     string
	kind     queryKind
	// eval is an instant query's evaluation time; start, end and step a
	// range query's.
	eval, start, end float64
	step             time.Duration
	code             int  // the answer's status (0 when none was sent)
	abandoned        bool // the scaler went away before the answer
	took             time.Duration
}

type queryKind int

const (
	instant  queryKind = iota
	backfill           // a range query at the sample interval's step
	history            // a range query on the forecast's 5-minute grid
	otherRange
)

func (k queryKind) String() string {
	return [...]string{"instant", "backfill range", "history range", "other range"}[k]
}

var workloadLabel = regexp.MustCompile(`job="w(\d+)"`)

func newProxy(server string, delay, interval time.Duration) (*proxy, error) {
	u, err := url.Parse(server)
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if r.Context().Err() != nil {
			return // the scaler went away: nothing is answered
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	return &proxy{next: rp, delay: delay, interval: interval}, nil
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var kind queryKind
	switch r.URL.Path {
	case "/api/v1/query":
		kind = instant
	case "/api/v1/query_range":
		kind = otherRange
	default:
		p.next.ServeHTTP(w, r)
		return
	}
	q := query{at: time.Now(), workload: -1, kind: kind}
	// client_golang posts its queries as a form; the body is read here and
	// handed on unchanged.
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	form := r.URL.Query()
	if extra, err := url.ParseQuery(string(body)); err == nil {
		for k, v := range extra {
			form[k] = append(form[k], v...)
		}
	}
	q.text = form.Get("query")
	if m := workloadLabel.FindStringSubmatch(q.text); m != nil {
		q.workload, _ = strconv.Atoi(m[1])
	}
	q.eval, _ = strconv.ParseFloat(form.Get("time"), 64)
	q.start, _ = strconv.ParseFloat(form.Get("start"), 64)
	q.end, _ = strconv.ParseFloat(form.Get("end"), 64)
	if s, err := strconv.ParseFloat(form.Get("step"), 64); err == nil {
		q.step = time.Duration(s * float64(time.Second))
	} else if d, err := time.ParseDuration(form.Get("step")); err == nil {
		q.step = d
	}
	switch {
	case kind != otherRange:
	case q.step == historyStep:
		q.kind = history
	case q.step == p.interval:
		q.kind = backfill
	}
	defer func() {
		q.took = time.Since(q.at)
		p.mu.Lock()
		p.sent = append(p.sent, q)
		p.mu.Unlock()
	}()
	if p.delay > 0 {
		t := time.NewTimer(p.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			q.abandoned = true
			return
		}
	}
	sw := &statusWriter{ResponseWriter: w}
	p.next.ServeHTTP(sw, r)
	q.code, q.abandoned = sw.code, r.Context().Err() != nil
}

// since returns the queries received from t on.
func (p *proxy) since(t time.Time) []query {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []query
	for _, q := range p.sent {
		if !q.at.Before(t) {
			out = append(out, q)
		}
	}
	return out
}

// historyStep is the forecast's grid (pressure.SeasonStep).
const historyStep = 5 * time.Minute

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}
