package sqlite

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

func TestImageRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		item store.Item
	}{
		{"keys only", store.Item{PK: "p", SK: "s", Version: 1}},
		{"every field", store.Item{PK: "RUN#r1", SK: "SLOT#0/t/1", GSI1PK: "g1", GSI1SK: "a", GSI2PK: "g2", GSI2SK: "b",
			Data: json.RawMessage(`{"status":"queued","n":[1,2]}`), Counters: map[string]int64{"done": 3, "neg": -7, "big": 1 << 62},
			Version: 42, ExpiresAt: 1_900_000_000}},
		{"unicode and empty counters", store.Item{PK: "ключ", SK: "s\x00k", Data: json.RawMessage(`"é"`), Counters: map[string]int64{"": 0}, Version: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := encodeImage(&tt.item).([]byte)
			got, err := decodeImage(b)
			if err != nil {
				t.Fatalf("decodeImage(encodeImage(%+v)) = %v", tt.item, err)
			}
			if diff := cmp.Diff(&tt.item, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
	if got := encodeImage(nil); got != nil {
		t.Errorf("encodeImage(nil) = %v, want nil", got)
	}
	if got, err := decodeImage(nil); got != nil || err != nil {
		t.Errorf("decodeImage(nil) = %v, %v; want nil, nil", got, err)
	}
}

// TestImageLegacyJSON: images stored as JSON by earlier versions still decode.
func TestImageLegacyJSON(t *testing.T) {
	want := store.Item{PK: "p", SK: "s", Data: json.RawMessage(`{"a":1}`), Counters: map[string]int64{"n": 2}, Version: 3}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeImage(b)
	if err != nil {
		t.Fatalf("decodeImage(%s) = %v", b, err)
	}
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("legacy image (-want +got):\n%s", diff)
	}
}

func TestImageMalformed(t *testing.T) {
	good, _ := encodeImage(&store.Item{PK: "p", SK: "s", Data: json.RawMessage(`{}`), Counters: map[string]int64{"n": 1}, Version: 1}).([]byte)
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", []byte{}},
		{"unknown version", append([]byte{0x7f}, good[1:]...)},
		{"truncated", good[:len(good)-3]},
		{"trailing bytes", append(append([]byte{}, good...), 0)},
		{"field longer than input", []byte{imageV1, 0xff, 0x01}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := decodeImage(tt.b); !errors.Is(err, errBadImage) {
				t.Errorf("decodeImage(%x) = %+v, %v; want errBadImage", tt.b, got, err)
			}
		})
	}
}

