package localsecret

import (
	"path/filepath"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
	"github.com/gauntlet-bench/gauntlet/pkg/diskspace/diskspacetest"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// TestPutOnAFullFilesystem: a secret write the full data dir refuses is an
// out-of-space error naming that dir (the API answers it with 507), the
// stored value stays the old one, and the write succeeds once space
// returns.
func TestPutOnAFullFilesystem(t *testing.T) {
	dir := diskspacetest.Mount(t, 4)
	s, err := Open(filepath.Join(dir, "secrets.json"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ref := secret.Ref{Workspace: "ws1", Scope: secret.Workspace, Name: "API_KEY"}
	if err := s.Put(ctx, ref, "old"); err != nil {
		t.Fatal(err)
	}
	free := diskspacetest.Fill(t, dir)
	err = s.Put(ctx, ref, "new")
	if e, ok := diskspace.As(err); !ok || e.Dir != dir {
		t.Fatalf("Put on a full filesystem = %v, want a *diskspace.Error naming %s", err, dir)
	}
	if v, err := s.Get(ctx, ref); err != nil || v != "old" {
		t.Errorf("Get after the refused Put = %q, %v; want the old value", v, err)
	}
	free()
	if err := s.Put(ctx, ref, "new"); err != nil {
		t.Fatalf("Put after space returned = %v", err)
	}
	reopened, err := Open(filepath.Join(dir, "secrets.json"))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := reopened.Get(ctx, ref); err != nil || v != "new" {
		t.Errorf("Get after reopening = %q, %v; want the new value", v, err)
	}
}
