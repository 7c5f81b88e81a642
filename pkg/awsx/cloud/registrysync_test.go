package cloud_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud/cloudtest"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

func TestLoadSyncRefreshAfter(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    time.Duration
		wantErr string
	}{
		{"unset", "", cloud.DefaultSyncRefreshAfter, ""},
		{"hours", "2h", 2 * time.Hour, ""},
		{"zero", "0s", 0, ""},
		{"negative", "-5m", 0, `GAUNTLET_SYNC_REFRESH_AFTER="-5m" is not a duration`},
		{"no unit", "60", 0, `GAUNTLET_SYNC_REFRESH_AFTER="60" is not a duration`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := stackEnv()
			if tt.value != "" {
				env[cloud.EnvSyncRefreshAfter] = tt.value
			}
			cfg, err := cloud.Load(cloud.RegistrySync, cloudtest.Getenv(env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("Load(%s=%q) error = %v, want %q", cloud.EnvSyncRefreshAfter, tt.value, err, tt.wantErr)
				}
				return
			}
			if err != nil || cfg.SyncRefreshAfter != tt.want || cfg.SyncQueueURL != env[cloud.EnvSyncQueueURL] {
				t.Errorf("Load(%s=%q) = %s, queue %q, %v; want %s and the sync queue", cloud.EnvSyncRefreshAfter, tt.value, cfg.SyncRefreshAfter, cfg.SyncQueueURL, err, tt.want)
			}
		})
	}
	if _, err := cloud.Load(cloud.RegistrySync, cloudtest.Getenv(without(stackEnv(), cloud.EnvSyncQueueURL))); err == nil ||
		!strings.Contains(err.Error(), "GAUNTLET_SYNC_QUEUE_URL is not set") {
		t.Errorf("Load without the sync queue: error = %v, want it named", err)
	}
}

