package receiver

import "golang.org/x/sync/semaphore"

// shares is a bounded number of places, at most perCredential of them
// held by one credential. Taking one never waits.
type shares struct {
	all *semaphore.Weighted
	per map[*credential]*semaphore.Weighted
}

func newShares(total, perCredential int, creds []*credential) *shares {
	s := &shares{all: semaphore.NewWeighted(int64(total)), per: make(map[*credential]*semaphore.Weighted, len(creds))}
	for _, c := range creds {
		s.per[c] = semaphore.NewWeighted(int64(perCredential))
	}
	return s
}

// taken is what take did.
type taken int

const (
	tookShare taken = iota
	overShare       // the credential holds its share
	full            // every place is held
)

func (s *shares) take(c *credential) taken {
	if !s.per[c].TryAcquire(1) {
		return overShare
	}
	if !s.all.TryAcquire(1) {
		s.per[c].Release(1)
		return full
	}
	return tookShare
}

func (s *shares) give(c *credential) {
	s.all.Release(1)
	s.per[c].Release(1)
}