func TestCountersCodec(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]int64
		want string
	}{
		{"sorted", map[string]int64{"b": 2, "a": -1, "c": 0}, `{"a":-1,"b":2,"c":0}`},
		{"escaped name", map[string]int64{`q"uote`: 1, "tab\t": 2}, `{"q\"uote":1,"tab\t":2}`},
		{"extremes", map[string]int64{"max": 1<<63 - 1, "min": -1 << 63}, `{"max":9223372036854775807,"min":-9223372036854775808}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := encodeCounters(tt.in)
			if got != tt.want {
				t.Errorf("encodeCounters(%v) = %s, want %s", tt.in, got, tt.want)
			}
			std, _ := json.Marshal(tt.in)
			if got != string(std) {
				t.Errorf("encodeCounters(%v) = %s, encoding/json writes %s", tt.in, got, std)
			}
			back, err := decodeCounters(got)
			if err != nil {
				t.Fatalf("decodeCounters(%s) = %v", got, err)
			}
			if diff := cmp.Diff(tt.in, back); diff != "" {
				t.Errorf("decodeCounters(%s) (-want +got):\n%s", got, diff)
			}
		})
	}
}

// TestDecodeCountersFallback: text the fast parser does not take goes
// through encoding/json, which accepts valid JSON and rejects the rest.
func TestDecodeCountersFallback(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]int64
		wantErr bool
	}{
		{in: `{ "a" : 1 , "b":2 }`, want: map[string]int64{"a": 1, "b": 2}},
		{in: `{"\u0061":5}`, want: map[string]int64{"a": 5}},
		{in: `{}`, want: map[string]int64{}},
		{in: `{"a":1,}`, wantErr: true},
		{in: `{"a":1.5}`, wantErr: true},
		{in: `{"a":+1}`, wantErr: true},
		{in: `{"a":01}`, wantErr: true},
		{in: `{"a":-0}`, want: map[string]int64{"a": 0}},
		{in: `[1]`, wantErr: true},
	}
	for _, tt := range tests {
		got, err := decodeCounters(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("decodeCounters(%s) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if diff := cmp.Diff(tt.want, got); !tt.wantErr && diff != "" {
			t.Errorf("decodeCounters(%s) (-want +got):\n%s", tt.in, diff)
		}
	}
}

// TestCreateBulkEdges: one Create spanning several multi-row statements,
// with keys repeated inside the call, existing live keys and an expired one,
// creates each new key once and records exactly those changes.
func TestCreateBulkEdges(t *testing.T) {
	db := openTemp(t)
	clock := &fakeClock{}
	db.now = clock.now
	tb := db.Table()
	ctx := t.Context()
	if _, err := tb.Put(ctx, store.Item{PK: "p", SK: "live", Data: json.RawMessage(`{"old":true}`)}, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Put(ctx, store.Item{PK: "p", SK: "gone", ExpiresAt: time.Now().Add(time.Second).Unix()}, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	_, start := readAll(t, db, "")
	clock.advance(10 * time.Second)

	var items []store.Item
	for i := range 2*bulkRows + 7 {
		items = append(items, store.Item{PK: "p", SK: fmt.Sprintf("n%04d", i), Data: json.RawMessage(`{"first":true}`)})
	}
	items[150] = store.Item{PK: "p", SK: "n0003", Data: json.RawMessage(`{"first":false}`)} // repeats item 3, in another statement
	items[5] = store.Item{PK: "p", SK: "n0004", Data: json.RawMessage(`{"first":false}`)}   // repeats item 4, in the same statement
	items = append(items, store.Item{PK: "p", SK: "live"}, store.Item{PK: "p", SK: "gone", Data: json.RawMessage(`{"new":true}`)})

	n, err := tb.Create(ctx, items)
	if wantN := 2*bulkRows + 7 - 2 + 1; err != nil || n != wantN {
		t.Fatalf("Create = %d, %v; want %d, nil", n, err, wantN)
	}
	for sk, want := range map[string]string{"n0003": `{"first":true}`, "n0004": `{"first":true}`, "live": `{"old":true}`, "gone": `{"new":true}`} {
		got, err := tb.Get(ctx, "p", sk)
		if err != nil || string(got.Data) != want {
			t.Errorf("Get(%s) = %s, %v; want %s", sk, got.Data, err, want)
		}
	}
	changes, _ := readAll(t, db, start)
	counts := map[string]int{}
	for _, k := range kinds(changes) {
		counts[k]++
	}
	for _, k := range []string{"INSERT n0000", "INSERT n0003", "INSERT n0004", "INSERT n0206", "REMOVE gone", "INSERT gone"} {
		if counts[k] != 1 {
			t.Errorf("%d changes %q, want 1", counts[k], k)
		}
	}
	if len(changes) != n+1 || counts["INSERT live"] != 0 {
		t.Errorf("%d changes (INSERT live %d), want %d (one per created item and the expired item's REMOVE)", len(changes), counts["INSERT live"], n+1)
	}
}

// TestBackgroundCheckpoint: with the writer's auto-checkpoint off, the
// checkpointer still copies committed pages into the database file while
// the database is open, and the data reads back after a reopen.
func TestBackgroundCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data := json.RawMessage(`{"pad":"` + strings.Repeat("x", 2000) + `"}`)
	for i := range 2 * checkpointEvery {
		if _, err := db.Table().Put(t.Context(), store.Item{PK: "p", SK: fmt.Sprintf("%04d", i), Data: data}, store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > before.Size()+int64(checkpointEvery)*2000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("database file is %d bytes after %d commits (%d before); the write-ahead log was not checkpointed", info.Size(), 2*checkpointEvery, before.Size())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, err := db.Table().Get(t.Context(), "p", fmt.Sprintf("%04d", 2*checkpointEvery-1)); err != nil || string(got.Data) != string(data) {
		t.Errorf("Get after reopen = %d bytes, %v; want the last item", len(got.Data), err)
	}
}