// TestScheduledRefreshOnTheEmulators runs the registrysync handler on
// DynamoDB Local, fauxqs SQS and S3: the scheduled event enqueues a refresh
// of each benchmark synced longer ago than the refresh age, and the SQS
// path carries it out (an unchanged one only moves its last sync; one whose
// registry moved switches its ready version and stays ready).
func TestScheduledRefreshOnTheEmulators(t *testing.T) {
	ctx := context.Background()
	env := cloudtest.NewEnv(t)
	regDir := t.TempDir()
	writeRolling(t, regDir, "word-frequency")
	vars := env.Vars()
	vars[cloud.EnvRegistry] = filepath.Join(regDir, "registry.json")
	vars[cloud.EnvSyncRefreshAfter] = "1h"
	vars[cloud.EnvSyncResumeAfter] = "1s" // a sync parked on CodeBuild resumes a second later
	p, cfg := connectRegistrySync(t, vars)
	svc, err := p.BenchSync()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	h, err := cloud.NewSyncHandler(cloud.SyncHandlerConfig{Service: svc, Queue: p.SyncQueue, RefreshAfter: cfg.SyncRefreshAfter,
		Now: func() time.Time { return now }, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	recs := records.New(p.Ports.Table)

	// Two workspaces add the dataset; the SQS path syncs both.
	for _, ws := range []string{"ws-a", "ws-b"} {
		if _, err := svc.Add(ctx, ws, "rolling"); err != nil {
			t.Fatal(err)
		}
		body, err := benchsync.NewSyncMessage(ws, "rolling-head").Encode()
		if err != nil {
			t.Fatal(err)
		}
		handleBatch(t, ctx, h, string(body))
	}
	resumeParked(t, ctx, h, p.SyncQueue, recs, "ws-a", "ws-b")
	first := readBenchmark(t, recs, "ws-a")
	if first.Status != records.SyncReady || first.ReadyVersion != "head" {
		t.Fatalf("after the SQS sync: %+v", first)
	}
	schedule := readSample(t, "registrysync-schedule.json")

	// Nothing is due yet.
	if got := invokeScheduled(t, ctx, h, schedule); got.Enqueued != 0 {
		t.Errorf("scheduled refresh right after the sync enqueued %d", got.Enqueued)
	}
	if msgs := receiveAll(t, ctx, p.SyncQueue); len(msgs) != 0 {
		t.Errorf("sync queue = %v, want empty", msgs)
	}

	// Two hours later, with the upstream head moved: both are due.
	writeRolling(t, regDir, "word-frequency", "csv-summary")
	now = now.Add(2 * time.Hour)
	if got := invokeScheduled(t, ctx, h, schedule); got.Enqueued != 2 {
		t.Errorf("scheduled refresh enqueued %d, want 2", got.Enqueued)
	}
	msgs := receiveAll(t, ctx, p.SyncQueue)
	var keys []string
	for _, body := range msgs {
		m, err := benchsync.DecodeSyncMessage([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if !m.Refresh {
			t.Errorf("message %s is no refresh", body)
		}
		keys = append(keys, m.Workspace+"/"+m.Key)
	}
	if diff := cmp.Diff([]string{"ws-a/rolling-head", "ws-b/rolling-head"}, keys); diff != "" {
		t.Errorf("refresh messages (-want +got):\n%s", diff)
	}
	synced := map[string]records.RefreshState{}
	for _, ws := range []string{"ws-a", "ws-b"} {
		if synced[ws], err = recs.Benchmarks.RefreshState(ctx, ws, "rolling-head"); err != nil {
			t.Fatal(err)
		}
	}
	handleBatch(t, ctx, h, msgs...)
	resumeParked(t, ctx, h, p.SyncQueue, recs, "ws-a", "ws-b") // csv-summary builds
	for _, ws := range []string{"ws-a", "ws-b"} {
		b := readBenchmark(t, recs, ws)
		st, err := recs.Benchmarks.RefreshState(ctx, ws, "rolling-head")
		if err != nil {
			t.Fatal(err)
		}
		if b.Status != records.SyncReady || !strings.HasPrefix(b.ReadyVersion, "head+") || b.TaskCount != 2 || b.ReadyDigest == first.ReadyDigest {
			t.Errorf("%s after refresh: %+v, want ready at a new head+… version with 2 tasks", ws, b)
		}
		// The service runs on the real clock (only the schedule's is moved).
		if !st.LastSynced.After(synced[ws].LastSynced) || st.RefreshError != "" || st.Refreshing() {
			t.Errorf("%s sync state after refresh: %+v, want last synced after %s", ws, st, synced[ws].LastSynced)
		}
		if m, _, err := recs.Benchmarks.Manifest(ctx, ws, "rolling-head", "head"); err != nil || m.Digest != first.ReadyDigest {
			t.Errorf("%s pinned version head after refresh: %v, %v", ws, m.Digest, err)
		}
	}
	// Redelivering the batch changes nothing.
	before, _ := recs.Benchmarks.RefreshState(ctx, "ws-a", "rolling-head")
	handleBatch(t, ctx, h, msgs...)
	if after, _ := recs.Benchmarks.RefreshState(ctx, "ws-a", "rolling-head"); after.Version != before.Version {
		t.Errorf("redelivered refresh wrote the sync state: version %d → %d", before.Version, after.Version)
	}
}

func writeRolling(t *testing.T, dir string, tasks ...string) {
	t.Helper()
	var refs []string
	for _, name := range tasks {
		dst := filepath.Join(dir, "tasks", name)
		if _, err := os.Stat(dst); err != nil {
			if err := os.CopyFS(dst, os.DirFS(filepath.Join("../../../examples/demo-bench", name))); err != nil {
				t.Fatal(err)
			}
		}
		refs = append(refs, `{"name": "`+name+`", "path": "tasks/`+name+`"}`)
	}
	reg := `[{"name": "rolling", "version": "head", "description": "moves", "tasks": [` + strings.Join(refs, ", ") + `]}]`
	if err := os.WriteFile(filepath.Join(dir, "registry.json"), []byte(reg), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readSample(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../../../events", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readBenchmark(t *testing.T, recs *records.Store, ws string) records.Benchmark {
	t.Helper()
	b, err := recs.Benchmarks.Benchmark(context.Background(), ws, "rolling-head")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func invokeScheduled(t *testing.T, ctx context.Context, h *cloud.SyncHandler, event []byte) cloud.RefreshResponse {
	t.Helper()
	out, err := h.Handle(ctx, event)
	if err != nil {
		t.Fatalf("scheduled event: %v", err)
	}
	resp, ok := out.(cloud.RefreshResponse)
	if !ok {
		t.Fatalf("scheduled event answered %T %+v, want a RefreshResponse", out, out)
	}
	return resp
}

// handleBatch hands the bodies to the handler as one SQS batch and fails
// on any batch item failure.
func handleBatch(t *testing.T, ctx context.Context, h *cloud.SyncHandler, bodies ...string) {
	t.Helper()
	var ev events.SQSEvent
	for i, b := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("m%d", i), Body: b, EventSource: "aws:sqs"})
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Handle(ctx, raw)
	if err != nil {
		t.Fatalf("SQS batch: %v", err)
	}
	if resp, ok := out.(events.SQSEventResponse); !ok || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("SQS batch answered %+v, want no failures", out)
	}
}

// resumeParked hands the resume messages of the workspaces' parked syncs
// and refreshes (Dockerfile tasks building in the CodeBuild fake) to the
// handler until none is parked.
func resumeParked(t *testing.T, ctx context.Context, h *cloud.SyncHandler, q queue.Queue, recs *records.Store, wss ...string) {
	t.Helper()
	parked := func() bool {
		for _, ws := range wss {
			b := readBenchmark(t, recs, ws)
			st, err := recs.Benchmarks.RefreshState(ctx, ws, b.Key)
			if b.Status == records.SyncSyncing || (err == nil && st.Refreshing()) {
				return true
			}
		}
		return false
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(time.Minute)
	for parked() {
		if time.Now().After(deadline) {
			t.Fatalf("syncs of %v still parked after a minute", wss)
		}
		if bodies := receiveAll(t, ctx, q); len(bodies) > 0 {
			for _, b := range bodies {
				if m, err := benchsync.DecodeSyncMessage([]byte(b)); err != nil || m.Resume == nil {
					t.Fatalf("sync queue while parked holds %s (%v), want resumes only", b, err)
				}
			}
			handleBatch(t, ctx, h, bodies...)
			continue
		}
		<-tick.C
	}
}

// receiveAll takes every message of the queue, returning the bodies sorted.
func receiveAll(t *testing.T, ctx context.Context, q queue.Queue) []string {
	t.Helper()
	var bodies []string
	for {
		msgs, err := q.Receive(ctx, 10, time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			bodies = append(bodies, string(m.Body))
			if err := q.Delete(ctx, m.Receipt); err != nil {
				t.Fatal(err)
			}
		}
	}
	slices.Sort(bodies)
	return bodies
}

// connectRegistrySync connects the registrysync function's platform with
// vars, as its cold start does: the SDK's AWS_ settings go to the process
// environment, and TMPDIR to a fresh dir (the image store lives under it).
func connectRegistrySync(t *testing.T, vars map[string]string) (*cloud.Platform, cloud.Config) {
	t.Helper()
	for k, v := range vars {
		if strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, v)
		}
	}
	t.Setenv("TMPDIR", t.TempDir())
	cfg, err := cloud.Load(cloud.RegistrySync, cloudtest.Getenv(vars))
	if err != nil {
		t.Fatal(err)
	}
	p, err := cloud.Connect(context.Background(), cfg, discard)
	if err != nil {
		t.Fatal(err)
	}
	return p, cfg
}
