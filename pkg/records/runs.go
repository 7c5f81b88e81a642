package records

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// LogRetention is how long run log lines are kept (their TTL).
const LogRetention = 30 * 24 * time.Hour

const (
	activeRunsPK = "ACTIVE_RUNS"
	platformPK   = "PLATFORM"
	sandboxesSK  = "SANDBOXES"
	gateCounter  = "active"
)

func runPK(id string) string { return "RUN#" + id }

func agentSK(idx int) string { return fmt.Sprintf("AGENT#%02d", idx) }

func agentTallySK(idx int) string { return fmt.Sprintf("TALLY#%02d", idx) }

func slotSK(id string) string { return "SLOT#" + id }

func resultSK(slot string, gen int) string { return fmt.Sprintf("RESULT#%s#G%03d", slot, gen) }

// timeKey renders t as a fixed-width sortable string.
func timeKey(t time.Time) string { return t.UTC().Format("20060102T150405.000000000Z") }

// storedRun is a run's stored encoding: its status first, ahead of the
// task list and the config (which can be long), so that RunStatus stops
// reading there. The outer Status hides the run's own; decoding into a
// run.Run fills it from the same key.
type storedRun struct {
	Status run.Status `json:"status"`
	*run.Run
}

var runCodec = codec[run.Run]{
	name: "run",
	item: func(r *run.Run) (store.Item, error) {
		data, err := encode(storedRun{Status: r.Status, Run: r})
		if err != nil {
			return store.Item{}, err
		}
		created := timeKey(r.CreatedAt) + "#" + r.ID
		return store.Item{
			PK: runPK(r.ID), SK: runItemSK, Data: data,
			GSI1PK: "WS#" + r.Workspace + "#RUNS", GSI1SK: created,
			GSI2PK: benchPK(r.Workspace, r.Benchmark) + "#RUNS", GSI2SK: created,
		}, nil
	},
	setVersion: func(r *run.Run, v int64) { r.Version = v },
}

var agentCodec = codec[run.Agent]{
	name: "run agent",
	item: func(a *run.Agent) (store.Item, error) {
		data, err := encode(a)
		if err != nil {
			return store.Item{}, err
		}
		return store.Item{PK: runPK(a.RunID), SK: agentSK(a.Index), Data: data}, nil
	},
	setVersion: func(a *run.Agent, v int64) { a.Version = v },
}

var slotCodec = codec[run.Slot]{
	name: "slot",
	item: func(s *run.Slot) (store.Item, error) {
		data, err := encode(s)
		if err != nil {
			return store.Item{}, err
		}
		it := store.Item{PK: runPK(s.RunID), SK: slotSK(s.ID), Data: data}
		switch {
		case s.Status.Active():
			it.GSI1PK, it.GSI1SK = runPK(s.RunID)+"#ACTIVE", s.ID
		case s.Status == run.SlotQueued:
			// Slots put off by a full concurrency gate sort first, so the
			// ingester can wake one with a single-item query.
			rank := "1#"
			if s.Deferrals > 0 {
				rank = "0#"
			}
			it.GSI2PK, it.GSI2SK = runPK(s.RunID)+"#QUEUED", rank+s.ID
		}
		return it, nil
	},
	setVersion: func(s *run.Slot, v int64) { s.Version = v },
}

var resultCodec = codec[run.Result]{
	name: "attempt result",
	item: func(r *run.Result) (store.Item, error) {
		data, err := encode(r)
		if err != nil {
			return store.Item{}, err
		}
		return store.Item{PK: runPK(r.RunID), SK: resultSK(r.SlotID, r.Generation), Data: data}, nil
	},
}

// LogLine is one run log line: a lifecycle event of the run.
type LogLine struct {
	RunID   string    `json:"run_id"`
	At      time.Time `json:"at"`
	Level   string    `json:"level"` // info, warn or error
	Step    string    `json:"step"`  // submitted, planned, launched, result, retry, stop, finished, …
	Message string    `json:"message"`
	Slot    string    `json:"slot,omitempty"`
}

