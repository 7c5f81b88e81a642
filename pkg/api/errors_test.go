package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

func TestClassify(t *testing.T) {
	h := &Handler{log: slog.New(slog.DiscardHandler)}
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantCode   string
	}{
		{"api error", errorf(http.StatusTeapot, "TEAPOT", "short and stout"), http.StatusTeapot, "TEAPOT"},
		{"billing first", &pipeline.RejectedError{Problems: []pipeline.Problem{
			{Code: pipeline.CodeInvalidConfig, Field: "a", Message: "bad"},
			{Code: pipeline.CodeBillingRequired, Message: "billing required: set one up"}}}, http.StatusPaymentRequired, v1.CodeBillingRequired},
		{"rejected", fmt.Errorf("submit: %w", &pipeline.RejectedError{Problems: []pipeline.Problem{{Code: pipeline.CodeMissingSecret, Message: "m"}}}),
			http.StatusUnprocessableEntity, v1.CodeValidation},
		{"body too large", fmt.Errorf("read: %w", &http.MaxBytesError{Limit: 10}), http.StatusRequestEntityTooLarge, v1.CodeTooLarge},
		{"invalid spec", fmt.Errorf("%w: no name", benchsync.ErrInvalidSpec), http.StatusBadRequest, v1.CodeBadRequest},
		{"unknown dataset", &benchsync.UnknownDatasetError{Registry: "r", Name: "x"}, http.StatusNotFound, v1.CodeNotFound},
		{"registry down", fmt.Errorf("%w: dial", benchsync.ErrRegistryUnavailable), http.StatusServiceUnavailable, v1.CodeUnavailable},
		{"registry invalid", fmt.Errorf("%w: registry r.json: decode registry: line 3, column 9: tasks.name: want a string", benchsync.ErrRegistryInvalid), http.StatusBadGateway, v1.CodeRegistryInvalid},
		{"garbage cursor", fmt.Errorf("list runs: query: %w: not from this table", store.ErrInvalidCursor), http.StatusBadRequest, v1.CodeBadRequest},
		{"not found", fmt.Errorf("get run: %w", records.ErrNotFound), http.StatusNotFound, v1.CodeNotFound},
		{"conflict", fmt.Errorf("key reused: %w", records.ErrConflict), http.StatusConflict, v1.CodeConflict},
		{"illegal transition", fmt.Errorf("run: %w", run.ErrIllegalTransition), http.StatusConflict, v1.CodeConflict},
		{"not stoppable", fmt.Errorf("stop: %w", pipeline.ErrNotStoppable), http.StatusConflict, v1.CodeConflict},
		{"full data dir", fmt.Errorf("put secret K: %w", &diskspace.Error{Dir: "/data", Err: errors.New("write /data/secrets.json.tmp-1: disk on fire")}),
			http.StatusInsufficientStorage, v1.CodeInsufficientStorage},
		{"data dir below its floor", fmt.Errorf("submit: %w", &diskspace.Error{Dir: "/data", FreeBytes: 1 << 20, FloorBytes: 1 << 30}),
			http.StatusInsufficientStorage, v1.CodeInsufficientStorage},
		{"anything else", errors.New("disk on fire at /var/lib/secret-path"), http.StatusInternalServerError, v1.CodeInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := h.classify(tt.err)
			if got.Status != tt.wantStatus || got.Code != tt.wantCode || got.Message == "" {
				t.Errorf("classify(%v) = %d %s %q, want %d %s with a message", tt.err, got.Status, got.Code, got.Message, tt.wantStatus, tt.wantCode)
			}
			if _, full := diskspace.As(tt.err); full && !strings.Contains(got.Message, "/data ") {
				t.Errorf("the 507 message %q does not name the data dir /data", got.Message)
			}
			if got.Status >= 500 && strings.Contains(got.Message, "fire") {
				t.Errorf("a 5xx message carries the internal error: %q", got.Message)
			}
		})
	}
}

