package benchsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/registry"
)

// Progress is recorded after this many tasks or this much time, whichever
// comes first, so a large dataset is not one write per task.
const (
	progressEveryTasks = 10
	progressEvery      = 2 * time.Second
)

// failure is a sync problem the user has to act on (an unreachable
// registry, a broken task): the benchmark becomes failed with its message,
// and the message is not retried.
type failure struct{ msg string }

func (f *failure) Error() string { return f.msg }

func failf(format string, args ...any) error { return &failure{msg: fmt.Sprintf(format, args...)} }

// errSuperseded ends a sync whose benchmark changed under it (deleted,
// reset to pending, taken over); the newer state's own sync wins.
var errSuperseded = errors.New("sync superseded")

// Sync is Service.Sync.
func (s *syncer) Sync(ctx context.Context, msg SyncMessage) error {
	if err := msg.check(); err != nil {
		return fmt.Errorf("sync message %+v: %w", msg, err)
	}
	if msg.Refresh {
		return s.refresher.refresh(ctx, msg)
	}
	ws, key := msg.Workspace, msg.Key
	b, claimed, resumed, err := s.claim(ctx, ws, key, msg.Resume)
	if errors.Is(err, records.ErrNotFound) {
		s.log.InfoContext(ctx, "sync of a deleted benchmark skipped", "workspace", ws, "key", key)
		s.stopRemovedBuilds(ctx, msg)
		return nil
	}
	if err != nil || !claimed {
		return err
	}
	s.log.InfoContext(ctx, "benchmark sync started", "workspace", ws, "key", key, "source", b.Source.Ref, "resumed", resumed)
	sctx, end := s.inflight.start(ctx, ws, key)
	err = s.syncClaimed(sctx, b, msg.Resume.builds(), resumed)
	end()
	if errors.Is(context.Cause(sctx), errRemoved) {
		s.log.InfoContext(ctx, "benchmark sync cancelled: the benchmark was removed", "workspace", ws, "key", key)
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
		return s.park(ctx, msg, ip)
	case errors.Is(err, errSuperseded):
		s.log.InfoContext(ctx, "benchmark sync superseded", "workspace", ws, "key", key)
		return nil
	case errors.As(err, &f):
		return s.fail(ctx, ws, key, f.msg)
	case ctx.Err() != nil:
		// Shutting down (image builds make syncs long): hand the claim
		// back so the next start takes it over at once instead of
		// waiting for the lease to expire.
		s.release(context.WithoutCancel(ctx), ws, key)
		return err
	}
	s.release(ctx, ws, key)
	return fmt.Errorf("sync %s/%s: %w", ws, key, err)
}

// claim moves the benchmark to syncing; claimed is false when it is
// already ready. A resume message takes over the syncing benchmark it
// parked (resumed), as long as nothing has been recorded on it since.
func (s *syncer) claim(ctx context.Context, ws, key string, resume *Resume) (records.Benchmark, bool, bool, error) {
	now := s.now().UTC()
	claimed, resumed := false, false
	st, err := s.benchmarks.UpdateSync(ctx, ws, key, func(st *records.SyncState) error {
		b := &st.Benchmark
		claimed, resumed = false, false
		switch {
		case b.Status == records.SyncReady:
			return records.ErrNoChange
		case b.Status == records.SyncSyncing && resume.parked(b.UpdatedAt):
			// Its own resume: the lease is this message's. The phase and
			// count stay ("Preparing images · k / n") while the tasks are
			// fetched again.
			b.UpdatedAt = resume.fenced(now)
			claimed, resumed = true, true
			return nil
		case b.Status == records.SyncSyncing && !s.leaseExpired(*b, now):
			return fmt.Errorf("benchmark %s/%s: %w (%d/%d tasks, last progress %s)", ws, key, ErrSyncInProgress, b.Synced, b.Total, b.UpdatedAt.Format(time.RFC3339))
		}
		b.Status, b.Synced, b.SyncError, b.UpdatedAt, b.Phase = records.SyncSyncing, 0, "", now, records.SyncPhaseTasks
		claimed = true
		return nil
	})
	return st.Benchmark, claimed, resumed, err
}

// ImagesBuilding is Sync's answer when task images are still building
// (an ImageBuilder answered BuildRunning): the benchmark stays syncing at
// "Preparing images · k / n" and the consumer sends Resume after After
// (Queued.Run does). It is an error so that a consumer that does not know
// it leaves the message to be delivered again, which resumes the sync too
// once its lease expires.
type ImagesBuilding struct {
	Resume SyncMessage
	After  time.Duration
}

