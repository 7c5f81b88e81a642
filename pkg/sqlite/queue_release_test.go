package sqlite

import (
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/queue"
)

func TestReleaseInFlight(t *testing.T) {
	db := openTemp(t)
	clock := &fakeClock{}
	db.now = clock.now
	q, _ := db.Queue("q", QueueOptions{})
	ctx := t.Context()
	if err := q.Send(ctx, queue.Outgoing{Body: []byte("received")}); err != nil {
		t.Fatal(err)
	}
	got, err := q.Receive(ctx, 1, time.Hour, 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("Receive = %v, %v", got, err)
	}
	if err := q.Send(ctx, queue.Outgoing{Body: []byte("delayed"), Delay: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	n, err := q.ReleaseInFlight(ctx)
	if err != nil || n != 1 {
		t.Fatalf("ReleaseInFlight = %d, %v; want 1 released", n, err)
	}
	again, err := q.Receive(ctx, 10, time.Hour, 0)
	if err != nil || len(again) != 1 || string(again[0].Body) != "received" || again[0].ReceiveCount != 2 {
		t.Fatalf("Receive after release = %+v, %v; want the received message again, not the delayed one", again, err)
	}
	if err := q.Delete(ctx, got[0].Receipt); err != nil {
		t.Fatal(err)
	}
	if err := q.ChangeVisibility(ctx, again[0].Receipt, 0); err != nil {
		t.Fatal(err)
	}
	if back, _ := q.Receive(ctx, 10, time.Hour, 0); len(back) != 1 {
		t.Errorf("the old receipt deleted the released message: %+v", back)
	}
}
