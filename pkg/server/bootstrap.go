package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/api"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// TokenFile is the file under the data dir that holds the first
// workspace's API token (mode 0600).
const TokenFile = "token"

// Tenant is a workspace with one user and that user's API token.
type Tenant struct {
	Workspace string
	User      string
	Token     string
}

// CreateWorkspace creates a workspace with active (local) billing, one user
// and an API token for it. Managed benchmarks need no install: every
// workspace sees the platform's.
func (s *Server) CreateWorkspace(ctx context.Context, name, userName string) (Tenant, error) {
	ws, err := newID("w-")
	if err != nil {
		return Tenant{}, err
	}
	user, err := newID("u-")
	if err != nil {
		return Tenant{}, err
	}
	token, err := api.NewToken()
	if err != nil {
		return Tenant{}, err
	}
	recs := s.records
	now := s.now().UTC()
	steps := []func() error{
		func() error {
			_, _, err := recs.Workspaces.CreateWorkspace(ctx, records.Workspace{ID: ws, Name: name, CreatedAt: now})
			return err
		},
		func() error {
			return recs.Workspaces.PutBilling(ctx, ws, records.Billing{Status: records.BillingActive, Plan: "local", UpdatedAt: now})
		},
		func() error {
			return recs.Workspaces.PutUser(ctx, records.User{ID: user, Workspace: ws, Name: userName, CreatedAt: now})
		},
		func() error {
			return recs.Workspaces.PutToken(ctx, records.Token{Hash: api.HashToken(token), Workspace: ws, User: user, CreatedAt: now})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return Tenant{}, fmt.Errorf("create workspace %s: %w", name, err)
		}
	}
	t := Tenant{Workspace: ws, User: user, Token: token}
	s.log.InfoContext(ctx, "workspace created", "workspace", ws, "name", name, "user", user)
	return t, nil
}

// bootstrap returns the data dir's first tenant, a platform operator: the
// one whose token is in the token file, or a new workspace whose token it
// writes there.
func (s *Server) bootstrap(ctx context.Context) (Tenant, bool, error) {
	t, created, err := s.firstTenant(ctx)
	if err != nil {
		return Tenant{}, false, err
	}
	if err := s.records.Workspaces.PutAdmin(ctx, records.Admin{Workspace: t.Workspace, User: t.User, GrantedAt: s.now().UTC()}); err != nil {
		return Tenant{}, false, fmt.Errorf("make the first user an admin: %w", err)
	}
	if !created {
		// Data dirs from before the workspace index: list the first workspace.
		if _, err := s.records.Workspaces.IndexWorkspace(ctx, t.Workspace); err != nil {
			return Tenant{}, false, fmt.Errorf("index the first workspace: %w", err)
		}
	}
	return t, created, nil
}

func (s *Server) firstTenant(ctx context.Context) (Tenant, bool, error) {
	path := filepath.Join(s.opts.DataDir, TokenFile)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		token := strings.TrimSpace(string(data))
		rec, err := s.records.Workspaces.TokenByHash(ctx, api.HashToken(token))
		if err == nil {
			return Tenant{Workspace: rec.Workspace, User: rec.User, Token: token}, false, nil
		}
		if !errors.Is(err, records.ErrNotFound) {
			return Tenant{}, false, fmt.Errorf("look up the token of %s: %w", path, err)
		}
		s.log.WarnContext(ctx, "token file names no token of this data dir; creating a new workspace", "path", path)
	case !errors.Is(err, os.ErrNotExist):
		return Tenant{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	t, err := s.CreateWorkspace(ctx, "local", currentUser())
	if err != nil {
		return Tenant{}, false, err
	}
	if err := writePrivate(path, []byte(t.Token+"\n")); err != nil {
		return Tenant{}, false, fmt.Errorf("write %s: %w", path, err)
	}
	return t, true, nil
}

func newID(prefix string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("draw id: %w", err)
	}
	return prefix + hex.EncodeToString(b[:]), nil
}

func currentUser() string {
	for _, k := range []string{"USER", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "local"
}

// writePrivate writes a file readable by its owner only, even when a file
// with looser permissions is already there (WriteFile's mode applies only
// to a file it creates).
func writePrivate(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*") // 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