func (e *ImagesBuilding) Error() string {
	return fmt.Sprintf("benchmark %s/%s: %d task images still building; resume in %s", e.Resume.Workspace, e.Resume.Key, len(e.Resume.Resume.Builds), e.After)
}

// resumeAfter is the delay of a parked sync's resume message.
func (s *deps) resumeAfter() time.Duration {
	if s.envs != nil && s.envs.ResumeAfter > 0 {
		return min(s.envs.ResumeAfter, 15*time.Minute)
	}
	return DefaultResumeAfter
}

// park records a sync's image progress with the time its resume message
// will name, and returns the ImagesBuilding that carries the message.
func (s *syncer) park(ctx context.Context, msg SyncMessage, ip *imagesPending) error {
	// Stores keep at least milliseconds; the resume compares at that.
	now := s.now().UTC().Truncate(time.Millisecond)
	_, err := s.benchmarks.UpdateSync(ctx, msg.Workspace, msg.Key, func(st *records.SyncState) error {
		b := &st.Benchmark
		if b.Status != records.SyncSyncing {
			return errSuperseded
		}
		b.Phase, b.Synced, b.Total, b.UpdatedAt = records.SyncPhaseImages, ip.done, ip.total, now
		return nil
	})
	return s.parked(ctx, "sync", msg, now, ip, err)
}

