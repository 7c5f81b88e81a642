package api

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// FuzzRequestBodies feeds mutated JSON bodies to the strict decoder of
// every JSON request type: no panic, and every refusal is a 4xx the client
// can act on (never an internal error).
func FuzzRequestBodies(f *testing.F) {
	for _, s := range []string{
		`{"source":"demo-bench@1.0"}`, `{"id":"ws-1","name":"Acme"}`, `{"status":"active","plan":"team"}`,
		`{"user":"bob","role":"member"}`, `{"value":"sk-123"}`, `{"source":"a","source":"b"}`,
		`{"source":7}`, `[]`, `{"a":{"b":[{"c":1}]}}`, ``,
	} {
		f.Add([]byte(s), uint8(0))
	}
	targets := []func() any{
		func() any { return &v1.AddBenchmarkRequest{} }, func() any { return &v1.CreateWorkspaceRequest{} },
		func() any { return &v1.SetBillingRequest{} }, func() any { return &v1.AddUserRequest{} }, func() any { return &v1.SecretValue{} },
	}
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		v := targets[int(which)%len(targets)]()
		r := httptest.NewRequest(http.MethodPost, "/v1/x", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		err := decodeJSON(httptest.NewRecorder(), r, v)
		if err == nil {
			return
		}
		var apiErr *v1.Error
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &apiErr) && apiErr.Status >= 400 && apiErr.Status < 500:
		case errors.As(err, &tooLarge):
		default:
			t.Fatalf("decodeJSON(%q) = %v, want a 4xx API error", body, err)
		}
	})
}
