package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
)

// RunMetrics are a run's scores per agent, recomputed from its attempt
// results. They are stored as one head item, RUN#<run> | METRICS, unless
// the per-category scores would make it too large, in which case those
// spill into parts of the same generation; RunMetrics reassembles them.
type RunMetrics struct {
	RunID string `json:"run_id"`
	// Results counts the final attempt results the metrics are computed from.
	Results int            `json:"results"`
	Agents  []AgentMetrics `json:"agents"`
	// Generation identifies one recompute; CategoryParts counts the parts
	// its per-category scores spilled into (0: they are in Agents).
	Generation    int64 `json:"generation,omitempty"`
	CategoryParts int   `json:"category_parts,omitempty"`
	// TaskParts counts the parts holding the agents' per-task tallies of
	// these Results, kept once the run finished (0: none); see RunTallies.
	TaskParts int `json:"task_parts,omitempty"`
}

// AgentMetrics is one run agent's summary.
type AgentMetrics struct {
	Index   int                 `json:"index"`
	Name    string              `json:"name,omitempty"`
	Harness string              `json:"harness"`
	Model   string              `json:"model,omitempty"`
	Summary leaderboard.Summary `json:"summary"`
}

// AgentTallies are one agent's per-task tallies, as a finished run's
// metrics keep them (and one stored part holds some of them).
type AgentTallies struct {
	Agent int                     `json:"agent"`
	Tasks []leaderboard.TaskTally `json:"tasks"`
}

// metricsPart is one spilled part: some per-category scores of one agent.
type metricsPart struct {
	Agent      int                         `json:"agent"`
	Categories []leaderboard.CategoryScore `json:"categories"`
}

// Item budgets, well under the 400 KB item limit of both adapters: a run's
// metrics keep their categories inline up to inlineMetricsBytes; spilled
// parts and leaderboard parts hold up to partBytes of entries.
const (
	inlineMetricsBytes = 256 << 10
	partBytes          = 128 << 10
)

// readAttempts bounds the re-reads of a reader that raced a writer.
const readAttempts = 3

// ErrMissingTallies reports fewer stored tally parts than a metrics head
// names: a recompute of more results replaced them meanwhile, or they are
// damaged.
var ErrMissingTallies = errors.New("records: tally parts missing")

// PutRunMetrics writes m (whose Generation the caller stamps) as the run's
// metrics head, with the per-task tallies of a finished run in parts keyed
// by the results they cover, and spilling per-category scores into parts of
// its generation first when the head would be too large. Parts are written
// before the head that names them.
func (s *Runs) PutRunMetrics(ctx context.Context, m RunMetrics, tallies []AgentTallies) error {
	if len(tallies) > 0 {
		parts, err := encodeTallies(tallies)
		if err != nil {
			return err
		}
		if err := s.putGeneration(ctx, m.RunID, taskPrefix, int64(m.Results), parts); err != nil {
			return err
		}
		m.TaskParts = len(parts)
	} else {
		m.TaskParts = 0
	}
	inline, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode metrics: %w", err)
	}
	if len(inline) <= inlineMetricsBytes {
		err = s.putJSON(ctx, runPK(m.RunID), metricsSK, json.RawMessage(inline))
	} else {
		err = s.putSpilledMetrics(ctx, m)
	}
	if err != nil || m.TaskParts == 0 {
		return err
	}
	// Results only grow, so tallies of fewer results are stale; a reader
	// of an older head that loses them reads the head again.
	return s.deleteGenerations(ctx, runPK(m.RunID), taskPrefix, int64(m.Results))
}

