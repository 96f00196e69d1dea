package scrape

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape/body"
)

// acceptHeader asks for delimited protobuf first and the text format next;
// OpenMetrics is not asked for. Both paths skip unread families before
// parsing; protobuf bodies are about a third of the text's size, and in the
// benchmark a sample costs about 20 % less. escaping=allow-utf-8 keeps UTF-8
// metric names as they are, so a renamed metric is matched by its real name.
const acceptHeader = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;escaping=allow-utf-8;q=1," +
	"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.9," +
	"text/plain;version=0.0.4;q=0.8," +
	"*/*;q=0.1"

// client performs one scrape: GET, check, filter, parse. It is safe for
// concurrent use; buffers are pooled so that memory stays flat across
// samples instead of growing with the number of replicas.
type client struct {
	// http sends the request: a RoundTripper rather than an http.Client,
	// since a scrape follows no redirect, keeps no cookie and has its own
	// deadline, which is all an http.Client would add (at the cost of a
	// copy of the headers per request).
	http   http.RoundTripper
	shared bool // http is a connection profile's
	limit  int64
	fams   *body.Families

	readers sync.Pool // *bufio.Reader
	buffers sync.Pool // *bytes.Buffer
	text    body.TextParser
	series  int // the series limit; 0: none
	format  atomic.Pointer[contentFormat]
}

// maxPooledBuffer keeps one unusually large response from pinning memory.
const maxPooledBuffer = 1 << 20

func newClient(limit int64, fams *body.Families, guard *allow.List, profile *connprofile.Profile) *client {
	dialer := &net.Dialer{KeepAlive: 30 * time.Second}
	if guard != nil {
		dialer.Control = guard.Control
	}
	transport := &http.Transport{
		// No proxy: the vetted address must be the one dialled.
		Proxy:       nil,
		DialContext: dialer.DialContext,
		// One kept-alive connection per replica, so a sample does not pay a
		// handshake per replica; it is closed once idle past two minutes,
		// longer than any usual sample interval.
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     2 * time.Minute,
		TLSHandshakeTimeout: 10 * time.Second,
		// Identity encoding: in-cluster bandwidth is cheap, and decompressing
		// a thousand responses a sample is not; it also makes the size limit
		// a limit on what is actually parsed.
		DisableCompression: true,
	}
	var rt http.RoundTripper = transport
	if profile != nil {
		// The profile's transport is shared by every trigger using it,
		// and keeps its connections across them; close leaves it be.
		rt = profile.Transport()
	}
	c := &client{
		shared: profile != nil,
		// A RoundTripper follows no redirect: one would reach an address
		// the allow-list never saw.
		http:  rt,
		limit: limit,
		fams:  fams,
	}
	c.readers.New = func() any { return bufio.NewReaderSize(nil, body.ReaderSize) }
	c.buffers.New = func() any { return new(bytes.Buffer) }
	return c
}

func (c *client) close() {
	if t, ok := c.http.(interface{ CloseIdleConnections() }); ok && !c.shared {
		t.CloseIdleConnections()
	}
}

// The request headers' values, the same for every scrape.
var (
	acceptValue    = []string{acceptHeader}
	userAgentValue = []string{"barometer-scrape"}
)

// scrape reads one replica's series of the wanted families, appended to
// dst. ctx bounds the whole exchange, body included.
func (c *client) scrape(ctx context.Context, url string, timeout time.Duration, dst []body.Series) ([]body.Series, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return dst, err
	}
	// Canonical keys set directly: no canonicalisation per request. A
	// RoundTripper does not modify them (a profile's adds its own to a
	// copy).
	req.Header = http.Header{
		"Accept":     acceptValue,
		"User-Agent": userAgentValue,
		// The header Prometheus sends, so exporters can bound their own
		// work.
		"X-Prometheus-Scrape-Timeout-Seconds": {strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)},
	}
	resp, err := c.http.RoundTrip(req)
	if err != nil {
		// As an http.Client says it: which request failed.
		return dst, &neturl.Error{Op: "Get", URL: url, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return dst, fmt.Errorf("HTTP status %s", resp.Status)
	}
	if resp.ContentLength > c.limit {
		return dst, fmt.Errorf("%w of %d bytes (Content-Length %d)", body.ErrTooLarge, c.limit, resp.ContentLength)
	}
	format := c.formatOf(resp.Header)
	if format == expfmt.TypeOpenMetrics {
		return dst, errors.New("OpenMetrics response: serve text/plain or delimited protobuf")
	}

	// Read at most limit+1 bytes: reaching limit+1 proves the body is over.
	counted := &countingReader{r: io.LimitReader(resp.Body, c.limit+1)}
	br := c.readers.Get().(*bufio.Reader)
	br.Reset(counted)
	buf := c.buffers.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		br.Reset(nil)
		c.readers.Put(br)
		if buf.Cap() <= maxPooledBuffer {
			c.buffers.Put(buf)
		}
	}()

	proto := format == expfmt.TypeProtoDelim
	if proto {
		err = body.FilterProto(br, buf, c.fams, c.limit)
	} else {
		// Text, and anything unlabelled: the text parser rejects garbage.
		err = body.FilterText(br, buf, c.fams)
	}
	if counted.n > c.limit {
		return dst, fmt.Errorf("%w of %d bytes", body.ErrTooLarge, c.limit)
	}
	if err != nil {
		return dst, fmt.Errorf("read body: %w", err)
	}
	if proto {
		return body.ParseProto(buf.Bytes(), c.fams, c.series, dst)
	}
	return c.text.Parse(buf.Bytes(), c.fams, c.series, dst)
}

// formatOf is expfmt's reading of a response's Content-Type, remembered
// for the last one seen: the replicas of a workload all send the same, and
// reading it anew costs a media-type parse and a split per scrape.
func (c *client) formatOf(h http.Header) expfmt.FormatType {
	ct := h.Get("Content-Type")
	if last := c.format.Load(); last != nil && last.contentType == ct {
		return last.format
	}
	f := expfmt.ResponseFormat(h).FormatType()
	c.format.Store(&contentFormat{contentType: ct, format: f})
	return f
}

// contentFormat is a Content-Type and its format.
type contentFormat struct {
	contentType string
	format      expfmt.FormatType
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
