package localsandbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

func TestEndedSetForgetsTheOldestAndTheExpired(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := func(id string) sandbox.Handle { return sandbox.Handle{ID: id} }
	tests := []struct {
		name  string
		adds  []string // one per second from t0
		at    time.Duration
		wantK []string // remembered ids, looked up at t0+at
	}{
		{"within bounds", []string{"a", "b"}, 2 * time.Second, []string{"a", "b"}},
		{"over the count", []string{"a", "b", "c", "d"}, 4 * time.Second, []string{"b", "c", "d"}},
		{"re-added moves to the back", []string{"a", "b", "a", "c"}, 4 * time.Second, []string{"a", "b", "c"}},
		{"past the retention", []string{"a", "b", "c"}, 10*time.Second + 500*time.Millisecond, []string{"b", "c"}},
		{"all expired", []string{"a"}, time.Hour, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newEndedSet(3, 10*time.Second)
			for i, id := range tt.adds {
				s.add(h(id), t0.Add(time.Duration(i)*time.Second))
			}
			var got []string
			for _, id := range []string{"a", "b", "c", "d"} {
				if hh, ok := s.get(id, t0.Add(tt.at)); ok {
					if hh.ID != id {
						t.Errorf("get(%q) = handle %q", id, hh.ID)
					}
					got = append(got, id)
				}
			}
			if diff := cmp.Diff(tt.wantK, got); diff != "" {
				t.Errorf("remembered (-want +got):\n%s", diff)
			}
			if s.len() != len(tt.wantK) {
				t.Errorf("len = %d, want %d", s.len(), len(tt.wantK))
			}
		})
	}
}

func TestDriverForgetsEndedSandboxesBeyondItsMemory(t *testing.T) {
	f := newFixture(t)
	d, err := New(Config{DataDir: t.TempDir(), RunnerPath: runnerBinary, Blobs: f.blobs, Completions: f.completions,
		StopGrace: 500 * time.Millisecond, EndedMemory: 1, Images: f.images})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	ctx := context.Background()
	first, err := d.Launch(ctx, spec(t, "e1", "nop", ""))
	if err != nil {
		t.Fatal(err)
	}
	f.nextCompletion(t)
	// Ended and remembered: launching it again adopts it.
	if again, err := d.Launch(ctx, spec(t, "e1", "nop", "")); err != nil || again != first {
		t.Errorf("Launch of an ended launch id = %+v, %v; want the first handle", again, err)
	}
	select {
	case body := <-f.completions.ch:
		t.Fatalf("a second completion arrived: %s", body)
	case <-time.After(300 * time.Millisecond):
	}
	second, err := d.Launch(ctx, spec(t, "e2", "nop", ""))
	if err != nil {
		t.Fatal(err)
	}
	f.nextCompletion(t)
	d.mu.Lock()
	remembered, live := d.ended.len(), len(d.live)
	d.mu.Unlock()
	if remembered != 1 || live != 0 {
		t.Errorf("driver remembers %d ended and %d live sandboxes, want 1 and 0", remembered, live)
	}
	if err := d.Stop(ctx, second.ID); err != nil {
		t.Errorf("Stop of a remembered ended sandbox = %v, want nil", err)
	}
	if err := d.Stop(ctx, first.ID); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Stop of a forgotten sandbox = %v, want ErrNotFound", err)
	}
}

// TestGatewayKeyEnv: of the server's environment the runner gets the model
// gateway's keys (a hosted.api_key_env names one) and nothing else.
func TestGatewayKeyEnv(t *testing.T) {
	got := gatewayKeyEnv([]string{"HOME=/root", "GAUNTLET_GATEWAY_KEY_HOSTED=sk-h", "AWS_SECRET_ACCESS_KEY=x", "GAUNTLET_SECRET_A=b"})
	if len(got) != 1 || got[0] != "GAUNTLET_GATEWAY_KEY_HOSTED=sk-h" {
		t.Errorf("gatewayKeyEnv = %q, want only the gateway key", got)
	}
}