// parked finishes parking a sync or refresh (what) once its progress write
// returned err: a write the sync no longer owned ends the work quietly;
// otherwise the ImagesBuilding carries the resume message stamped now.
func (s *deps) parked(ctx context.Context, what string, msg SyncMessage, now time.Time, ip *imagesPending, err error) error {
	if errors.Is(err, errSuperseded) || errors.Is(err, records.ErrNotFound) {
		s.log.InfoContext(ctx, "benchmark "+what+" superseded", "workspace", msg.Workspace, "key", msg.Key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("park %s %s/%s: %w", what, msg.Workspace, msg.Key, err)
	}
	s.log.InfoContext(ctx, "benchmark "+what+" parked on image builds", "workspace", msg.Workspace, "key", msg.Key,
		"building", len(ip.builds), "prepared", ip.done, "tasks", ip.total)
	return &ImagesBuilding{Resume: NewResumeMessage(msg, now, ip.builds), After: s.resumeAfter()}
}

func (s *deps) leaseExpired(b records.Benchmark, now time.Time) bool {
	return now.Sub(b.UpdatedAt) > s.lease
}

// syncClaimed fetches the tasks, decides their images and stores the
// manifest version at once (tasks whose image still has to be built or
// warmed marked preparing, the version named on the benchmark as the one
// it prepares), then builds and warms those images, storing each task as
// it is ready, so runs may select ready tasks before the sync ends.
func (s *syncer) syncClaimed(ctx context.Context, b records.Benchmark, running map[string]string, resumed bool) error {
	src, err := s.loadSource(ctx, b)
	if err != nil {
		return err
	}
	write := s.syncProgress(b.Workspace, b.Key, resumed)
	c, err := s.collect(ctx, b, src, write, running)
	if err != nil {
		return err
	}
	defer c.prep.close()
	m, err := s.storeManifest(ctx, b.Workspace, c.m, c.files)
	if err != nil {
		return err
	}
	if c.prep != nil {
		if err := s.markPreparing(ctx, b.Workspace, b.Key, m.Version); err != nil {
			return err
		}
		save := func(ctx context.Context, t benchmark.Task) error {
			return s.benchmarks.PutTask(ctx, b.Workspace, m.Key, m.Version, t, c.files[t.Name])
		}
		if err := s.finishImages(ctx, c.prep, m.Tasks, c.work, write, save); err != nil {
			return err
		}
	}
	return s.markReady(ctx, b.Workspace, m, c.warning)
}

// markPreparing names the stored version whose images the syncing
// benchmark prepares (runs may select its ready tasks).
func (s *syncer) markPreparing(ctx context.Context, ws, key, version string) error {
	_, err := s.benchmarks.UpdateSync(ctx, ws, key, func(st *records.SyncState) error {
		b := &st.Benchmark
		if b.Status != records.SyncSyncing {
			return errSuperseded
		}
		if b.PreparingVersion == version {
			return records.ErrNoChange
		}
		b.PreparingVersion = version
		return nil
	})
	if errors.Is(err, records.ErrNotFound) {
		return errSuperseded
	}
	return err
}

// loadSource returns where the benchmark syncs from.
func (s *fetcher) loadSource(ctx context.Context, b records.Benchmark) (syncSource, error) {
	var src syncSource
	err := s.benchmarks.SyncSource(ctx, b.Workspace, b.Key, &src)
	switch {
	case err == nil:
		return src, nil
	case !errors.Is(err, records.ErrNotFound):
		return syncSource{}, err
	case b.Source.Type == benchmark.Harbor:
		return syncSource{Spec: b.Source.Ref}, nil
	}
	return syncSource{}, failf("managed benchmark %s has no stored catalog entry; restart the platform to reinstall the catalog", b.Key)
}

// openSource opens the dataset's registry, package registry, git
// repository or directory.
func (s *fetcher) openSource(ctx context.Context, ws string, src syncSource) (registry.Source, string, error) {
	switch {
	case src.Package != nil:
		ps, err := s.openPackage(ctx, ws, src.Package)
		if err != nil {
			return nil, src.Package.Ref, err
		}
		return ps, ps.Location(), nil
	case src.Repo != nil:
		rs, err := s.openRepo(src.Repo)
		if err != nil {
			return nil, src.Repo.URL, err
		}
		return rs, rs.Location(), nil
	case src.Dir != "":
		c, err := registry.OpenDir(src.Dir, registry.Options{TempDir: s.workDir, Logger: s.log})
		if err != nil {
			return nil, src.Dir, failf("%v", err)
		}
		return c, src.Dir, nil
	}
	location := src.Registry
	if location == "" {
		location = s.registry
	}
	reg, err := s.open(location)
	if err != nil {
		return nil, location, failf("%v", err)
	}
	return reg, location, nil
}

// collected is what a sync or refresh gathered: the manifest (every
// task's image decided, those still to build or warm marked preparing),
// where each task's files are, what the source warned about, and the image
// work left (prep nil: the service prepares no images).
type collected struct {
	m       benchmark.Manifest
	files   map[string]records.TaskFiles
	warning string
	prep    *imagePrep
	work    []imageWork
}

// collect resolves the dataset, fetches, loads and bundles its tasks and
// decides their images, recording progress through write.
func (s *fetcher) collect(ctx context.Context, b records.Benchmark, src syncSource, write progressWriter, running map[string]string) (collected, error) {
	var c collected
	var err error
	c.m, c.files, c.warning, c.prep, c.work, err = s.gather(ctx, b, src, write, running)
	return c, err
}

func (s *fetcher) gather(ctx context.Context, b records.Benchmark, src syncSource, write progressWriter, running map[string]string) (benchmark.Manifest, map[string]records.TaskFiles, string, *imagePrep, []imageWork, error) {
	var creds []PullCredential
	if s.envs != nil {
		// Read first: a deleted or malformed record fails the sync before
		// any task is fetched.
		c, err := s.pullCredentials(ctx, b)
		if err != nil {
			return benchmark.Manifest{}, nil, "", nil, nil, err
		}
		creds = c
	}
	source, location, err := s.openSource(ctx, b.Workspace, src)
	if err != nil {
		return benchmark.Manifest{}, nil, "", nil, nil, err
	}
	defer source.Close()
	reg, err := source.Registry(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return benchmark.Manifest{}, nil, "", nil, nil, ctx.Err()
		}
		return benchmark.Manifest{}, nil, "", nil, nil, failf("%v", err)
	}
	var d harbor.Dataset
	if src.Package != nil || src.Repo != nil {
		d = reg[0] // the one dataset the reference or repository resolved to
	} else {
		name, version := benchmark.SplitRef(src.Spec)
		if d, err = resolveIn(reg, location, name, version); err != nil {
			return benchmark.Manifest{}, nil, "", nil, nil, failf("%v", err)
		}
	}
	var warnings []string
	ps, isPackage := source.(*registry.PackageSource)
	if isPackage {
		pd, err := ps.Dataset(ctx)
		if err != nil {
			return benchmark.Manifest{}, nil, "", nil, nil, failf("%v", err)
		}
		if w := pd.Version.Yanked(pd.Ref); w != "" {
			warnings = append(warnings, w)
		}
	}
	if len(d.Tasks) == 0 {
		return benchmark.Manifest{}, nil, "", nil, nil, failf("dataset %s in %s lists no tasks; a benchmark needs at least one", d.Spec(), location)
	}
	tmp, err := os.MkdirTemp(s.workDir, "sync-")
	if err != nil {
		return benchmark.Manifest{}, nil, "", nil, nil, fmt.Errorf("sync work dir: %w", err)
	}
	// The task directories are the build contexts of finishImages, after
	// gather: the collected's close removes them.
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(tmp)
		}
	}()

	p := &progress{now: s.now, write: write, phase: records.SyncPhaseTasks, total: len(d.Tasks)}
	if err := p.record(ctx, 0, true); err != nil {
		return benchmark.Manifest{}, nil, "", nil, nil, err
	}
	tasks := make([]benchmark.Task, 0, len(d.Tasks))
	files := make(map[string]records.TaskFiles, len(d.Tasks))
	dirs := make([]string, 0, len(d.Tasks))
	for i, ref := range d.Tasks {
		dir := filepath.Join(tmp, fmt.Sprintf("task-%d", i))
		t, tf, warning, err := s.syncTask(ctx, source, ref, dir)
		if err != nil {
			return benchmark.Manifest{}, nil, "", nil, nil, err
		}
		if warning != "" {
			warnings = append(warnings, warning)
		}
		if tf.BundleKey == "" && tf.Dir == "" {
			dir = "" // unavailable before any file was kept
		}
		tasks = append(tasks, t)
		dirs = append(dirs, dir)
		files[t.Name] = tf
		if err := p.record(ctx, i+1, false); err != nil {
			return benchmark.Manifest{}, nil, "", nil, nil, err
		}
	}
	prep, work, err := s.decideImages(ctx, tasks, dirs, write, running, creds)
	if err != nil {
		return benchmark.Manifest{}, nil, "", nil, nil, err
	}
	m, err := buildManifest(b, src, d, tasks)
	if err != nil {
		return benchmark.Manifest{}, nil, "", nil, nil, err
	}
	if rs, ok := source.(*registry.RepoSource); ok {
		m.Source.Ref = src.Repo.URL + "@" + rs.Commit() + pathSuffix(src.Repo.Path)
		m.Source.URL = src.Repo.URL
	}
	if isPackage {
		pd, _ := ps.Dataset(ctx) // resolved above
		m.Source.Ref = pd.Ref.Package() + "@" + pd.Version.Digest()
		if m.Files, err = s.datasetFiles(ctx, ps, tmp); err != nil {
			return benchmark.Manifest{}, nil, "", nil, nil, err
		}
	}
	if prep != nil {
		prep.workDir, keep = tmp, true
	}
	return m, files, strings.Join(warnings, "; "), prep, work, nil
}

