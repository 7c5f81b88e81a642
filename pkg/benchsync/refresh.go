package benchsync

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// A refresh re-resolves a ready benchmark's dataset in its registry, so a
// moving version ("head", tasks pinned at a repository's HEAD) picks up new
// content. The benchmark stays ready throughout: runs keep pinning the
// ready version until the refresh switches it, and a run already submitted
// keeps the version it pinned (stored versions are never replaced). The
// refresh's lease, progress and error live in the benchmark's
// records.RefreshState, never in its sync status, so a failed refresh leaves
// a ready benchmark ready with a refresh_error.

// errNotReady ends a refresh of a benchmark that is not ready: its own
// sync owns it.
var errNotReady = errors.New("benchmark is not ready")

// Refresh is Service.Refresh.
func (s *refresher) Refresh(ctx context.Context, now time.Time, olderThan time.Duration) ([]SyncMessage, error) {
	if olderThan < 0 {
		return nil, fmt.Errorf("refresh: olderThan %s is negative", olderThan)
	}
	due, err := s.benchmarks.SyncedBefore(ctx, now.Add(-olderThan))
	if err != nil {
		return nil, fmt.Errorf("refresh: %w", err)
	}
	msgs := make([]SyncMessage, 0, len(due))
	for _, st := range due {
		if st.Refreshing() && !s.refreshLeaseExpired(st, now) {
			continue
		}
		msgs = append(msgs, NewRefreshMessage(st.Workspace, st.Key, st.LastSynced))
	}
	return msgs, nil
}

func (s *refresher) refreshLeaseExpired(st records.RefreshState, now time.Time) bool {
	return now.Sub(st.RefreshUpdatedAt) > s.lease
}

// refresh handles a refresh message: claim the refresh lease, resolve and
// fetch the dataset again, then either only move the last-synced time (same
// digest) or store the new manifest version and switch the ready version
// to it.
func (s *refresher) refresh(ctx context.Context, msg SyncMessage) error {
	ws, key := msg.Workspace, msg.Key
	b, token, err := s.claimRefresh(ctx, msg)
	switch {
	case errors.Is(err, records.ErrNotFound):
		s.log.InfoContext(ctx, "refresh of a deleted benchmark skipped", "workspace", ws, "key", key)
		s.stopRemovedBuilds(ctx, msg)
		return nil
	case errors.Is(err, errNotReady):
		s.log.InfoContext(ctx, "refresh of a benchmark that is not ready skipped; its sync owns it", "workspace", ws, "key", key, "status", b.Status)
		return nil
	case err != nil || token.IsZero():
		return err
	}
	s.log.InfoContext(ctx, "benchmark refresh started", "workspace", ws, "key", key, "source", b.Source.Ref, "ready_version", b.ReadyVersion)
	rctx, end := s.inflight.start(ctx, ws, key)
	err = s.refreshClaimed(rctx, b, token, msg.Resume.builds())
	end()
	if errors.Is(context.Cause(rctx), errRemoved) {
		s.log.InfoContext(ctx, "benchmark refresh cancelled: the benchmark was removed", "workspace", ws, "key", key)
		return nil
	}
	var (
		f  *failure
		ip *imagesPending
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ip):
		return s.parkRefresh(ctx, msg, token, ip)
	case errors.Is(err, errSuperseded):
		s.log.InfoContext(ctx, "benchmark refresh superseded", "workspace", ws, "key", key)
		return nil
	case errors.As(err, &f):
		return s.refreshFailed(ctx, ws, key, token, f.msg)
	case ctx.Err() != nil:
		return err // the lease lets a later delivery take over
	}
	s.releaseRefresh(ctx, ws, key, token)
	return fmt.Errorf("refresh %s/%s: %w", ws, key, err)
}

