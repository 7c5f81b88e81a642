package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/queue/queuetest"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
	"github.com/gauntlet-bench/gauntlet/pkg/store/storetest"
)

// openTemp opens a fresh database in the test's temp dir, closed at cleanup.
func openTemp(t testing.TB) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "gauntlet.db"))
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	})
	return db
}

func TestTableContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Table { return openTemp(t).Table() })
}

func TestTableContractShared(t *testing.T) {
	db := openTemp(t)
	storetest.Run(t, func(*testing.T) store.Table { return db.Table() })
}

func TestStreamContract(t *testing.T) {
	storetest.RunStream(t, func(t *testing.T) (store.Table, store.Stream) {
		db := openTemp(t)
		return db.Table(), db.Stream()
	})
}

func TestCheckpointsContract(t *testing.T) {
	storetest.RunCheckpoints(t, func(t *testing.T) store.Checkpoints { return openTemp(t).Checkpoints() })
}

func TestQueueContract(t *testing.T) {
	db := openTemp(t)
	queuetest.Run(t, func(t *testing.T, maxReceives int) (queue.Queue, queue.Queue) {
		name := queueNameFor(t)
		opts := QueueOptions{}
		if maxReceives > 0 {
			opts = QueueOptions{MaxReceives: maxReceives, DeadLetter: name + "-dlq"}
		}
		q, err := db.Queue(name, opts)
		if err != nil {
			t.Fatal(err)
		}
		dlq, err := db.Queue(name+"-dlq", QueueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return q, dlq
	})
}

// queueNameFor derives a valid queue name from the test's name.
func queueNameFor(t *testing.T) string {
	name := []byte(t.Name())
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			name[i] = '_'
		}
	}
	return string(name[max(0, len(name)-60):])
}
