package sqlite

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
	"github.com/gauntlet-bench/gauntlet/pkg/diskspace/diskspacetest"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
)

func TestWriteOnAFullFilesystemIsOutOfSpace(t *testing.T) {
	dir := diskspacetest.Mount(t, 16)
	db, err := Open(filepath.Join(dir, "gauntlet.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q, _ := db.Queue("q", QueueOptions{})
	ctx := t.Context()
	body := bytes.Repeat([]byte("x"), 200<<10)
	if err := q.Send(ctx, queue.Outgoing{Body: body}); err != nil {
		t.Fatalf("Send before the filesystem filled = %v", err)
	}
	free := diskspacetest.Fill(t, dir)
	// The WAL may hold a few pages still; writes fail once it needs more.
	var sendErr error
	for range 100 {
		if sendErr = q.Send(ctx, queue.Outgoing{Body: body}); sendErr != nil {
			break
		}
	}
	e, ok := diskspace.As(sendErr)
	if !ok || e.Dir != dir {
		t.Fatalf("Send on a full filesystem = %v, want a *diskspace.Error naming %s", sendErr, dir)
	}
	free()
	if err := q.Send(ctx, queue.Outgoing{Body: body}); err != nil {
		t.Fatalf("Send after space returned = %v, want it stored", err)
	}
}

func TestPostponeTakesBackTheReceive(t *testing.T) {
	db := openTemp(t)
	clock := &fakeClock{}
	db.now = clock.now
	q, _ := db.Queue("q", QueueOptions{MaxReceives: 2, DeadLetter: "q-dlq"})
	dlq, _ := db.Queue("q-dlq", QueueOptions{})
	ctx := t.Context()
	if err := q.Send(ctx, queue.Outgoing{Body: []byte("m")}); err != nil {
		t.Fatal(err)
	}
	var last queue.Message
	for i := range 5 {
		got, err := q.Receive(ctx, 1, time.Hour, 0)
		if err != nil || len(got) != 1 {
			t.Fatalf("receive %d = %+v, %v; want the message (postponed deliveries do not count)", i, got, err)
		}
		if got[0].ReceiveCount != 1 {
			t.Fatalf("receive %d: ReceiveCount = %d, want 1", i, got[0].ReceiveCount)
		}
		if err := q.Postpone(ctx, got[0].Receipt, time.Minute); err != nil {
			t.Fatal(err)
		}
		if early, _ := q.Receive(ctx, 1, time.Hour, 0); len(early) != 0 {
			t.Fatalf("receive %d: the postponed message came back before its delay: %+v", i, early)
		}
		clock.advance(time.Minute)
		last = got[0]
	}
	if err := q.Postpone(ctx, last.Receipt, 0); err != nil {
		t.Fatalf("Postpone with a stale receipt = %v, want a no-op", err)
	}
	if dead, _ := dlq.Receive(ctx, 1, time.Hour, 0); len(dead) != 0 {
		t.Errorf("a postponed message was dead-lettered: %+v", dead)
	}
}