// buildManifest applies the catalog policy (managed) or the registry
// defaults (harbor) to the task list.
func buildManifest(b records.Benchmark, src syncSource, d harbor.Dataset, tasks []benchmark.Task) (benchmark.Manifest, error) {
	var (
		m   benchmark.Manifest
		err error
	)
	if src.Managed != nil {
		m, err = src.Managed.entry(b.Key, src).Manifest(d.Version, tasks)
	} else {
		m, err = benchmark.HarborManifest(d.Name, d.Version, d.Description, tasks)
		m.Key = b.Key
	}
	if err != nil {
		return benchmark.Manifest{}, failf("%s: %v", d.Spec(), err)
	}
	return m, nil
}

// storeManifest writes the manifest and returns it with the version it is
// stored under. Stored versions are never replaced with other content,
// because runs pin them: a version whose content changed upstream (a moving
// "head", a HEAD-pinned task repository) is stored as
// "<version>+<first 12 hex digits of its digest>". Rewriting the same
// content is harmless (tasks are created once, the header replaced).
func (s *fetcher) storeManifest(ctx context.Context, ws string, m benchmark.Manifest, files map[string]records.TaskFiles) (benchmark.Manifest, error) {
	resolved := m.Version
	for _, v := range []string{resolved, contentVersion(resolved, m.Digest)} {
		digest, err := s.benchmarks.ManifestDigest(ctx, ws, m.Key, v)
		switch {
		case errors.Is(err, records.ErrNotFound):
			// Task items a crashed attempt left without a header go
			// first, so the version holds exactly this task list.
			if err := s.benchmarks.DeleteManifest(ctx, ws, m.Key, v); err != nil {
				return benchmark.Manifest{}, err
			}
		case err != nil:
			return benchmark.Manifest{}, err
		case digest != m.Digest:
			s.log.InfoContext(ctx, "manifest version changed upstream; storing it under a content version", "workspace", ws, "key", m.Key, "version", v, "stored_digest", digest, "digest", m.Digest)
			continue
		}
		m.Version = v
		return m, s.benchmarks.PutManifest(ctx, ws, m, files)
	}
	return benchmark.Manifest{}, failf("%s@%s: versions %s and %s are stored with other content", m.Key, resolved, resolved, contentVersion(resolved, m.Digest))
}

// contentVersion names a version by its resolved name and its content.
func contentVersion(version, digest string) string {
	hex := strings.TrimPrefix(digest, "sha256:")
	return version + "+" + hex[:min(12, len(hex))]
}

