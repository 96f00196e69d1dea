package querypool

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

const promURL = "http://prom"

func sample(key string) Query { return Query{Server: promURL, Key: key, Kind: Sample} }

func TestACallerGivingUpDoesNotFailTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		open := make(chan struct{})
		runs := 0
		ask := func(ctx context.Context, _ time.Duration) (any, error) {
			runs++
			select {
			case <-open:
				return "answer", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		first, cancel := context.WithCancel(context.Background())
		firstErr := make(chan error, 1)
		go func() {
			_, err := p.Do(first, sample("q"), ask)
			firstErr <- err
		}()
		synctest.Wait()
		second := make(chan any, 1)
		go func() {
			v, err := p.Do(context.Background(), sample("q"), ask)
			if err != nil {
				v = err
			}
			second <- v
		}()
		synctest.Wait()
		cancel() // the caller that started the query goes away
		if err := <-firstErr; !errors.Is(err, context.Canceled) {
			t.Errorf("first caller: %v, want its own cancellation", err)
		}
		close(open)
		if v := <-second; v != "answer" {
			t.Errorf("second caller got %v, want the shared answer", v)
		}
		if runs != 1 {
			t.Errorf("asked %d times, want once", runs)
		}
	})
}

// An answer is kept until the deadline of the asker that sent it:
// samplers of one instant whose samples begin after it came back take it
// instead of sending the query again; past the deadline (the next
// instant's samples) the query is sent anew.
func TestAQueryIsSentOncePerInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(0)
		var runs atomic.Int32
		ask := func(context.Context, time.Duration) (any, error) {
			runs.Add(1)
			time.Sleep(10 * time.Millisecond)
			return "answer", nil
		}
		do := func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if v, err := p.Do(ctx, sample("q@10"), ask); err != nil || v != "answer" {
				t.Fatalf("Do: %v, %v", v, err)
			}
		}
		do()
		time.Sleep(time.Second) // after the answer, before the deadline
		do()
		if n := runs.Load(); n != 1 {
			t.Errorf("sent %d times within the first asker's deadline, want once", n)
		}
		time.Sleep(3 * time.Second)
		do()
		if n := runs.Load(); n != 2 {
			t.Errorf("sent %d times in all, want again once the first deadline passed", n)
		}
	})
}

// A query is not sent with less time left than the server's recent
// answers took: it would be abandoned before its answer. It fails at once
// with ErrNoTime and the server never sees it; one with the time left is
// sent, and is given the time left as its server timeout.
func TestAQueryIsNotSentWithoutTheTimeToAnswerIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		slow := func(ctx context.Context, timeout time.Duration) (any, error) {
			time.Sleep(800 * time.Millisecond)
			return "answer", nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		if _, err := p.Do(ctx, sample("warm"), slow); err != nil {
			t.Fatal(err)
		}
		cancel()

		// One query holds the only slot for 2.5 s; the next, given 3 s,
		// would have 0.5 s left when its turn came, less than the 0.8 s
		// the server takes.
		release := make(chan struct{})
		go func() {
			_, _ = p.Do(context.Background(), sample("long"), func(context.Context, time.Duration) (any, error) {
				<-release
				return "answer", nil
			})
		}()
		synctest.Wait()
		go func() {
			time.Sleep(2500 * time.Millisecond)
			close(release)
		}()
		sent := false
		start := time.Now()
		ctx, cancel = context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := p.Do(ctx, sample("late"), func(ctx context.Context, timeout time.Duration) (any, error) {
			sent = true
			return slow(ctx, timeout)
		})
		if !errors.Is(err, ErrNoTime) || sent {
			t.Fatalf("a query with 0.5 s left and answers taking 0.8 s: sent %t, error %v; want not sent, ErrNoTime", sent, err)
		}
		if waited := time.Since(start); waited != 2200*time.Millisecond {
			t.Errorf("it failed after %v; want as soon as 0.8 s were left (2.2 s)", waited)
		}
		synctest.Wait()

		// With the slot free and 3.9 s left (the answers took 0.8 and
		// 2.5 s) it goes, told the whole seconds left, which is what the
		// server's timeout can say.
		ctx, cancel = context.WithTimeout(context.Background(), 3900*time.Millisecond)
		defer cancel()
		var given time.Duration
		if _, err := p.Do(ctx, sample("in time"), func(ctx context.Context, timeout time.Duration) (any, error) {
			given = timeout
			dl, _ := ctx.Deadline()
			if time.Until(dl) != timeout {
				t.Errorf("the query may run %v, its server timeout is %v; want the same", time.Until(dl), timeout)
			}
			return "answer", nil
		}); err != nil || given != 3*time.Second {
			t.Errorf("error %v, server timeout %v; want sent with 3s", err, given)
		}
	})
}

