package querypool

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
)

func TestACallerGivingUpDoesNotFailTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(1)
		open := make(chan struct{})
		runs := 0
		ask := func(ctx context.Context) (any, error) {
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
			_, err := p.Do(first, "http://prom", "q", ask)
			firstErr <- err
		}()
		synctest.Wait()
		second := make(chan any, 1)
		go func() {
			v, err := p.Do(context.Background(), "http://prom", "q", ask)
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
