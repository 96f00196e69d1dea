package peer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
)

// token is the peer token: every replica sends it and accepts it. The
// file is re-read when it changed (size, modification time or identity),
// so a rotated Secret is used from the next call on; a read that fails
// keeps the last good token.
type token struct {
	path string

	mu   sync.Mutex
	stat os.FileInfo
	raw  string
	hash [sha256.Size]byte
}

func readToken(path string) (*token, error) {
	if path == "" {
		return nil, errors.New("required with BAROMETER_PEER_ADDR: the replicas authenticate each other with it")
	}
	t := &token{path: path}
	if err := t.refresh(); err != nil {
		return nil, err
	}
	return t, nil
}

// current returns the token, re-reading the file if it changed.
func (t *token) current() (string, [sha256.Size]byte) {
	_ = t.refresh() // a failed read keeps the last good token
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.raw, t.hash
}

func (t *token) refresh() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, err := os.Stat(t.path)
	if err != nil {
		return err
	}
	if t.stat != nil && os.SameFile(st, t.stat) && st.Size() == t.stat.Size() && st.ModTime().Equal(t.stat.ModTime()) {
		return nil
	}
	f, err := os.Open(t.path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, receiver.MaxTokenFileBytes+1))
	switch {
	case err != nil:
		return err
	case len(data) > receiver.MaxTokenFileBytes:
		return fmt.Errorf("%s: larger than %d bytes", t.path, receiver.MaxTokenFileBytes)
	}
	raw := bytes.TrimSpace(data)
	if len(raw) == 0 {
		return fmt.Errorf("%s: empty", t.path)
	}
	t.stat, t.raw, t.hash = st, string(raw), sha256.Sum256(raw)
	return nil
}

// GetRequestMetadata sends the token as a bearer token, as OTLP pushes
// carry theirs (credentials.PerRPCCredentials).
func (t *token) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	raw, _ := t.current()
	return map[string]string{"authorization": "Bearer " + raw}, nil
}

// RequireTransportSecurity is false: the peer listener serves plaintext
// inside the cluster, as the chart's NetworkPolicy admits only the
// scaler's own pods to it (docs/operations.md, "HA").
func (*token) RequireTransportSecurity() bool { return false }

var errUnauthenticated = status.Error(codes.Unauthenticated, "the peer token is required")

// authorize admits a call that carries the peer token, before its message
// is read (grpc.InTapHandle).
func (p *Peers) authorize(ctx context.Context, info *tap.Info) (context.Context, error) {
	var sent string
	if v := info.Header.Get("authorization"); len(v) > 0 {
		if scheme, rest, ok := strings.Cut(strings.TrimSpace(v[0]), " "); ok && strings.EqualFold(scheme, "Bearer") {
			sent = strings.TrimSpace(rest)
		}
	}
	_, want := p.token.current()
	got := sha256.Sum256([]byte(sent))
	if sent == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return ctx, errUnauthenticated
	}
	return ctx, nil
}
