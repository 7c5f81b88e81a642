package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

func TestCredentialsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gauntlet", "credentials")
	if _, err := LoadCredentials(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LoadCredentials(missing) = %v, want os.ErrNotExist", err)
	}
	want := Credentials{URL: "http://127.0.0.1:8080", Token: "gt_abc"}
	if err := SaveCredentials(path, want); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file mode = %v (%v), want 0600", info.Mode().Perm(), err)
	}
	got, err := LoadCredentials(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadCredentials (-want +got):\n%s", diff)
	}
	if err := SaveCredentials(path, Credentials{URL: "x"}); err == nil {
		t.Error("SaveCredentials without a token succeeded")
	}
}

// TestRequestsAndErrors checks paths are escaped segment by segment, the
// token is sent, and error answers become *Error with the server's fields.
func TestRequestsAndErrors(t *testing.T) {
	var gotPath, gotAuth, gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth, gotQuery = r.URL.EscapedPath(), r.Header.Get("Authorization"), r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"code":"VALIDATION_FAILED","message":"2 problems","details":{"problems":[{"code":"invalid_config","field":"a","message":"bad"}]}}`))
	}))
	defer srv.Close()
	c, err := New(srv.URL+"/", "gt_tok", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Artifact(context.Background(), "r-1", "0-1-org/task", "artifacts/agent/std out.txt")
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Status != 422 || apiErr.Code != "VALIDATION_FAILED" {
		t.Fatalf("error = %v, want a 422 VALIDATION_FAILED *Error", err)
	}
	if p, ok := apiErr.Problems(); !ok || len(p) != 1 || p[0].Field != "a" {
		t.Errorf("Problems() = %v, %v; want the one problem", p, ok)
	}
	if want := "/v1/runs/r-1/results/0-1-org%2Ftask/artifacts/artifacts/agent/std%20out.txt"; gotPath != want {
		t.Errorf("path = %s, want %s", gotPath, want)
	}
	if gotAuth != "Bearer gt_tok" {
		t.Errorf("Authorization = %q", gotAuth)
	}
	_, _ = c.Runs(context.Background(), RunFilter{Benchmark: "b", Status: "running", Limit: 5})
	if gotQuery != "benchmark=b&limit=5&status=running" {
		t.Errorf("query = %q", gotQuery)
	}
	if !IsStatus(err, 422) || IsStatus(err, 404) {
		t.Error("IsStatus does not match the error's status")
	}
	for _, bad := range []string{"ftp://x", "127.0.0.1:8080", "http://"} {
		if _, err := New(bad, "t", nil); err == nil {
			t.Errorf("New(%q) succeeded", bad)
		}
	}
}

func TestRejectedRequestCountsItsProblems(t *testing.T) {
	one := v1.Problem{Code: "invalid", Field: "registry_credentials[0].secret", Message: "is not a workspace secret"}
	tests := []struct {
		problems []v1.Problem
		want     string
	}{
		{problems: []v1.Problem{one}, want: "the request has 1 problem:\n  - registry_credentials[0].secret: is not a workspace secret (422 VALIDATION_FAILED)"},
		{problems: []v1.Problem{one, {Code: "invalid", Message: "whole"}},
			want: "the request has 2 problems:\n  - registry_credentials[0].secret: is not a workspace secret\n  - whole (422 VALIDATION_FAILED)"},
	}
	for _, tc := range tests {
		err := &Error{answer{Status: 422, Code: v1.CodeValidation, Message: "rejected", Details: v1.ProblemsDetails{Problems: tc.problems}}}
		if got := err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}