// putSpilledMetrics writes m with its per-category scores spilled into
// parts of its generation.
func (s *Runs) putSpilledMetrics(ctx context.Context, m RunMetrics) error {
	parts, err := spillCategories(&m)
	if err != nil {
		return err
	}
	previous, err := s.RunMetricsHead(ctx, m.RunID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err := s.putGeneration(ctx, m.RunID, catPrefix, m.Generation, parts); err != nil {
		return err
	}
	if err := s.putJSON(ctx, runPK(m.RunID), metricsSK, m); err != nil {
		return err
	}
	// The previous generation stays for readers of the previous head.
	return s.deleteGenerations(ctx, runPK(m.RunID), catPrefix, previous.Generation)
}

// RunMetricsHead returns the run's stored metrics head alone: spilled
// per-category scores are not merged in and tallies not read (ErrNotFound
// before the first recompute).
func (s *Runs) RunMetricsHead(ctx context.Context, runID string) (RunMetrics, error) {
	var m RunMetrics
	err := s.getJSON(ctx, runPK(runID), metricsSK, &m)
	return m, err
}

// RunMetrics returns a run's stored metrics with every agent's per-category
// scores; ErrNotFound before the first recompute.
func (s *Runs) RunMetrics(ctx context.Context, runID string) (RunMetrics, error) {
	for range readAttempts {
		m, err := s.RunMetricsHead(ctx, runID)
		if err != nil {
			return RunMetrics{}, err
		}
		if m.CategoryParts == 0 {
			return m, nil
		}
		raw, err := s.dataItems(ctx, generationQuery(runPK(runID), catPrefix, m.Generation))
		if err != nil {
			return RunMetrics{}, err
		}
		if len(raw) != m.CategoryParts {
			continue // a newer recompute replaced these parts meanwhile
		}
		if err := mergeCategories(&m, raw); err != nil {
			return RunMetrics{}, fmt.Errorf("metrics of run %s: %w", runID, err)
		}
		return m, nil
	}
	return RunMetrics{}, fmt.Errorf("metrics of run %s: %w", runID, ErrContention)
}

// RunTallies returns the per-task tallies a finished run's metrics keep, by
// agent index. ok is false when the metrics keep no tallies (the run had not
// finished when they were last computed); ErrNotFound before the first
// recompute.
func (s *Runs) RunTallies(ctx context.Context, runID string) (tallies map[int][]leaderboard.TaskTally, ok bool, err error) {
	var last RunMetrics
	for range readAttempts {
		m, err := s.RunMetricsHead(ctx, runID)
		if err != nil {
			return nil, false, err
		}
		tallies, err := s.HeadTallies(ctx, m)
		if !errors.Is(err, ErrMissingTallies) {
			return tallies, err == nil && m.TaskParts > 0, err
		}
		// A recompute of more results replaced these parts meanwhile,
		// unless the head stays the same.
		if m.Generation == last.Generation && m.Results == last.Results {
			return nil, false, err
		}
		last = m
	}
	return nil, false, fmt.Errorf("task tallies of run %s: %w", runID, ErrContention)
}

// HeadTallies reads and decodes the per-task tally parts the metrics head m
// names (none when it names none); an error wraps ErrMissingTallies when
// fewer parts are stored.
func (s *Runs) HeadTallies(ctx context.Context, m RunMetrics) (map[int][]leaderboard.TaskTally, error) {
	if m.TaskParts == 0 {
		return nil, nil
	}
	raw, err := s.dataItems(ctx, generationQuery(runPK(m.RunID), taskPrefix, int64(m.Results)))
	if err != nil {
		return nil, err
	}
	if len(raw) < m.TaskParts {
		return nil, fmt.Errorf("task tallies of run %s: %d of the %d parts of %d results are stored: %w",
			m.RunID, len(raw), m.TaskParts, m.Results, ErrMissingTallies)
	}
	tallies := map[int][]leaderboard.TaskTally{}
	for _, data := range raw[:m.TaskParts] { // parts past the head's count are another encoding's leftovers
		var p AgentTallies
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, fmt.Errorf("task tallies of run %s: %w", m.RunID, err)
		}
		tallies[p.Agent] = append(tallies[p.Agent], p.Tasks...)
	}
	for agent, tasks := range tallies {
		if !slices.IsSortedFunc(tasks, func(a, b leaderboard.TaskTally) int { return strings.Compare(a.Task, b.Task) }) {
			return nil, fmt.Errorf("task tallies of run %s agent %d are not sorted by task", m.RunID, agent)
		}
	}
	return tallies, nil
}

// encodeTallies splits every agent's per-task tallies into encoded parts
// of at most about partBytes each.
func encodeTallies(tallies []AgentTallies) ([]json.RawMessage, error) {
	var parts []json.RawMessage
	for _, a := range tallies {
		encoded, err := encodeChunks(a.Tasks, func(c []leaderboard.TaskTally) any { return AgentTallies{Agent: a.Agent, Tasks: c} })
		if err != nil {
			return nil, err
		}
		parts = append(parts, encoded...)
	}
	return parts, nil
}

// spillCategories moves every agent's per-category scores out of m into
// encoded parts of at most about partBytes each.
func spillCategories(m *RunMetrics) ([]json.RawMessage, error) {
	var parts []json.RawMessage
	for i := range m.Agents {
		a := &m.Agents[i]
		encoded, err := encodeChunks(a.Summary.Categories, func(c []leaderboard.CategoryScore) any {
			return metricsPart{Agent: a.Index, Categories: c}
		})
		if err != nil {
			return nil, err
		}
		parts = append(parts, encoded...)
		a.Summary.Categories = nil
	}
	m.CategoryParts = len(parts)
	return parts, nil
}

func mergeCategories(m *RunMetrics, raw []json.RawMessage) error {
	byIndex := make(map[int]*AgentMetrics, len(m.Agents))
	for i := range m.Agents {
		byIndex[m.Agents[i].Index] = &m.Agents[i]
	}
	for _, data := range raw {
		var p metricsPart
		if err := json.Unmarshal(data, &p); err != nil {
			return fmt.Errorf("decode metrics part: %w", err)
		}
		if a, ok := byIndex[p.Agent]; ok {
			a.Summary.Categories = append(a.Summary.Categories, p.Categories...)
		}
	}
	m.CategoryParts = 0
	return nil
}

// encodeChunks splits items into chunks of at most about partBytes and
// encodes each as the value part returns for it.
func encodeChunks[T any](items []T, part func([]T) any) ([]json.RawMessage, error) {
	chunks, err := chunkBySize(items, partBytes)
	if err != nil {
		return nil, err
	}
	encoded := make([]json.RawMessage, len(chunks))
	for i, c := range chunks {
		if encoded[i], err = json.Marshal(part(c)); err != nil {
			return nil, fmt.Errorf("encode metrics part: %w", err)
		}
	}
	return encoded, nil
}

// chunkBySize splits items into runs whose JSON encodings add up to at
// most budget bytes (a single larger item gets a chunk of its own).
func chunkBySize[T any](items []T, budget int) ([][]T, error) {
	var chunks [][]T
	start, size := 0, 0
	for i := range items {
		b, err := json.Marshal(items[i])
		if err != nil {
			return nil, fmt.Errorf("encode %T: %w", items[i], err)
		}
		if i > start && size+len(b) > budget {
			chunks = append(chunks, items[start:i])
			start, size = i, 0
		}
		size += len(b) + 1
	}
	if start < len(items) {
		chunks = append(chunks, items[start:])
	}
	return chunks, nil
}
