package sqlite

import (
	"encoding/json"
	"errors"
	"testing"

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
