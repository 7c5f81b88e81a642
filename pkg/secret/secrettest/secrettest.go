// Package secrettest is the contract suite for the secret port, in the manner
// of testing/fstest.TestFS: the encrypted-file store and the Secrets Manager
// adapter both call Run. Each test uses its own random workspace, so a
// shared store works.
package secrettest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// Run runs the secret-store contract. newStore is called once per test and
// may return the same shared store every time.
func Run(t *testing.T, newStore func(t *testing.T) secret.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s secret.Store, ws string)
	}{
		{"PutGet", testPutGet},
		{"Overwrite", testOverwrite},
		{"GetMissing", testGetMissing},
		{"Delete", testDelete},
		{"ScopesAndOwnersIsolated", testIsolation},
		{"InvalidRefs", testInvalidRefs},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := make([]byte, 6)
			_, _ = rand.Read(b)
			tc.run(t, newStore(t), "ws-secrettest-"+hex.EncodeToString(b))
		})
	}
}

func put(t *testing.T, s secret.Store, ref secret.Ref, v secret.Value) {
	t.Helper()
	if err := s.Put(t.Context(), ref, v); err != nil {
		t.Fatalf("Put(%+v) = %v", ref, err)
	}
}

func wantValue(t *testing.T, s secret.Store, ref secret.Ref, want secret.Value) {
	t.Helper()
	got, err := s.Get(t.Context(), ref)
	if err != nil {
		t.Fatalf("Get(%+v) = %v", ref, err)
	}
	if got.Reveal() != want.Reveal() {
		t.Errorf("Get(%+v) returned a different value (%d bytes, want %d)", ref, len(got.Reveal()), len(want.Reveal()))
	}
}

func wantMissing(t *testing.T, s secret.Store, ref secret.Ref) {
	t.Helper()
	if _, err := s.Get(t.Context(), ref); !errors.Is(err, secret.ErrNotFound) {
		t.Errorf("Get(%+v) = %v, want ErrNotFound", ref, err)
	}
}

func testPutGet(t *testing.T, s secret.Store, ws string) {
	tests := []struct {
		name  string
		ref   secret.Ref
		value secret.Value
	}{
		{"workspace", secret.Ref{Workspace: ws, Scope: secret.Workspace, Name: "OPENAI_API_KEY"}, "sk-test-123"},
		{"personal", secret.Ref{Workspace: ws, Scope: secret.Personal, Owner: "user-1", Name: "ANTHROPIC_API_KEY"}, "sk-ant-456"},
		{"unicode and newlines", secret.Ref{Workspace: ws, Scope: secret.Workspace, Name: "PEM"}, "-----BEGIN KEY-----\nmé\n-----END KEY-----\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			put(t, s, tc.ref, tc.value)
			wantValue(t, s, tc.ref, tc.value)
			got, _ := s.Get(t.Context(), tc.ref)
			if printed := fmt.Sprintf("%v %s %+v %#v", got, got, got, got); printed != "[redacted] [redacted] [redacted] [redacted]" {
				t.Errorf("a returned value printed as %q, want only [redacted]", printed)
			}
		})
	}
}

func testOverwrite(t *testing.T, s secret.Store, ws string) {
	ref := secret.Ref{Workspace: ws, Scope: secret.Workspace, Name: "TOKEN"}
	put(t, s, ref, "first-value-longer")
	put(t, s, ref, "second")
	wantValue(t, s, ref, "second")
}

func testGetMissing(t *testing.T, s secret.Store, ws string) {
	wantMissing(t, s, secret.Ref{Workspace: ws, Scope: secret.Workspace, Name: "NEVER_SET"})
	wantMissing(t, s, secret.Ref{Workspace: ws, Scope: secret.Personal, Owner: "nobody", Name: "NEVER_SET"})
}

func testDelete(t *testing.T, s secret.Store, ws string) {
	ref := secret.Ref{Workspace: ws, Scope: secret.Personal, Owner: "u", Name: "GONE"}
	put(t, s, ref, "v")
	for i := range 2 {
		if err := s.Delete(t.Context(), ref); err != nil {
			t.Errorf("Delete #%d = %v, want nil", i+1, err)
		}
	}
	wantMissing(t, s, ref)
	if err := s.Delete(t.Context(), secret.Ref{Workspace: ws, Scope: secret.Workspace, Name: "NEVER_SET"}); err != nil {
		t.Errorf("Delete(never set) = %v, want nil", err)
	}
	put(t, s, ref, "again")
	wantValue(t, s, ref, "again")
}

// testIsolation: one name in different scopes, owners and workspaces is
// different records.
func testIsolation(t *testing.T, s secret.Store, ws string) {
	refs := []secret.Ref{
		{Workspace: ws, Scope: secret.Workspace, Name: "API_KEY"},
		{Workspace: ws, Scope: secret.Personal, Owner: "alice", Name: "API_KEY"},
		{Workspace: ws, Scope: secret.Personal, Owner: "bob", Name: "API_KEY"},
		{Workspace: ws + "-other", Scope: secret.Workspace, Name: "API_KEY"},
		{Workspace: ws + "-other", Scope: secret.Personal, Owner: "alice", Name: "API_KEY"},
	}
	for i, ref := range refs {
		put(t, s, ref, secret.Value(fmt.Sprintf("value-%d", i)))
	}
	for i, ref := range refs {
		wantValue(t, s, ref, secret.Value(fmt.Sprintf("value-%d", i)))
	}
	if err := s.Delete(t.Context(), refs[1]); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	wantMissing(t, s, refs[1])
	for i, ref := range refs {
		if i != 1 {
			wantValue(t, s, ref, secret.Value(fmt.Sprintf("value-%d", i)))
		}
	}
}

func testInvalidRefs(t *testing.T, s secret.Store, ws string) {
	for _, ref := range []secret.Ref{
		{Scope: secret.Workspace, Name: "OK"},
		{Workspace: ws, Scope: "team", Name: "OK"},
		{Workspace: ws, Scope: secret.Personal, Name: "NO_OWNER"},
		{Workspace: ws, Scope: secret.Workspace, Name: "lower"},
		{Workspace: ws, Scope: secret.Workspace, Name: ""},
	} {
		if err := s.Put(t.Context(), ref, "v"); err == nil {
			t.Errorf("Put(%+v) = nil, want an error", ref)
		}
		if _, err := s.Get(t.Context(), ref); err == nil || errors.Is(err, secret.ErrNotFound) {
			t.Errorf("Get(%+v) = %v, want a validation error", ref, err)
		}
	}
}