// Log levels of run log lines.
const (
	LevelInfo  = "info"
	LevelWarn  = "warn"
	LevelError = "error"
)

var logCodec = codec[LogLine]{
	name: "run log line",
	item: func(l *LogLine) (store.Item, error) {
		data, err := encode(l)
		if err != nil {
			return store.Item{}, err
		}
		sum := sha256.Sum256([]byte(l.Step + "\x00" + l.Slot + "\x00" + l.Message))
		sk := fmt.Sprintf("LOG#%019d#%s", l.At.UnixNano(), hex.EncodeToString(sum[:4]))
		return store.Item{PK: runPK(l.RunID), SK: sk, Data: data, ExpiresAt: l.At.Add(LogRetention).Unix()}, nil
	},
}

// Run returns the run with the id.
func (s *Runs) Run(ctx context.Context, id string) (run.Run, error) {
	return get(ctx, s.tbl, runCodec, runPK(id), runItemSK)
}

// RunStatus returns a run's current status, reading its stored JSON only
// as far as the status (storedRun encodes it first); an item written with
// the status further on is read on.
func (s *Runs) RunStatus(ctx context.Context, id string) (run.Status, error) {
	it, err := s.tbl.Get(ctx, runPK(id), runItemSK)
	if err != nil {
		return "", fmt.Errorf("get run %s: %w", id, err)
	}
	st, err := statusOf(it.Data)
	if err != nil {
		return "", fmt.Errorf("decode run %s status: %w", id, err)
	}
	return st, nil
}

// statusOf walks the top-level keys of an encoded run until "status".
func statusOf(data []byte) (run.Status, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", fmt.Errorf("not a JSON object (%v)", err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", err
		}
		if key, _ := tok.(string); key == "status" {
			var st run.Status
			if err := dec.Decode(&st); err != nil {
				return "", err
			}
			return st, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", err
		}
	}
	return "", errors.New("no status")
}

// UpdateRun applies fn to the stored run and writes it back (see package doc).
func (s *Runs) UpdateRun(ctx context.Context, id string, fn func(*run.Run) error) (run.Run, error) {
	return update(ctx, s.tbl, runCodec, runPK(id), runItemSK, fn)
}

// RunsByWorkspace returns one page of the workspace's runs, newest first.
func (s *Runs) RunsByWorkspace(ctx context.Context, ws, cursor string, limit int) ([]run.Run, string, error) {
	return queryPage(ctx, s.tbl, runCodec, store.Query{Index: store.GSI1, PK: "WS#" + ws + "#RUNS", Desc: true, Limit: limit, Cursor: cursor})
}

// RunsByBenchmark returns every run of the workspace's benchmark, oldest first.
func (s *Runs) RunsByBenchmark(ctx context.Context, ws, key string) ([]run.Run, error) {
	return queryAll(ctx, s.tbl, runCodec, store.Query{Index: store.GSI2, PK: benchPK(ws, key) + "#RUNS"})
}

// ActiveRuns returns the ids of runs that are not terminal (or whose marker
// was not yet removed after they ended).
func (s *Runs) ActiveRuns(ctx context.Context) ([]string, error) {
	var ids []string
	q := store.Query{PK: activeRunsPK}
	for {
		page, err := s.tbl.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("query active runs: %w", err)
		}
		for _, it := range page.Items {
			ids = append(ids, strings.TrimPrefix(it.SK, "RUN#"))
		}
		if page.Cursor == "" {
			return ids, nil
		}
		q.Cursor = page.Cursor
	}
}

// ClearActiveRun removes a terminal run's active marker.
func (s *Runs) ClearActiveRun(ctx context.Context, id string) error {
	if err := s.tbl.Delete(ctx, activeRunsPK, "RUN#"+id, store.Cond{}); err != nil {
		return fmt.Errorf("clear active run %s: %w", id, err)
	}
	return nil
}

