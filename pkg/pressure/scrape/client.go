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
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
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

// errTooLarge is a response over the size limit.
var errTooLarge = errors.New("response exceeds the size limit")

// errTooManySeries fails a replica that exposes more of the contract's
// series than the series limit.
var errTooManySeries = errors.New("the replica exposes more series of the contract's families than the series limit")

// client performs one scrape: GET, check, filter, parse. It is safe for
// concurrent use; buffers are pooled so that memory stays flat across
// samples instead of growing with the number of replicas.
type client struct {
	http   *http.Client
	shared bool // http's transport is a connection profile's
	limit  int64
	want   wantSet

	readers  sync.Pool // *bufio.Reader
	buffers  sync.Pool // *bytes.Buffer
	textPars sync.Pool // *expfmt.TextParser
	series   int       // the series limit; 0: none
}

// readerSize bounds the bytes held per in-flight scrape for line scanning.
const readerSize = 32 << 10

// maxPooledBuffer keeps one unusually large response from pinning memory.
const maxPooledBuffer = 1 << 20

func newClient(limit int64, want wantSet, guard *allow.List, profile *connprofile.Profile) *client {
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
		http: &http.Client{
			Transport: rt,
			// A redirect would reach an address the allow-list never saw.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		limit: limit,
		want:  want,
	}
	c.readers.New = func() any { return bufio.NewReaderSize(nil, readerSize) }
	c.buffers.New = func() any { return new(bytes.Buffer) }
	c.textPars.New = func() any { p := expfmt.NewTextParser(model.UTF8Validation); return &p }
	return c
}

func (c *client) close() {
	if !c.shared {
		c.http.CloseIdleConnections()
	}
}

// scrape reads one replica's series of the wanted families, appended to
// dst. ctx bounds the whole exchange, body included.
func (c *client) scrape(ctx context.Context, url string, timeout time.Duration, f *families, dst []series) ([]series, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return dst, err
	}
	req.Header.Set("Accept", acceptHeader)
	req.Header.Set("User-Agent", "barometer-scrape")
	// The header Prometheus sends, so exporters can bound their own work.
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64))
	resp, err := c.http.Do(req)
	if err != nil {
		return dst, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return dst, fmt.Errorf("HTTP status %s", resp.Status)
	}
	if resp.ContentLength > c.limit {
		return dst, fmt.Errorf("%w of %d bytes (Content-Length %d)", errTooLarge, c.limit, resp.ContentLength)
	}
	format := expfmt.ResponseFormat(resp.Header)
	if format.FormatType() == expfmt.TypeOpenMetrics {
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

	proto := format.FormatType() == expfmt.TypeProtoDelim
	if proto {
		err = filterProto(br, buf, c.want, c.limit)
	} else {
		// Text, and anything unlabelled: the text parser rejects garbage.
		err = filterText(br, buf, c.want)
	}
	if counted.n > c.limit {
		return dst, fmt.Errorf("%w of %d bytes", errTooLarge, c.limit)
	}
	if err != nil {
		return dst, fmt.Errorf("read body: %w", err)
	}
	if proto {
		return parseProtoSeries(buf.Bytes(), f, c.series, dst)
	}
	// The filtered text is one line a series (and the comments): count
	// them before the parse, which is where the memory goes.
	if n := textSeries(buf.Bytes()); c.series > 0 && n > c.series {
		return dst, fmt.Errorf("%w (%d, limit %d: seriesLimit)", errTooManySeries, n, c.series)
	}
	return c.parseText(buf.Bytes(), f, dst)
}

// textSeries counts the sample lines of a filtered text exposition.
func textSeries(b []byte) int {
	n := 0
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if line = skipBlanks(line); len(line) > 0 && line[0] != '#' {
			n++
		}
	}
	return n
}

// parseText reads a filtered text body: by parseTextSeries where it takes
// the body, by expfmt's parser otherwise (a histogram or summary family,
// quoted names, or a body expfmt refuses, with expfmt's error).
func (c *client) parseText(b []byte, f *families, dst []series) ([]series, error) {
	if ss, ok := parseTextSeries(b, f, dst); ok {
		return ss, nil
	}
	p := c.textPars.Get().(*expfmt.TextParser)
	defer c.textPars.Put(p)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		return dst, fmt.Errorf("parse text exposition: %w", err)
	}
	return fromFamilies(fams, f, dst), nil
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
