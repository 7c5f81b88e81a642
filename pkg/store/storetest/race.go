package storetest

import (
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// racers is how many goroutines each race runs.
const racers = 20

// race runs fn in racers goroutines released at once and counts the nil
// results and the ErrConditionFailed ones; any other error fails the test.
func race(t *testing.T, fn func(i int) error) (won, lost int) {
	t.Helper()
	var (
		start      = make(chan struct{})
		wg         sync.WaitGroup
		wins, loss atomic.Int64
		errsMu     sync.Mutex
		errs       []error
	)
	for i := range racers {
		wg.Go(func() {
			<-start
			switch err := fn(i); {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, store.ErrConditionFailed):
				loss.Add(1)
			default:
				errsMu.Lock()
				errs = append(errs, err)
				errsMu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("racing writes failed: %v", err)
	}
	return int(wins.Load()), int(loss.Load())
}

func testRaceGuardedCounter(t *testing.T, tb store.Table, _ options) {
	p := prefix(t)
	const max = 7
	won, lost := race(t, func(int) error {
		_, err := tb.Add(t.Context(), p+"gate", "gate", map[string]int64{"running": 1}, &store.Guard{Counter: "running", Max: max})
		return err
	})
	if won != max || lost != racers-max {
		t.Errorf("%d guarded Adds to Max %d: %d succeeded, %d failed the guard; want %d and %d", racers, max, won, lost, max, racers-max)
	}
	if got := mustGet(t, tb, p+"gate", "gate").Counters["running"]; got != max {
		t.Errorf("counter after the race = %d, want %d", got, max)
	}
}

func testRaceIfVersionSingleShot(t *testing.T, tb store.Table, _ options) {
	p := prefix(t)
	mustPut(t, tb, store.Item{PK: p + "run", SK: "run", Data: data(t, "pending")}, store.Cond{})
	won, lost := race(t, func(i int) error {
		_, err := tb.Put(t.Context(), store.Item{PK: p + "run", SK: "run", Data: data(t, i)}, store.Cond{Kind: store.IfVersion, Version: 1})
		return err
	})
	if won != 1 || lost != racers-1 {
		t.Errorf("%d Puts IfVersion 1: %d won, %d lost; want exactly 1 winner", racers, won, lost)
	}
	if got := mustGet(t, tb, p+"run", "run").Version; got != 2 {
		t.Errorf("version after the race = %d, want 2", got)
	}
}

func testRaceIfNotExistsSingleShot(t *testing.T, tb store.Table, _ options) {
	p := prefix(t)
	won, lost := race(t, func(i int) error {
		_, err := tb.Put(t.Context(), store.Item{PK: p + "slot", SK: "attempt#1", Data: data(t, i)}, store.Cond{Kind: store.IfNotExists})
		return err
	})
	if won != 1 || lost != racers-1 {
		t.Errorf("%d Puts IfNotExists: %d won, %d lost; want exactly 1 winner", racers, won, lost)
	}
}

// testRaceReadModifyWrite: optimistic increments with retries all land once.
func testRaceReadModifyWrite(t *testing.T, tb store.Table, _ options) {
	p := prefix(t)
	const perRacer = 5
	type doc struct{ N int }
	mustPut(t, tb, store.Item{PK: p + "doc", SK: "doc", Data: data(t, doc{})}, store.Cond{})
	increment := func() error {
		for {
			item, err := tb.Get(t.Context(), p+"doc", "doc")
			if err != nil {
				return err
			}
			var d doc
			if err := json.Unmarshal(item.Data, &d); err != nil {
				return err
			}
			d.N++
			next := item
			next.Data = data(t, d)
			_, err = tb.Put(t.Context(), next, store.Cond{Kind: store.IfVersion, Version: item.Version})
			if !errors.Is(err, store.ErrConditionFailed) {
				return err
			}
		}
	}
	won, _ := race(t, func(int) error {
		for range perRacer {
			if err := increment(); err != nil {
				return err
			}
		}
		return nil
	})
	if won != racers {
		t.Fatalf("%d of %d racers finished", won, racers)
	}
	item := mustGet(t, tb, p+"doc", "doc")
	var d doc
	if err := json.Unmarshal(item.Data, &d); err != nil {
		t.Fatal(err)
	}
	if d.N != racers*perRacer || item.Version != racers*perRacer+1 {
		t.Errorf("after %d increments: N = %d, version %d; want %d, %d", racers*perRacer, d.N, item.Version, racers*perRacer, racers*perRacer+1)
	}
}
