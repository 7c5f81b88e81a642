package records

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Items of workspace provisioning (added to the key scheme in records.go):
//
//	WS#<ws>            | WS      workspace; gsi1 WORKSPACES | <created>#<ws>
//	ADMIN#<ws>#<user>  | ADMIN   platform operator authenticated by a gauntlet API token
//
// The workspace index is sparse: a workspace enters it when CreateWorkspace
// (or IndexWorkspace) writes it, so listing every workspace is a read of
// one gsi1 partition, oldest first, never a scan. On DynamoDB the index is
// eventually consistent: a workspace created a moment ago may be missing
// from a list read right after.

// workspaceIndexPK is the gsi1 partition of the workspace index.
const workspaceIndexPK = "WORKSPACES"

var workspaceCodec = codec[Workspace]{
	name: "workspace",
	item: func(w *Workspace) (store.Item, error) {
		data, err := encode(w)
		if err != nil {
			return store.Item{}, err
		}
		return store.Item{PK: wsPK(w.ID), SK: "WS", Data: data,
			GSI1PK: workspaceIndexPK, GSI1SK: timeKey(w.CreatedAt) + "#" + w.ID}, nil
	},
}

// CreateWorkspace writes a new workspace into the workspace index. When a
// workspace with the id exists already, an identical request (same name)
// is a replay: it returns the stored workspace and created false; another
// name gives an error wrapping ErrConflict.
func (s *Workspaces) CreateWorkspace(ctx context.Context, w Workspace) (stored Workspace, created bool, err error) {
	if w.ID == "" || w.Name == "" {
		return Workspace{}, false, errors.New("create workspace: id and name are required")
	}
	if _, err := put(ctx, s.tbl, workspaceCodec, w, store.Cond{Kind: store.IfNotExists}); err == nil {
		return w, true, nil
	} else if !IsConditionFailed(err) {
		return Workspace{}, false, fmt.Errorf("create workspace %s: %w", w.ID, err)
	}
	old, err := s.Workspace(ctx, w.ID)
	if err != nil {
		return Workspace{}, false, fmt.Errorf("create workspace %s: %w", w.ID, err)
	}
	if old.Name != w.Name {
		return Workspace{}, false, fmt.Errorf("workspace %s exists with the name %q, not %q: %w", w.ID, old.Name, w.Name, ErrConflict)
	}
	return old, false, nil
}

// IndexWorkspace rewrites a stored workspace so that it is in the workspace
// index (workspaces written by PutWorkspace are not); ErrNotFound when it
// does not exist.
func (s *Workspaces) IndexWorkspace(ctx context.Context, id string) (Workspace, error) {
	return update(ctx, s.tbl, workspaceCodec, wsPK(id), "WS", func(*Workspace) error { return nil })
}

// Workspaces returns one page of the workspace index, oldest first, and the
// cursor of the next page ("" after the last). limit bounds the page
// (0 = the table's default).
func (s *Workspaces) Workspaces(ctx context.Context, cursor string, limit int) ([]Workspace, string, error) {
	return queryPage(ctx, s.tbl, workspaceCodec, store.Query{Index: store.GSI1, PK: workspaceIndexPK, Cursor: cursor, Limit: limit})
}

// Admin marks a user of a workspace as a platform operator when they
// authenticate with a gauntlet API token (locally: the first workspace's
// user). Identity providers carry the same fact in a group claim instead.
type Admin struct {
	Workspace string    `json:"workspace"`
	User      string    `json:"user"`
	GrantedAt time.Time `json:"granted_at"`
}

func adminPK(ws, user string) string { return "ADMIN#" + ws + "#" + user }

// PutAdmin makes the user a platform operator.
func (s *Workspaces) PutAdmin(ctx context.Context, a Admin) error {
	if a.Workspace == "" || a.User == "" {
		return errors.New("put admin: workspace and user are required")
	}
	return s.putJSON(ctx, adminPK(a.Workspace, a.User), "ADMIN", a)
}

// IsAdmin reports whether the workspace's user is a platform operator.
func (s *Workspaces) IsAdmin(ctx context.Context, ws, user string) (bool, error) {
	_, err := s.tbl.Get(ctx, adminPK(ws, user), "ADMIN")
	switch {
	case err == nil:
		return true, nil
	case isNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("look up admin %s of %s: %w", user, ws, err)
}