// A query that was cut off at its deadline is not a latency: a server
// that was down (or slow) once is given the next queries as before, not
// refused them for a minute.
func TestATimedOutQueryIsNotALatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := p.Do(ctx, sample("hangs"), func(ctx context.Context, _ time.Duration) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("hanging query: %v", err)
		}
		ctx, cancel = context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		if _, err := p.Do(ctx, sample("next"), func(context.Context, time.Duration) (any, error) { return "answer", nil }); err != nil {
			t.Errorf("the next query: %v; want it sent", err)
		}
	})
}

// One slow answer (a pause of the machine's, say) among quick ones does
// not keep the next queries from being sent: what a query is expected to
// take is what most recent answers took.
func TestOneSlowAnswerIsNotTheExpectedLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		for i := range 11 {
			d := 10 * time.Millisecond
			if i == 5 {
				d = 2 * time.Second
			}
			if _, err := p.Do(context.Background(), sample(fmt.Sprint("q", i)), answerAfter(d)); err != nil {
				t.Fatal(err)
			}
		}
		if sent, err := sendWithin(p, sample("next"), time.Second); !sent || err != nil {
			t.Errorf("a query with 1 s left after ten answers of 10 ms and one of 2 s: sent %t, %v; want it sent", sent, err)
		}
	})
}

// A kind of query no answer has measured yet (a scaler's first samples,
// queued behind its first backfills) is expected to take what the kinds
// measured take, not nothing: with less time left than that it is not
// sent either.
func TestAKindNotMeasuredYetIsExpectedToTakeWhatOthersTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		if _, err := p.Do(context.Background(), Query{Server: promURL, Key: "past", Kind: Backfill}, answerAfter(800*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if sent, err := sendWithin(p, sample("first sample"), 500*time.Millisecond); sent || !errors.Is(err, ErrNoTime) {
			t.Errorf("a first sample with 0.5 s left after a backfill answered in 0.8 s: sent %t, %v; want not sent", sent, err)
		}
	})
}

// A query that began waiting before the server had answered anything is
// weighed, when its turn comes, against the answers that came meanwhile.
func TestTheAnswersThatCameWhileAQueryWaitedCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		go func() {
			_, _ = p.Do(context.Background(), Query{Server: promURL, Key: "first", Kind: Backfill}, answerAfter(800*time.Millisecond))
		}()
		synctest.Wait()
		// Its turn comes after 0.8 s, with 0.4 s left.
		if sent, err := sendWithin(p, Query{Server: promURL, Key: "second", Kind: Backfill}, 1200*time.Millisecond); sent || !errors.Is(err, ErrNoTime) {
			t.Errorf("a query left 0.4 s by a wait behind an answer of 0.8 s: sent %t, %v; want not sent", sent, err)
		}
	})
}

// answerAfter is a server answering after d.
func answerAfter(d time.Duration) func(context.Context, time.Duration) (any, error) {
	return func(context.Context, time.Duration) (any, error) {
		time.Sleep(d)
		return "answer", nil
	}
}

// sendWithin asks q with left to go, and says whether it was sent.
func sendWithin(p *Pool, q Query, left time.Duration) (sent bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), left)
	defer cancel()
	_, err = p.Do(ctx, q, func(context.Context, time.Duration) (any, error) {
		sent = true
		return "answer", nil
	})
	return sent, err
}

// History reads take at most half of a server's slots, so a sample's
// query never queues behind more than that.
func TestHistoryTakesAtMostHalfTheSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4)
		release := make(chan struct{})
		var inFlight, most atomic.Int32
		hold := func(context.Context, time.Duration) (any, error) {
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			<-release
			inFlight.Add(-1)
			return "answer", nil
		}
		for i := range 6 {
			go func() {
				_, _ = p.Do(context.Background(), Query{Server: promURL, Key: string(rune('a' + i)), Kind: History}, hold)
			}()
		}
		synctest.Wait()
		if n := most.Load(); n != 2 {
			t.Errorf("%d history reads in flight out of 4 slots, want 2", n)
		}
		sampled := make(chan struct{})
		go func() {
			_, _ = p.Do(context.Background(), sample("sample"), func(context.Context, time.Duration) (any, error) { return "answer", nil })
			close(sampled)
		}()
		synctest.Wait()
		select {
		case <-sampled:
		default:
			t.Error("a sample's query waited behind history reads with slots free")
		}
		close(release)
	})
}
