package records_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

func TestCreateWorkspace(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	acme := records.Workspace{ID: "w-acme", Name: "acme", CreatedAt: t0}
	tests := []struct {
		name        string
		ws          records.Workspace
		want        records.Workspace
		wantCreated bool
		wantErr     error
	}{
		{name: "new", ws: acme, want: acme, wantCreated: true},
		{name: "replay keeps the first write", ws: records.Workspace{ID: "w-acme", Name: "acme", CreatedAt: t0.Add(time.Hour)}, want: acme},
		{name: "same id, other name", ws: records.Workspace{ID: "w-acme", Name: "globex", CreatedAt: t0}, wantErr: records.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, created, err := s.Workspaces.CreateWorkspace(ctx, tt.ws)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("CreateWorkspace(%+v) error = %v, want %v", tt.ws, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" || created != tt.wantCreated {
				t.Fatalf("CreateWorkspace(%+v) = %v (-want +got):\n%s", tt.ws, created, diff)
			}
		})
	}
}

func TestWorkspaceIndexPages(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	var want []string
	for i, id := range []string{"w-c", "w-a", "w-b"} {
		if _, _, err := s.Workspaces.CreateWorkspace(ctx, records.Workspace{ID: id, Name: id, CreatedAt: t0.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	// A workspace written by PutWorkspace is not indexed until IndexWorkspace.
	if err := s.Workspaces.PutWorkspace(ctx, records.Workspace{ID: "w-old", Name: "old", CreatedAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	list := func() []string {
		var ids []string
		cursor := ""
		for pages := 0; ; pages++ {
			page, next, err := s.Workspaces.Workspaces(ctx, cursor, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > 2 || pages > 5 {
				t.Fatalf("page of %d after %d pages, want at most 2 a page", len(page), pages)
			}
			for _, w := range page {
				ids = append(ids, w.ID)
			}
			if next == "" {
				return ids
			}
			cursor = next
		}
	}
	if diff := cmp.Diff(want, list()); diff != "" {
		t.Errorf("Workspaces oldest first (-want +got):\n%s", diff)
	}
	if _, err := s.Workspaces.IndexWorkspace(ctx, "w-old"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(want, "w-old"), list()); diff != "" {
		t.Errorf("Workspaces after IndexWorkspace (-want +got):\n%s", diff)
	}
	if _, err := s.Workspaces.IndexWorkspace(ctx, "w-none"); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("IndexWorkspace(missing) error = %v, want ErrNotFound", err)
	}
}

func TestAdmins(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	if err := s.Workspaces.PutAdmin(ctx, records.Admin{Workspace: "ws1", User: "u1", GrantedAt: t0}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ws, user string
		want     bool
	}{{"ws1", "u1", true}, {"ws1", "u2", false}, {"ws2", "u1", false}}
	for _, tt := range tests {
		got, err := s.Workspaces.IsAdmin(ctx, tt.ws, tt.user)
		if err != nil || got != tt.want {
			t.Errorf("IsAdmin(%q, %q) = %v, %v; want %v", tt.ws, tt.user, got, err, tt.want)
		}
	}
	if err := s.Workspaces.PutAdmin(ctx, records.Admin{Workspace: "ws1"}); err == nil {
		t.Error("PutAdmin without a user succeeded")
	}
}
