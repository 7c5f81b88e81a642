package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// RunMetrics are a run's scores per agent, recomputed from its attempt
// results. They are stored as one item (records.Store.RunMetrics) unless the
// per-category scores would make it too large, in which case those spill
// into parts of the same generation; ReadRunMetrics reassembles them.
type RunMetrics struct {
	RunID string `json:"run_id"`
	// Results counts the final attempt results the metrics are computed from.
	Results int            `json:"results"`
	Agents  []AgentMetrics `json:"agents"`
	// Generation identifies one recompute; CategoryParts counts the parts
	// its per-category scores spilled into (0: they are in Agents).
	Generation    int64 `json:"generation,omitempty"`
	CategoryParts int   `json:"category_parts,omitempty"`
}

// AgentMetrics is one run agent's summary.
type AgentMetrics struct {
	Index   int                 `json:"index"`
	Name    string              `json:"name,omitempty"`
	Harness string              `json:"harness"`
	Model   string              `json:"model,omitempty"`
	Summary leaderboard.Summary `json:"summary"`
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

// storeRunMetrics writes m as its head item, spilling per-category scores
// into parts first when the head would be too large.
func (s *Service) storeRunMetrics(ctx context.Context, m RunMetrics) error {
	m.Generation = s.now().UnixNano()
	inline, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode metrics: %w", err)
	}
	if len(inline) <= inlineMetricsBytes {
		return s.recs.PutRunMetrics(ctx, m.RunID, json.RawMessage(inline))
	}
	parts, err := spillCategories(&m)
	if err != nil {
		return err
	}
	var previous RunMetrics
	if err := s.recs.RunMetrics(ctx, m.RunID, &previous); err != nil && !errors.Is(err, records.ErrNotFound) {
		return err
	}
	if err := s.recs.PutRunMetricsParts(ctx, m.RunID, m.Generation, parts); err != nil {
		return err
	}
	if err := s.recs.PutRunMetrics(ctx, m.RunID, m); err != nil {
		return err
	}
	// The previous generation stays for readers of the previous head.
	return s.recs.DeleteRunMetricsParts(ctx, m.RunID, previous.Generation)
}

// spillCategories moves every agent's per-category scores out of m into
// encoded parts of at most about partBytes each.
func spillCategories(m *RunMetrics) ([]json.RawMessage, error) {
	var parts []json.RawMessage
	for i := range m.Agents {
		a := &m.Agents[i]
		chunks, err := chunkBySize(a.Summary.Categories, partBytes)
		if err != nil {
			return nil, err
		}
		for _, c := range chunks {
			data, err := json.Marshal(metricsPart{Agent: a.Index, Categories: c})
			if err != nil {
				return nil, fmt.Errorf("encode metrics part: %w", err)
			}
			parts = append(parts, data)
		}
		a.Summary.Categories = nil
	}
	m.CategoryParts = len(parts)
	return parts, nil
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

// readAttempts bounds the re-reads of a reader that raced a writer.
const readAttempts = 3

// ReadRunMetrics returns a run's stored metrics with every agent's
// per-category scores; ErrNotFound (records) before the first recompute.
func ReadRunMetrics(ctx context.Context, recs *records.Store, runID string) (RunMetrics, error) {
	for range readAttempts {
		var m RunMetrics
		if err := recs.RunMetrics(ctx, runID, &m); err != nil {
			return RunMetrics{}, err
		}
		if m.CategoryParts == 0 {
			return m, nil
		}
		raw, err := recs.RunMetricsParts(ctx, runID, m.Generation)
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
	return RunMetrics{}, fmt.Errorf("metrics of run %s: %w", runID, records.ErrContention)
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
