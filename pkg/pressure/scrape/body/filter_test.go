package body

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestFilterText(t *testing.T) {
	long := strings.Repeat("x", 3*ReaderSize)
	in := "# HELP barometer_activations Working set.\n" +
		"# TYPE barometer_activations gauge\n" +
		"barometer_activations{a=\"" + long + "\"} 1\n" +
		"   \t barometer_activations{a=\"2\"} 2\n" +
		"# HELP go_goroutines " + long + "\n" +
		"go_goroutines 7\n" +
		"go_goroutines_extra{" + long + "\n" +
		"# a plain comment\n" +
		"\n" +
		"{\"quoted.name\"} 3\n" +
		"# TYPE \"quoted.name\" gauge\n" +
		"barometer_activations_total 9\n" +
		"barometer_activations 4"
	want := "# HELP barometer_activations Working set.\n" +
		"# TYPE barometer_activations gauge\n" +
		"barometer_activations{a=\"" + long + "\"} 1\n" +
		"   \t barometer_activations{a=\"2\"} 2\n" +
		"{\"quoted.name\"} 3\n" +
		"# TYPE \"quoted.name\" gauge\n" +
		"barometer_activations 4"
	var out bytes.Buffer
	r := bufio.NewReaderSize(strings.NewReader(in), ReaderSize)
	if err := filterText(r, &out, wantSet{"barometer_activations": 0}); err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Errorf("filtered:\n%.300s\nwant:\n%.300s", out.String(), want)
	}
}

// TestFilterProtoGrowsWithWhatArrives: a length prefix is never trusted
// with an allocation. One longer than the response limit is refused before
// anything is read; one within it, on a body that stops short, costs only
// the bytes that came.
func TestFilterProtoGrowsWithWhatArrives(t *testing.T) {
	const limit = 256 << 20
	prefix := func(n uint64) []byte { return binary.AppendUvarint(nil, n) }

	// Past the limit once the prefix itself is counted.
	var out bytes.Buffer
	err := filterProto(bufio.NewReader(bytes.NewReader(prefix(limit))), &out, wantSet{}, limit)
	if !errors.Is(err, ErrTooLarge) || out.Cap() > 0 {
		t.Fatalf("a %d-byte claim under a %d-byte limit: err %v, buffer %d bytes", limit, limit, err, out.Cap())
	}
	// Within the limit, but the body ends after 10 bytes.
	body := append(prefix(limit-100), make([]byte, 10)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err = filterProto(bufio.NewReader(bytes.NewReader(body)), &out, wantSet{}, limit)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short body: err %v, want unexpected EOF", err)
	}
	if out.Len() != 0 || out.Cap() > 64<<10 {
		t.Errorf("short body left %d bytes in a %d-byte buffer", out.Len(), out.Cap())
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("a 15-byte body allocated %d MiB", alloc>>20)
	}
	// The limit counts across messages: two that fit alone do not together.
	msg := protowire.AppendTag(nil, 1, protowire.BytesType)
	msg = protowire.AppendString(msg, "barometer_activations")
	one := append(prefix(uint64(len(msg))), msg...)
	two := append(append([]byte(nil), one...), one...)
	out.Reset()
	if err := filterProto(bufio.NewReader(bytes.NewReader(two)), &out, wantSet{"barometer_activations": 0}, int64(len(one)+len(one)/2)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("two messages over the limit: err %v", err)
	}
	out.Reset()
	if err := filterProto(bufio.NewReader(bytes.NewReader(two)), &out, wantSet{"barometer_activations": 0}, int64(len(two))); err != nil || !bytes.Equal(out.Bytes(), two) {
		t.Errorf("two messages at the limit: err %v, kept %d of %d bytes", err, out.Len(), len(two))
	}
	out.Reset()
	if err := filterProto(bufio.NewReader(bytes.NewReader(two)), &out, wantSet{"other": 0}, int64(len(two))); err != nil || out.Len() != 0 {
		t.Errorf("two unwanted messages: err %v, kept %d bytes", err, out.Len())
	}
}
