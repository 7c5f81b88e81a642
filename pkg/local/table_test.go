package local

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/internal/syncbuf"
	"github.com/gauntlet-bench/gauntlet/pkg/fnspec"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
)

// openBare opens a platform whose sandboxes never start.
func openBare(t *testing.T, opts Options) *Platform {
	t.Helper()
	opts.DataDir, opts.Isolation, opts.RunnerPath = t.TempDir(), "process", "/bin/true"
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestLoopTableRunsEveryFunction checks that the local loop table is the
// one composition of `gauntlet local`: every function of fnspec's table
// but the API (served over HTTP) is a row, a queue function as the poller
// of its Source queue, a scheduled one also as its schedule.
func TestLoopTableRunsEveryFunction(t *testing.T) {
	p := openBare(t, Options{})
	var names []string
	for _, l := range p.loops() {
		names = append(names, l.name)
	}
	for _, f := range fnspec.Functions {
		if f.Trigger == fnspec.API {
			continue
		}
		if !slices.Contains(names, f.Name) {
			t.Errorf("loop table %v has no row for function %s", names, f.Name)
		}
		if f.Scheduled && !slices.Contains(names, f.Name+" schedule") {
			t.Errorf("loop table %v has no schedule row for function %s", names, f.Name)
		}
	}
	for _, c := range p.consumers() {
		if c.fn.Trigger != fnspec.Queue || p.queues[string(c.fn.Source)] == nil {
			t.Errorf("consumer %s: trigger %s, source %q; want a queue function whose queue the platform opened", c.fn.Name, c.fn.Trigger, c.fn.Source)
		}
	}

	off := openBare(t, Options{RefreshEvery: -1})
	for _, l := range off.loops() {
		if l.name == fnspec.RegistrySync.Name+" schedule" {
			t.Errorf("RefreshEvery -1: the loop table still has the row %q", l.name)
		}
	}
}

// TestSyncPollerDeadLettersPoison sends the sync queue a message no
// version of the sync message can be: the sync row's poller, like every
// other, moves it to the sync dead-letter queue at once (not after the
// queue's ten deliveries).
func TestSyncPollerDeadLettersPoison(t *testing.T) {
	var logs syncbuf.Buffer
	p := openBare(t, Options{RefreshEvery: -1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	body := []byte(`{"schema_version":99,"workspace":"w","key":"k"}`)
	if err := p.queues[SyncQueue].Send(ctx, queue.Outgoing{Body: body}); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		msgs, err := p.dlqs[SyncQueue].Receive(ctx, 1, time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 1 {
			if string(msgs[0].Body) != string(body) {
				t.Errorf("dead letter = %s, want %s", msgs[0].Body, body)
			}
			if !strings.Contains(logs.String(), `msg="poison message dead-lettered" queue=sync`) {
				t.Errorf("the sync poller did not dead-letter the message itself; logs:\n%s", logs.String())
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the poison sync message did not reach the sync dead-letter queue within 60 s")
		}
		<-tick.C
	}
}