// markReady switches a syncing benchmark to ready at m and records the
// sync in its sync state (the refresh index), in one transaction.
func (s *syncer) markReady(ctx context.Context, ws string, m benchmark.Manifest, warning string) error {
	now := s.now().UTC()
	_, err := s.benchmarks.UpdateSync(ctx, ws, m.Key, func(state *records.SyncState) error {
		b, st := &state.Benchmark, &state.Refresh
		if b.Status != records.SyncSyncing {
			return errSuperseded
		}
		b.Status, b.SyncError, b.UpdatedAt, b.Phase, b.PreparingVersion = records.SyncReady, "", now, "", ""
		b.Synced, b.Total, b.TaskCount = len(m.Tasks), len(m.Tasks), len(m.Tasks)
		b.ReadyVersion, b.ReadyDigest, b.SyncWarning = m.Version, m.Digest, warning
		*st = records.RefreshState{Workspace: st.Workspace, Key: st.Key, LastSynced: now, Version: st.Version}
		return nil
	})
	if errors.Is(err, records.ErrNotFound) {
		return errSuperseded
	}
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "benchmark ready", "workspace", ws, "key", m.Key, "version", m.Version, "digest", m.Digest, "tasks", len(m.Tasks))
	if warning != "" {
		s.log.WarnContext(ctx, "benchmark source warns", "workspace", ws, "key", m.Key, "warning", warning)
	}
	return nil
}

// fail records reason on a syncing benchmark.
func (s *syncer) fail(ctx context.Context, ws, key, reason string) error {
	now := s.now().UTC()
	_, err := s.benchmarks.UpdateSync(ctx, ws, key, func(st *records.SyncState) error {
		b := &st.Benchmark
		if b.Status != records.SyncSyncing {
			return records.ErrNoChange
		}
		b.Status, b.SyncError, b.UpdatedAt = records.SyncFailed, reason, now
		return nil
	})
	if errors.Is(err, records.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("record sync failure of %s/%s: %w", ws, key, err)
	}
	s.log.WarnContext(ctx, "benchmark sync failed", "workspace", ws, "key", key, "reason", reason)
	return nil
}

// release hands a sync that hit infrastructure trouble back to pending so
// the message's redelivery can run it at once (best effort: if this write
// fails too, the lease expires).
func (s *syncer) release(ctx context.Context, ws, key string) {
	now := s.now().UTC()
	_, err := s.benchmarks.UpdateSync(ctx, ws, key, func(st *records.SyncState) error {
		b := &st.Benchmark
		if b.Status != records.SyncSyncing {
			return records.ErrNoChange
		}
		b.Status, b.UpdatedAt = records.SyncPending, now
		return nil
	})
	if err != nil {
		s.log.WarnContext(ctx, "release sync claim", "workspace", ws, "key", key, "err", err)
	}
}

// progressWriter stores n of total steps of a phase done at time now; each
// write also renews the lease of the sync or refresh it belongs to.
type progressWriter func(ctx context.Context, phase records.SyncPhase, n, total int, now time.Time) error

// progress batches the progress writes of one sync or refresh.
type progress struct {
	now        func() time.Time
	write      progressWriter
	phase      records.SyncPhase
	total      int
	lastCount  int
	lastRecord time.Time
}

// record stores n/total when forced or when enough has happened since the
// last write.
func (p *progress) record(ctx context.Context, n int, force bool) error {
	now := p.now().UTC()
	if !force && n-p.lastCount < progressEveryTasks && now.Sub(p.lastRecord) < progressEvery {
		return nil
	}
	if err := p.write(ctx, p.phase, n, p.total, now); err != nil {
		return err
	}
	p.lastCount, p.lastRecord = n, now
	return nil
}

// syncProgress records a sync's progress on the syncing benchmark. A
// resumed sync fetches the tasks again under the images phase's count it
// parked with (only renewing its lease) until it is preparing images again.
func (s *syncer) syncProgress(ws, key string, resumed bool) progressWriter {
	return func(ctx context.Context, phase records.SyncPhase, n, total int, now time.Time) error {
		_, err := s.benchmarks.UpdateSync(ctx, ws, key, func(st *records.SyncState) error {
			b := &st.Benchmark
			if b.Status != records.SyncSyncing {
				return errSuperseded
			}
			if resumed && (phase == records.SyncPhaseTasks || (phase == b.Phase && n < b.Synced)) {
				b.UpdatedAt = now
				return nil
			}
			b.Phase, b.Synced, b.Total, b.UpdatedAt = phase, n, total, now
			return nil
		})
		if errors.Is(err, records.ErrNotFound) {
			return errSuperseded
		}
		return err
	}
}