// Agents returns the run's agents in index order.
func (s *Runs) Agents(ctx context.Context, runID string) ([]run.Agent, error) {
	return queryAll(ctx, s.tbl, agentCodec, store.Query{PK: runPK(runID), Prefix: "AGENT#"})
}

// Agent returns one run agent.
func (s *Runs) Agent(ctx context.Context, runID string, idx int) (run.Agent, error) {
	return get(ctx, s.tbl, agentCodec, runPK(runID), agentSK(idx))
}

// UpdateAgent applies fn to the stored run agent and writes it back.
func (s *Runs) UpdateAgent(ctx context.Context, runID string, idx int, fn func(*run.Agent) error) (run.Agent, error) {
	return update(ctx, s.tbl, agentCodec, runPK(runID), agentSK(idx), fn)
}

// Slot returns one slot.
func (s *Runs) Slot(ctx context.Context, runID, slotID string) (run.Slot, error) {
	return get(ctx, s.tbl, slotCodec, runPK(runID), slotSK(slotID))
}

// UpdateSlot applies fn to the stored slot and writes it back.
func (s *Runs) UpdateSlot(ctx context.Context, runID, slotID string, fn func(*run.Slot) error) (run.Slot, error) {
	return update(ctx, s.tbl, slotCodec, runPK(runID), slotSK(slotID), fn)
}

// CreateSlots writes the slots that do not exist yet (idempotent fan-out) and
// returns how many it created.
func (s *Runs) CreateSlots(ctx context.Context, slots []run.Slot) (int, error) {
	items := make([]store.Item, len(slots))
	for i := range slots {
		it, err := slotCodec.item(&slots[i])
		if err != nil {
			return 0, err
		}
		items[i] = it
	}
	n, err := s.tbl.Create(ctx, items)
	if err != nil {
		return n, fmt.Errorf("create %d slots: %w", len(slots), err)
	}
	return n, nil
}

// SlotFilter selects which slots of a run a listing returns.
type SlotFilter int

// Slot filters.
const (
	AllSlots    SlotFilter = iota // every slot, by id
	QueuedSlots                   // slots waiting for dispatch (gsi2), put-off ones first
	ActiveSlots                   // slots launching or running (gsi1)
)

// Slots returns one page of the run's slots selected by filter.
func (s *Runs) Slots(ctx context.Context, runID string, filter SlotFilter, cursor string, limit int) ([]run.Slot, string, error) {
	q := store.Query{PK: runPK(runID), Prefix: "SLOT#", Limit: limit, Cursor: cursor}
	switch filter {
	case QueuedSlots:
		q = store.Query{Index: store.GSI2, PK: runPK(runID) + "#QUEUED", Limit: limit, Cursor: cursor}
	case ActiveSlots:
		q = store.Query{Index: store.GSI1, PK: runPK(runID) + "#ACTIVE", Limit: limit, Cursor: cursor}
	}
	return queryPage(ctx, s.tbl, slotCodec, q)
}

// Result returns the attempt result of one generation of a slot.
func (s *Runs) Result(ctx context.Context, runID, slotID string, gen int) (run.Result, error) {
	return get(ctx, s.tbl, resultCodec, runPK(runID), resultSK(slotID, gen))
}

// Results returns one page of the run's attempt results (every generation,
// retried ones included), ordered by slot id and generation.
func (s *Runs) Results(ctx context.Context, runID, cursor string, limit int) ([]run.Result, string, error) {
	return queryPage(ctx, s.tbl, resultCodec, store.Query{PK: runPK(runID), Prefix: resultPrefix, Limit: limit, Cursor: cursor})
}

// AllResults returns every attempt result of the run.
func (s *Runs) AllResults(ctx context.Context, runID string) ([]run.Result, error) {
	return queryAll(ctx, s.tbl, resultCodec, store.Query{PK: runPK(runID), Prefix: resultPrefix})
}

// RunTally returns the run's counters.
func (s *Runs) RunTally(ctx context.Context, runID string) (run.Tally, error) {
	return s.tally(ctx, runID, "TALLY")
}