// claimRefresh takes the refresh lease of a ready benchmark and returns it
// with the lease's token (its start time); a zero token means there is
// nothing to do (refreshed since the message was scheduled). A benchmark
// ready before the refresh index existed enters it now.
func (s *refresher) claimRefresh(ctx context.Context, msg SyncMessage) (records.Benchmark, time.Time, error) {
	ws, key := msg.Workspace, msg.Key
	now := s.now().UTC()
	var (
		token  time.Time
		status records.SyncStatus
	)
	state, err := s.benchmarks.UpdateSync(ctx, ws, key, func(state *records.SyncState) error {
		b, st := &state.Benchmark, &state.Refresh
		token, status = time.Time{}, b.Status
		if b.Status != records.SyncReady {
			return errNotReady
		}
		if st.Version == 0 && st.LastSynced.IsZero() {
			st.LastSynced = b.UpdatedAt
		}
		switch {
		case !msg.LastSynced.IsZero() && st.LastSynced.After(msg.LastSynced):
			return records.ErrNoChange
		case st.Refreshing() && msg.Resume.parked(st.RefreshUpdatedAt):
			// Its own resume: the refresh goes on under its token.
			st.RefreshUpdatedAt = msg.Resume.fenced(now)
			token = st.RefreshStarted
			return nil
		case st.Refreshing() && !s.refreshLeaseExpired(*st, now):
			return fmt.Errorf("benchmark %s/%s: %w (refresh at %d/%d tasks, last progress %s)", ws, key, ErrSyncInProgress, st.RefreshSynced, st.RefreshTotal, st.RefreshUpdatedAt.Format(time.RFC3339))
		}
		st.RefreshStarted, st.RefreshUpdatedAt, st.RefreshSynced, st.RefreshTotal = now, now, 0, 0
		token = now
		return nil
	})
	if errors.Is(err, errNotReady) {
		return records.Benchmark{Workspace: ws, Key: key, Status: status}, time.Time{}, err
	}
	return state.Benchmark, token, err
}

// refreshClaimed resolves and fetches the dataset and applies the outcome.
func (s *refresher) refreshClaimed(ctx context.Context, b records.Benchmark, token time.Time, running map[string]string) error {
	src, err := s.loadSource(ctx, b)
	if err != nil {
		return err
	}
	write := s.refreshProgress(b.Workspace, b.Key, token)
	c, err := s.collect(ctx, b, src, write, running)
	if err != nil {
		return err
	}
	defer c.prep.close()
	// A refresh switches the ready version only once every image is
	// prepared: the ready version serves runs meanwhile.
	if err := s.finishImages(ctx, c.prep, c.m.Tasks, c.work, write, nil); err != nil {
		return err
	}
	if c.m.Digest == b.ReadyDigest {
		// The same inputs; an image's outcome may differ (a build that
		// failed for a passing reason now succeeds).
		if err := s.updateOutcomes(ctx, b.Workspace, b.Key, b.ReadyVersion, c.m.Tasks, c.files); err != nil {
			return err
		}
	}
	if c.m.Digest == b.ReadyDigest && c.warning == b.SyncWarning {
		return s.refreshUnchanged(ctx, b, token)
	}
	m := c.m
	if m.Digest == b.ReadyDigest {
		m.Version = b.ReadyVersion // only the warning changed
	} else if m, err = s.storeManifest(ctx, b.Workspace, m, c.files); err != nil {
		return err
	}
	return s.switchReady(ctx, b, m, c.warning, token)
}

// updateOutcomes rewrites the tasks of a stored version whose image
// outcome (pinned image, failure) differs from tasks'.
func (s *refresher) updateOutcomes(ctx context.Context, ws, key, version string, tasks []benchmark.Task, files map[string]records.TaskFiles) error {
	stored, _, err := s.benchmarks.Manifest(ctx, ws, key, version)
	if err != nil {
		return err
	}
	for _, t := range tasks {
		old, ok := stored.Task(t.Name)
		if !ok || old.Environment == nil || t.Environment == nil || reflect.DeepEqual(*old.Environment, *t.Environment) {
			continue
		}
		if err := s.benchmarks.PutTask(ctx, ws, key, version, t, files[t.Name]); err != nil {
			return err
		}
	}
	return nil
}

// parkRefresh records a refresh's image progress with the time its resume
// message will name; the benchmark stays ready at its version meanwhile.
func (s *refresher) parkRefresh(ctx context.Context, msg SyncMessage, token time.Time, ip *imagesPending) error {
	now := s.now().UTC().Truncate(time.Millisecond)
	_, err := s.benchmarks.UpdateSync(ctx, msg.Workspace, msg.Key, func(state *records.SyncState) error {
		st := &state.Refresh
		if !ownsRefresh(*st, token) {
			return errSuperseded
		}
		st.RefreshSynced, st.RefreshTotal, st.RefreshUpdatedAt = ip.done, ip.total, now
		return nil
	})
	return s.parked(ctx, "refresh", msg, now, ip, err)
}

// ownsRefresh reports whether st is still held by the refresh with token.
func ownsRefresh(st records.RefreshState, token time.Time) bool {
	return st.RefreshStarted.Equal(token)
}

