package sqlite

import (
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

func BenchmarkPut(b *testing.B) {
	tb := openTemp(b).Table()
	data := []byte(`{"status":"running","agent":"codex/openai/gpt-5.2","task":"git-multibranch","attempt":1}`)
	for i := 0; b.Loop(); i++ {
		item := store.Item{PK: "run#" + strconv.Itoa(i%1000), SK: "slot#" + strconv.Itoa(i), GSI1PK: "queued", GSI1SK: strconv.Itoa(i), Data: data}
		if _, err := tb.Put(b.Context(), item, store.Cond{Kind: store.IfNotExists}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPutParallel(b *testing.B) {
	b.SetParallelism(8) // 16 writers on 2 cores, as the local pipeline runs them
	tb := openTemp(b).Table()
	data := []byte(`{"status":"running"}`)
	var n int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := atomicAdd(&n)
			item := store.Item{PK: "run#" + strconv.FormatInt(i%1000, 10), SK: "slot#" + strconv.FormatInt(i, 10), Data: data}
			if _, err := tb.Put(b.Context(), item, store.Cond{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkAddGuarded(b *testing.B) {
	tb := openTemp(b).Table()
	guard := &store.Guard{Counter: "running", Max: math.MaxInt64}
	for i := 0; b.Loop(); i++ {
		if _, err := tb.Add(b.Context(), "run#"+strconv.Itoa(i%100), "gate", map[string]int64{"running": 1}, guard); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGet(b *testing.B) {
	tb := openTemp(b).Table()
	for i := range 1000 {
		if _, err := tb.Put(b.Context(), store.Item{PK: "run", SK: strconv.Itoa(i), Data: []byte(`{"a":1}`)}, store.Cond{}); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; b.Loop(); i++ {
		if _, err := tb.Get(b.Context(), "run", strconv.Itoa(i%1000)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreate125k plans a 10 agents × 2,500 tasks × 5 attempts run: one
// Create of 125,000 slot items (with their change records) per op.
func BenchmarkCreate125k(b *testing.B) {
	items := make([]store.Item, 125_000)
	for i := range items {
		items[i] = store.Item{
			PK: "run#01JABCDEF", SK: fmt.Sprintf("slot#%02d#%04d#%d", i/12500, i/5%2500, i%5),
			GSI1PK: "run#01JABCDEF#queued", GSI1SK: fmt.Sprintf("%06d", i),
			Data: []byte(`{"status":"queued","generation":0}`),
		}
	}
	for b.Loop() {
		b.StopTimer()
		tb := openTemp(b).Table()
		b.StartTimer()
		n, err := tb.Create(b.Context(), items)
		if err != nil || n != len(items) {
			b.Fatalf("Create = %d, %v", n, err)
		}
	}
}

func BenchmarkQueueSendReceiveDelete(b *testing.B) {
	q, err := openTemp(b).Queue("slots", QueueOptions{})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"schema_version":1,"run":"01JABCDEF","slot":"slot#01#0001#0"}`)
	for b.Loop() {
		if err := q.Send(b.Context(), queue.Outgoing{Body: body}); err != nil {
			b.Fatal(err)
		}
		msgs, err := q.Receive(b.Context(), 1, time.Minute, 0)
		if err != nil || len(msgs) != 1 {
			b.Fatalf("Receive = %d messages, %v", len(msgs), err)
		}
		if err := q.Delete(b.Context(), msgs[0].Receipt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueueBatch10 sends, receives and deletes ten messages per op.
func BenchmarkQueueBatch10(b *testing.B) {
	q, err := openTemp(b).Queue("slots", QueueOptions{})
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]queue.Outgoing, queue.MaxBatch)
	for i := range batch {
		batch[i] = queue.Outgoing{Body: []byte(`{"schema_version":1,"slot":"x"}`)}
	}
	for b.Loop() {
		if err := q.Send(b.Context(), batch...); err != nil {
			b.Fatal(err)
		}
		msgs, err := q.Receive(b.Context(), queue.MaxBatch, time.Minute, 0)
		if err != nil || len(msgs) != queue.MaxBatch {
			b.Fatalf("Receive = %d messages, %v", len(msgs), err)
		}
		for _, m := range msgs {
			if err := q.Delete(b.Context(), m.Receipt); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func atomicAdd(n *int64) int64 { return atomic.AddInt64(n, 1) }
