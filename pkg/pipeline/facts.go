package pipeline

import (
	"context"
	"fmt"
	"sync"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// facts caches, per process, what stays fixed once written — a run's
// submission fields, its agents, the tasks of pinned manifests — and the
// facts a stage already wrote, so redelivered messages skip their reads.
// The stages built together share one (through their core).
type facts struct {
	recs *records.Store

	mu     sync.Mutex
	runs   map[string]*run.Run      // runs as first read (immutable fields only), by id
	agents map[string][]run.Agent   // agents of runs (immutable), by run id
	tasks  map[string]*records.Task // tasks of pinned manifests, by ws/key/version/name
	known  map[string]struct{}      // facts already written (agent running)
}

// maxCached bounds each in-process cache; a full cache is emptied.
const maxCached = 4096

func newFacts(recs *records.Store) *facts {
	return &facts{
		recs: recs,
		runs: map[string]*run.Run{}, agents: map[string][]run.Agent{}, tasks: map[string]*records.Task{}, known: map[string]struct{}{},
	}
}

// runInfo returns the run as first read by this process, without its
// rendered config: use it only for the fields fixed at submission
// (settings, tasks, agents count, manifest pins), never for the status.
func (f *facts) runInfo(ctx context.Context, runID string) (*run.Run, error) {
	f.mu.Lock()
	cached, ok := f.runs[runID]
	f.mu.Unlock()
	if ok {
		return cached, nil
	}
	r, err := f.recs.Runs.Run(ctx, runID)
	if err != nil {
		return nil, err
	}
	r.Config = "" // the rendered config is for people; no handler reads it
	f.mu.Lock()
	if len(f.runs) >= maxCached {
		clear(f.runs)
	}
	f.runs[runID] = &r
	f.mu.Unlock()
	return &r, nil
}

// agentsOf returns the run's agents (immutable after submission; cached).
func (f *facts) agentsOf(ctx context.Context, runID string) ([]run.Agent, error) {
	f.mu.Lock()
	cached, ok := f.agents[runID]
	f.mu.Unlock()
	if ok {
		return cached, nil
	}
	agents, err := f.recs.Runs.Agents(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("agents of run %s: %w", runID, err)
	}
	f.mu.Lock()
	if len(f.agents) >= maxCached {
		clear(f.agents)
	}
	f.agents[runID] = agents
	f.mu.Unlock()
	return agents, nil
}

// task returns one task of a pinned manifest (immutable; cached).
func (f *facts) task(ctx context.Context, ws, key, version, name string) (*records.Task, error) {
	ck := ws + "\x00" + key + "\x00" + version + "\x00" + name
	f.mu.Lock()
	cached, ok := f.tasks[ck]
	f.mu.Unlock()
	if ok {
		return cached, nil
	}
	t, err := f.recs.Benchmarks.Task(ctx, ws, key, version, name)
	if err != nil {
		return nil, fmt.Errorf("task %s of %s@%s: %w", name, key, version, err)
	}
	f.mu.Lock()
	if len(f.tasks) >= maxCached {
		clear(f.tasks)
	}
	f.tasks[ck] = &t
	f.mu.Unlock()
	return &t, nil
}

// seen and remember keep a bounded set of facts already written (an agent
// known to be running), to skip redundant reads.
func (f *facts) seen(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.known[key]
	return ok
}

func (f *facts) remember(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.known) >= maxCached {
		clear(f.known)
	}
	f.known[key] = struct{}{}
}