// finishRefresh records a successful refresh on st.
func finishRefresh(st *records.RefreshState, now time.Time) {
	*st = records.RefreshState{Workspace: st.Workspace, Key: st.Key, LastSynced: now, Version: st.Version}
}

// refreshUnchanged moves only the last-synced time.
func (s *refresher) refreshUnchanged(ctx context.Context, b records.Benchmark, token time.Time) error {
	now := s.now().UTC()
	_, err := s.benchmarks.UpdateSync(ctx, b.Workspace, b.Key, func(state *records.SyncState) error {
		st := &state.Refresh
		if !ownsRefresh(*st, token) {
			return errSuperseded
		}
		finishRefresh(st, now)
		return nil
	})
	if errors.Is(err, records.ErrNotFound) {
		return errSuperseded
	}
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "benchmark refreshed; content unchanged", "workspace", b.Workspace, "key", b.Key, "version", b.ReadyVersion, "digest", b.ReadyDigest)
	return nil
}

// switchReady points the still-ready benchmark at the new manifest version
// and records the refresh, in one transaction.
func (s *refresher) switchReady(ctx context.Context, old records.Benchmark, m benchmark.Manifest, warning string, token time.Time) error {
	now := s.now().UTC()
	_, err := s.benchmarks.UpdateSync(ctx, old.Workspace, old.Key, func(state *records.SyncState) error {
		b, st := &state.Benchmark, &state.Refresh
		if !ownsRefresh(*st, token) || b.Status != records.SyncReady {
			return errSuperseded
		}
		b.ReadyVersion, b.ReadyDigest, b.UpdatedAt, b.SyncWarning = m.Version, m.Digest, now, warning
		b.Synced, b.Total, b.TaskCount = len(m.Tasks), len(m.Tasks), len(m.Tasks)
		finishRefresh(st, now)
		return nil
	})
	if errors.Is(err, records.ErrNotFound) {
		return errSuperseded
	}
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "benchmark refreshed; ready version switched", "workspace", old.Workspace, "key", old.Key,
		"old_version", old.ReadyVersion, "old_digest", old.ReadyDigest, "version", m.Version, "digest", m.Digest, "tasks", len(m.Tasks))
	return nil
}

// refreshProgress records a refresh's progress on its sync state.
func (s *refresher) refreshProgress(ws, key string, token time.Time) progressWriter {
	return func(ctx context.Context, _ records.SyncPhase, n, total int, now time.Time) error {
		_, err := s.benchmarks.UpdateSync(ctx, ws, key, func(state *records.SyncState) error {
			st := &state.Refresh
			if !ownsRefresh(*st, token) {
				return errSuperseded
			}
			st.RefreshSynced, st.RefreshTotal, st.RefreshUpdatedAt = n, total, now
			return nil
		})
		if errors.Is(err, records.ErrNotFound) {
			return errSuperseded
		}
		return err
	}
}

// refreshFailed records why the refresh failed; the benchmark stays ready
// at its version, and the next schedule tries again.
func (s *refresher) refreshFailed(ctx context.Context, ws, key string, token time.Time, reason string) error {
	now := s.now().UTC()
	_, err := s.benchmarks.UpdateSync(ctx, ws, key, func(state *records.SyncState) error {
		st := &state.Refresh
		if !ownsRefresh(*st, token) {
			return records.ErrNoChange
		}
		st.RefreshStarted, st.RefreshUpdatedAt, st.RefreshSynced, st.RefreshTotal = time.Time{}, time.Time{}, 0, 0
		st.RefreshError, st.RefreshFailedAt = reason, now
		return nil
	})
	if errors.Is(err, records.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("record refresh failure of %s/%s: %w", ws, key, err)
	}
	s.log.WarnContext(ctx, "benchmark refresh failed; it stays ready at its version", "workspace", ws, "key", key, "reason", reason)
	return nil
}

// releaseRefresh gives up a refresh that hit infrastructure trouble so the
// message's redelivery can run it at once (best effort: if this write
// fails too, the lease expires).
func (s *refresher) releaseRefresh(ctx context.Context, ws, key string, token time.Time) {
	_, err := s.benchmarks.UpdateSync(ctx, ws, key, func(state *records.SyncState) error {
		st := &state.Refresh
		if !ownsRefresh(*st, token) {
			return records.ErrNoChange
		}
		st.RefreshStarted, st.RefreshUpdatedAt, st.RefreshSynced, st.RefreshTotal = time.Time{}, time.Time{}, 0, 0
		return nil
	})
	if err != nil {
		s.log.WarnContext(ctx, "release refresh claim", "workspace", ws, "key", key, "err", err)
	}
}
