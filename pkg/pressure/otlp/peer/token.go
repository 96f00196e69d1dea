package peer

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
)

// token is the peer token: every replica sends it and accepts it, read
// through a receiver.TokenFile (re-read when the file changed, the last
// good token kept when a read fails).
type token struct{ file *receiver.TokenFile }

func readToken(path string) (*token, error) {
	if path == "" {
		return nil, errors.New("required with BAROMETER_PEER_ADDR: the replicas authenticate each other with it")
	}
	t := &token{file: receiver.NewTokenFile(path)}
	if _, _, _, err := t.file.Current(); err != nil {
		return nil, err
	}
	return t, nil
}

// current returns the token; a failed re-read keeps the last good one.
func (t *token) current() (string, [sha256.Size]byte) {
	raw, hash, _, _ := t.file.Current()
	return raw, hash
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