func TestParseResultID(t *testing.T) {
	tests := []struct {
		id     string
		want   string
		wantOK bool
	}{
		{v1.ResultID(0, 1, "csv-summary"), "0/csv-summary/1", true},
		{v1.ResultID(12, 3, "org/task-name"), "12/org/task-name/3", true},
		{"0-0-task", "", false},
		{"x-1-task", "", false},
		{"1-2-", "", false},
		{"1-2", "", false},
		{"-1-2-task", "", false},
	}
	for _, tt := range tests {
		got, ok := parseResultID(tt.id)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parseResultID(%q) = %q, %v; want %q, %v", tt.id, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestCellsNeutralizeFormulas(t *testing.T) {
	got := cells([]string{"=HYPERLINK(\"x\")", "+1+2", "-0.5", "-rm", "@SUM(A1)", "plain", "", "1e-3"})
	want := []string{"'=HYPERLINK(\"x\")", "'+1+2", "-0.5", "'-rm", "'@SUM(A1)", "plain", "", "1e-3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
}

func TestAnswerCache(t *testing.T) {
	var c answerCache
	now := time.Unix(1000, 0)
	renders := 0
	render := func(body string, ttl time.Duration) func() ([]byte, time.Time, error) {
		return func() ([]byte, time.Time, error) {
			renders++
			return []byte(body), now.Add(ttl), nil
		}
	}
	get := func(ws string, at time.Time, r func() ([]byte, time.Time, error)) string {
		b, err := c.answer("k", ws, at, r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := get("ws1", now, render("v1", time.Second)); got != "v1" || renders != 1 {
		t.Fatalf("first answer = %q after %d renders, want v1 after 1", got, renders)
	}
	if got := get("ws1", now.Add(500*time.Millisecond), render("v2", time.Second)); got != "v1" || renders != 1 {
		t.Errorf("fresh answer = %q after %d renders, want cached v1", got, renders)
	}
	if got := get("ws2", now, render("other", time.Second)); got != "other" {
		t.Errorf("another workspace got %q, want its own answer", got)
	}
	// Expired: the stale answer is served while the successor renders.
	if got := get("ws1", now.Add(2*time.Second), render("v3", time.Hour)); got != "v1" {
		t.Errorf("expired answer = %q, want stale v1 while refreshing", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for get("ws1", now.Add(3*time.Second), render("v4", time.Hour)) != "v3" {
		if time.Now().After(deadline) {
			t.Fatal("the refreshed answer v3 never replaced the stale one")
		}
		<-tick.C
	}
}

func TestAnswerCacheForgetsAndNeverServesOldAnswers(t *testing.T) {
	var c answerCache
	now := time.Unix(1000, 0)
	answer := func(at time.Time, body string) string {
		b, err := c.answer("run", "ws", at, func() ([]byte, time.Time, error) {
			return []byte(body), at.Add(liveTTL), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := answer(now, "running"); got != "running" {
		t.Fatalf("first answer %q, want running", got)
	}
	// A stop forgets the answer: the next read, though the cached one is
	// fresh, renders the stopping run.
	c.forget("run", "ws")
	if got := answer(now, "stopping"); got != "stopping" {
		t.Errorf("answer after forget = %q, want the fresh render stopping", got)
	}
	// Long past its expiry an answer is not served stale: the read waits for
	// the render.
	if got := answer(now.Add(liveTTL+maxStale+time.Millisecond), "stopped"); got != "stopped" {
		t.Errorf("answer long after expiry = %q, want the fresh render stopped", got)
	}
	// A render that started before a forget is not stored.
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan string)
	go func() {
		b, _ := c.answer("slow", "ws", now, func() ([]byte, time.Time, error) {
			close(started)
			<-release
			return []byte("before"), now.Add(time.Hour), nil
		})
		done <- string(b)
	}()
	<-started
	c.forget("slow", "ws")
	close(release)
	if got := <-done; got != "before" {
		t.Fatalf("slow render answered %q, want before", got)
	}
	b, err := c.answer("slow", "ws", now, func() ([]byte, time.Time, error) { return []byte("after"), now.Add(time.Hour), nil })
	if err != nil || string(b) != "after" {
		t.Errorf("answer after a forget during a render = %q, %v; want after (the older render not stored)", b, err)
	}
}

func TestRegistryInvalidSaysWhere(t *testing.T) {
	h := &Handler{log: slog.New(slog.DiscardHandler)}
	e := h.classify(fmt.Errorf("%w: registry r.json: decode registry: line 3, column 9: tasks.name: want a string", benchsync.ErrRegistryInvalid))
	if want := "the benchmark registry is invalid: registry r.json: decode registry: line 3, column 9: tasks.name: want a string"; e.Message != want {
		t.Errorf("message = %q, want %q", e.Message, want)
	}
}

// TestRunBodyLimitIsTheConfigLimit: the API reads exactly as much of a run
// config as the parser accepts, so a larger one is a 413, not a 422.
func TestRunBodyLimitIsTheConfigLimit(t *testing.T) {
	if v1.MaxRunBody != runconfig.MaxConfigBytes {
		t.Errorf("v1.MaxRunBody = %d, runconfig.MaxConfigBytes = %d; they must agree (and docs/API.md with them)", v1.MaxRunBody, runconfig.MaxConfigBytes)
	}
}

func TestCheckUniqueKeys(t *testing.T) {
	deep := strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1)
	tests := []struct {
		name, body, wantErr string
	}{
		{"plain", `{"a":1,"b":{"c":[1,{"d":2}]}}`, ""},
		{"same key in sibling objects", `[{"a":1},{"a":2}]`, ""},
		{"top-level duplicate", `{"name":"x","name":"y"}`, `key "name" appears twice in the top-level object`},
		{"nested duplicate", `{"agents":[{"harness":"a"},{"harness":"b","harness":"c"}]}`, `key "harness" appears twice in agents[1]`},
		{"syntax error left to the decoder", `{"a":`, ""},
		{"too deep", deep, "deeper than 64 levels"},
	}
	for _, tt := range tests {
		err := checkUniqueKeys([]byte(tt.body))
		if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: checkUniqueKeys(%.40q) = %v, want %q", tt.name, tt.body, err, tt.wantErr)
		}
	}
}
