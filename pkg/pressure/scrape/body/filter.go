package body

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
)

// The filters cut a response down to the families the contract reads before
// it is parsed. A replica typically exposes hundreds of series (Go runtime,
// HTTP histograms) and Barometer reads a few dozen at most; parsing every
// series would cost most of a sample's CPU and allocations for nothing.
// Anything the filter cannot classify is passed through, so the parse still
// sees, and rejects, whatever is malformed among what is kept.

// wantSet maps each metric family name the source reads to its index
// (Families.names).
type wantSet map[string]int

// ReaderSize is the buffer of the reader the filters are given: it bounds
// the bytes held per in-flight scrape for line scanning.
const ReaderSize = 32 << 10

// ErrTooLarge is a response over the size limit.
var ErrTooLarge = errors.New("response exceeds the size limit")

// FilterText copies to dst the text-format lines of f's families
// (filterText).
func FilterText(r *bufio.Reader, dst *bytes.Buffer, f *Families) error {
	return filterText(r, dst, f.index)
}

// FilterProto copies to dst the delimited protobuf messages of f's
// families, holding at most limit bytes (filterProto).
func FilterProto(r *bufio.Reader, dst *bytes.Buffer, f *Families, limit int64) error {
	return filterProto(r, dst, f.index, limit)
}

func (w wantSet) has(name []byte) bool {
	_, ok := w[string(name)] // the compiler does not allocate for this lookup
	return ok
}

// filterText copies to dst the text-format lines of the wanted families:
// their samples and their HELP and TYPE comments. Lines that start with '{'
// (a quoted UTF-8 name) and comments naming a quoted family are kept, since
// the filter does not unquote. Other lines are dropped. Lines longer than
// r's buffer are classified by their start.
func filterText(r *bufio.Reader, dst *bytes.Buffer, want wantSet) error {
	var lines lineFilter
	for {
		line, err := r.ReadSlice('\n')
		keep := len(line) > 0 && lines.keep(line, want)
		if keep {
			dst.Write(line)
		}
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = r.ReadSlice('\n')
			if keep {
				dst.Write(line)
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
	}
}

// lineFilter remembers the last sample line's name and verdict: a family's
// samples come in a run (a histogram's buckets, a labelled counter's
// series), so most lines are decided without hashing their name.
type lineFilter struct {
	name [128]byte
	n    int // len of name; 0: none remembered
	kept bool
}

func (f *lineFilter) keep(line []byte, want wantSet) bool {
	if b := skipBlanks(line); len(b) > 0 && b[0] != '#' && b[0] != '{' && b[0] != '\n' {
		name, _ := token(b)
		if f.n > 0 && string(name) == string(f.name[:f.n]) {
			return f.kept
		}
		kept := want.has(name)
		if len(name) <= len(f.name) {
			f.n, f.kept = copy(f.name[:], name), kept
		}
		return kept
	}
	return keepLine(line, want)
}

func keepLine(line []byte, want wantSet) bool {
	line = skipBlanks(line)
	if len(line) == 0 {
		return false
	}
	switch line[0] {
	case '\n':
		return false
	case '{':
		return true
	case '#':
		keyword, rest := token(skipBlanks(line[1:]))
		if string(keyword) != "HELP" && string(keyword) != "TYPE" {
			return false // a plain comment
		}
		rest = skipBlanks(rest)
		if len(rest) > 0 && rest[0] == '"' {
			return true
		}
		name, _ := token(rest)
		return want.has(name)
	}
	name, _ := token(line)
	return want.has(name)
}

func skipBlanks(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// token splits b at the first byte that cannot continue an unquoted metric
// name, which is where expfmt's text parser ends the name: a sample line
// "name+0" is the family "name" with the value +0, so stopping only at a
// blank would drop a sample the parser reads
// (testdata/fuzz/FuzzFilterAgreement/5d2c6f0e3a1b7c94).
func token(b []byte) (tok, rest []byte) {
	for i, c := range b {
		if !nameBytes[c] {
			return b[:i], b[i:]
		}
	}
	return b, nil
}

// nameBytes says which bytes may continue an unquoted metric name.
var nameBytes = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == ':'
	}
	return t
}()

// filterProto copies to dst the length-delimited MetricFamily messages of
// the wanted families. It reads only each message's name field; expfmt
// decodes the ones kept. Each message is read into dst as it arrives and
// cut off again when unwanted, so memory grows with the bytes received,
// never with a length prefix: a prefix longer than what is left of limit
// (the response limit) is an error before anything is read, and a shorter
// body than announced allocates only what it sent.
func filterProto(r *bufio.Reader, dst *bytes.Buffer, want wantSet, limit int64) error {
	var lenBuf [binary.MaxVarintLen64]byte
	var body io.LimitedReader // one message's bytes, reused
	left := limit
	for {
		n, err := binary.ReadUvarint(r)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("protobuf length: %w", err)
		}
		prefix := lenBuf[:binary.PutUvarint(lenBuf[:], n)]
		left -= int64(len(prefix))
		if left < 0 || n > uint64(left) {
			return fmt.Errorf("%w: protobuf message of %d bytes", ErrTooLarge, n)
		}
		left -= int64(n)
		mark := dst.Len()
		dst.Write(prefix)
		body.R, body.N = r, int64(n)
		got, err := dst.ReadFrom(&body)
		if err == nil && got < int64(n) {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			dst.Truncate(mark)
			return fmt.Errorf("protobuf message: %w", err)
		}
		name, err := familyName(dst.Bytes()[mark+len(prefix):])
		if err != nil {
			dst.Truncate(mark)
			return err
		}
		if !want.has(name) {
			dst.Truncate(mark)
		}
	}
}

// familyName returns field 1 (name) of an encoded io.prometheus.client.
// MetricFamily, nil when the message has none. Given more than once, the
// last one is the name, as the protobuf runtime and ParseProto read
// it.
func familyName(msg []byte) ([]byte, error) {
	var last []byte
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil, fmt.Errorf("protobuf field tag: %w", protowire.ParseError(n))
		}
		msg = msg[n:]
		if num == 1 && typ == protowire.BytesType {
			name, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return nil, fmt.Errorf("protobuf family name: %w", protowire.ParseError(n))
			}
			last, msg = name, msg[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, msg)
		if n < 0 {
			return nil, fmt.Errorf("protobuf field: %w", protowire.ParseError(n))
		}
		msg = msg[n:]
	}
	return last, nil
}