// AgentTally returns one agent's counters.
func (s *Runs) AgentTally(ctx context.Context, runID string, idx int) (run.Tally, error) {
	return s.tally(ctx, runID, agentTallySK(idx))
}

func (s *Runs) tally(ctx context.Context, runID, sk string) (run.Tally, error) {
	it, err := s.tbl.Get(ctx, runPK(runID), sk)
	switch {
	case err == nil:
		return run.TallyFromCounters(it.Counters), nil
	case isNotFound(err):
		return run.Tally{}, nil
	}
	return run.Tally{}, fmt.Errorf("get tally %s of run %s: %w", sk, runID, err)
}

// RunGate returns how many sandboxes of the run hold a concurrency slot.
func (s *Runs) RunGate(ctx context.Context, runID string) (int64, error) {
	return s.counter(ctx, runPK(runID), "GATE")
}

// GlobalGate returns how many sandboxes hold a slot of the global cap.
func (s *Runs) GlobalGate(ctx context.Context) (int64, error) {
	return s.counter(ctx, platformPK, sandboxesSK)
}

func (s *Runs) counter(ctx context.Context, pk, sk string) (int64, error) {
	it, err := s.tbl.Get(ctx, pk, sk)
	switch {
	case err == nil:
		return it.Counters[gateCounter], nil
	case isNotFound(err):
		return 0, nil
	}
	return 0, fmt.Errorf("get counter %s|%s: %w", pk, sk, err)
}

// AppendLog writes one run log line.
func (s *Runs) AppendLog(ctx context.Context, l LogLine) error {
	_, err := put(ctx, s.tbl, logCodec, l, store.Cond{})
	return err
}

// Logs returns one page of the run's log lines, oldest first.
func (s *Runs) Logs(ctx context.Context, runID, cursor string, limit int) ([]LogLine, string, error) {
	return queryPage(ctx, s.tbl, logCodec, store.Query{PK: runPK(runID), Prefix: "LOG#", Limit: limit, Cursor: cursor})
}

// ChangeEvent is what a change-stream record means to the data model.
type ChangeEvent struct {
	// RunID is the run the changed item belongs to.
	RunID string
	// ResultInserted is set when an attempt result was created.
	ResultInserted bool
	// Run is the run's new image when the changed item is a run.
	Run *run.Run
	// OldStatus is the run's status before the change ("" for an insert).
	OldStatus run.Status
}

// The sort keys of the items DescribeChange reports on.
const (
	runItemSK    = "RUN"
	resultPrefix = "RESULT#"
)

// DescribedChanges names the items whose changes DescribeChange can report
// on, so that a stream consumer can be fed only those (the cloud filters the
// table's stream with it): items whose sort key is one of sortKeys or starts
// with one of prefixes. A change to any other item describes to ok == false.
func DescribedChanges() (sortKeys, prefixes []string) {
	return []string{runItemSK}, []string{resultPrefix}
}

// DescribeChange interprets a change record; ok is false for changes that
// concern neither a run nor an attempt result.
func DescribeChange(c store.Change) (ev ChangeEvent, ok bool, err error) {
	img := c.New
	if img == nil {
		img = c.Old
	}
	if img == nil || !strings.HasPrefix(img.PK, "RUN#") {
		return ev, false, nil
	}
	ev.RunID = strings.TrimPrefix(img.PK, "RUN#")
	switch {
	case img.SK == runItemSK && c.New != nil:
		r, err := decode(runCodec, *c.New)
		if err != nil {
			return ev, false, err
		}
		ev.Run = &r
		if c.Old != nil {
			old, err := decode(runCodec, *c.Old)
			if err != nil {
				return ev, false, err
			}
			ev.OldStatus = old.Status
		}
		return ev, true, nil
	case strings.HasPrefix(img.SK, resultPrefix) && c.Kind == store.Insert:
		ev.ResultInserted = true
		return ev, true, nil
	}
	return ev, false, nil
}
