package sqlite

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// TestBackgroundCheckpoint: with the writer's auto-checkpoint off, the
// checkpointer still copies committed pages into the database file while
// the database is open, and the data reads back after a reopen.
func TestBackgroundCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data := json.RawMessage(`{"pad":"` + strings.Repeat("x", 2000) + `"}`)
	for i := range 2 * checkpointEvery {
		if _, err := db.Table().Put(t.Context(), store.Item{PK: "p", SK: fmt.Sprintf("%04d", i), Data: data}, store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > before.Size()+int64(checkpointEvery)*2000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("database file is %d bytes after %d commits (%d before); the write-ahead log was not checkpointed", info.Size(), 2*checkpointEvery, before.Size())
		}
		<-tick.C
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, err := db.Table().Get(t.Context(), "p", fmt.Sprintf("%04d", 2*checkpointEvery-1)); err != nil || string(got.Data) != string(data) {
		t.Errorf("Get after reopen = %d bytes, %v; want the last item", len(got.Data), err)
	}
}
