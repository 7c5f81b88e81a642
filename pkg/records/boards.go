package records

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// A benchmark's leaderboard is stored as many small items, so that a board
// of any realistic size fits DynamoDB's 400 KB item limit and a reader of
// one metric reads only that metric:
//
//	BENCH#<ws>#<key> | BOARD                                   head: current generation, parts per metric
//	BENCH#<ws>#<key> | BOARD#<gen>#<metric>#<group>#<part>     one part of a ranked group (rows chunked by size)
//	BENCH#<ws>#<key> | BOARDSEQ                                counter "seq": the recompute watermark
//
// A recompute takes a new watermark from BOARDSEQ (Add, so every recompute
// gets its own), writes its parts under that generation, then swaps the
// head with a version condition, only while the stored head is older: a
// board computed from an older read of the runs never replaces a newer one.
// Parts of generations before the head's previous one are deleted after a
// swap (the previous one stays for readers that read the old head).
//
// A run's metrics are one head item, RUN#<run> | METRICS (metrics.go), that
// carries every agent's scores; when the per-category scores would make it
// too large they spill into RUN#<run> | METRICS#CAT#<gen>#<part> items of
// the head's generation, cleaned up the same way. A finished run's metrics
// also keep every agent's per-task tallies in RUN#<run> | METRICS#TASKS#<gen>#<part>
// items, so a leaderboard recompute reads them instead of every result.

const (
	boardSK    = "BOARD"
	boardSeqSK = "BOARDSEQ"
	seqCounter = "seq"
	metricsSK  = "METRICS"
	catPrefix  = "METRICS#CAT#"
	taskPrefix = "METRICS#TASKS#"
)

func boardPartPrefix(gen int64, metric string) string {
	return fmt.Sprintf("BOARD#%019d#%s#", gen, metric)
}

// LeaderboardHead names the stored generation of a benchmark's leaderboard.
type LeaderboardHead struct {
	Workspace string `json:"workspace"`
	Benchmark string `json:"benchmark"`
	// Generation is the watermark the current parts were computed under.
	Generation int64 `json:"generation"`
	// Previous is the generation the current one replaced (its parts are
	// kept for readers of the old head).
	Previous int64 `json:"previous,omitempty"`
	// Parts counts the part items of each metric in Generation.
	Parts      map[string]int `json:"parts"`
	ComputedAt time.Time      `json:"computed_at"`

	Version int64 `json:"-"`
}

// NextLeaderboardWatermark atomically takes the benchmark's next leaderboard
// watermark (1, 2, …). A recompute that reads the runs after taking
// watermark w sees every run whose own recompute took a smaller one.
func (s *Boards) NextLeaderboardWatermark(ctx context.Context, ws, key string) (int64, error) {
	it, err := s.tbl.Add(ctx, benchPK(ws, key), boardSeqSK, map[string]int64{seqCounter: 1}, nil)
	if err != nil {
		return 0, fmt.Errorf("take leaderboard watermark of %s: %w", key, err)
	}
	return it.Counters[seqCounter], nil
}

// LeaderboardHead returns the head of the benchmark's stored leaderboard
// (ErrNotFound before the first recompute).
func (s *Boards) LeaderboardHead(ctx context.Context, ws, key string) (LeaderboardHead, error) {
	it, err := s.tbl.Get(ctx, benchPK(ws, key), boardSK)
	if err != nil {
		return LeaderboardHead{}, fmt.Errorf("get leaderboard of %s: %w", key, err)
	}
	var h LeaderboardHead
	if err := json.Unmarshal(it.Data, &h); err != nil {
		return LeaderboardHead{}, fmt.Errorf("decode leaderboard head of %s: %w", key, err)
	}
	h.Version = it.Version
	return h, nil
}

// SwapLeaderboardHead writes h as the benchmark's leaderboard head if the
// stored head is still at h.Version (0: no head is stored). A lost race
// returns an error that IsConditionFailed recognises.
func (s *Boards) SwapLeaderboardHead(ctx context.Context, h LeaderboardHead) (LeaderboardHead, error) {
	data, err := encode(h)
	if err != nil {
		return h, err
	}
	cond := store.Cond{Kind: store.IfVersion, Version: h.Version}
	if h.Version == 0 {
		cond = store.Cond{Kind: store.IfNotExists}
	}
	stored, err := s.tbl.Put(ctx, store.Item{PK: benchPK(h.Workspace, h.Benchmark), SK: boardSK, Data: data}, cond)
	if err != nil {
		return h, fmt.Errorf("swap leaderboard head of %s: %w", h.Benchmark, err)
	}
	h.Version = stored.Version
	return h, nil
}

// DeleteLeaderboardParts deletes the parts of every leaderboard generation
// older than gen.
func (s *Boards) DeleteLeaderboardParts(ctx context.Context, ws, key string, gen int64) error {
	return s.deleteGenerations(ctx, benchPK(ws, key), "BOARD#", gen)
}

func (s table) putGeneration(ctx context.Context, runID, prefix string, gen int64, parts []json.RawMessage) error {
	for i, data := range parts {
		sk := fmt.Sprintf("%s%019d#%04d", prefix, gen, i)
		if _, err := s.tbl.Put(ctx, store.Item{PK: runPK(runID), SK: sk, Data: data}, store.Cond{}); err != nil {
			return fmt.Errorf("put metrics part %s of run %s: %w", sk, runID, err)
		}
	}
	return nil
}

// generationQuery selects the parts prefix<gen>#… under pk, in order.
func generationQuery(pk, prefix string, gen int64) store.Query {
	return store.Query{PK: pk, Prefix: fmt.Sprintf("%s%019d#", prefix, gen)}
}

func (s table) dataItems(ctx context.Context, q store.Query) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for {
		page, err := s.tbl.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("query %s %q: %w", q.PK, q.Prefix, err)
		}
		for _, it := range page.Items {
			out = append(out, it.Data)
		}
		if page.Cursor == "" {
			return out, nil
		}
		q.Cursor = page.Cursor
	}
}

// deleteGenerations deletes the items under pk whose sort key is
// prefix<gen>#… with a generation below gen.
func (s table) deleteGenerations(ctx context.Context, pk, prefix string, gen int64) error {
	q := store.Query{PK: pk, Prefix: prefix, To: fmt.Sprintf("%s%019d", prefix, gen)}
	for {
		page, err := s.tbl.Query(ctx, q)
		if err != nil {
			return fmt.Errorf("query old generations %s %q: %w", pk, prefix, err)
		}
		for _, it := range page.Items {
			g, _, _ := strings.Cut(strings.TrimPrefix(it.SK, prefix), "#")
			if n, err := strconv.ParseInt(g, 10, 64); err != nil || n >= gen {
				continue
			}
			if err := s.tbl.Delete(ctx, pk, it.SK, store.Cond{}); err != nil {
				return fmt.Errorf("delete %s|%s: %w", pk, it.SK, err)
			}
		}
		if page.Cursor == "" {
			return nil
		}
		q.Cursor = page.Cursor
	}
}
