package sqlite

import (
	"database/sql"
	"fmt"
	"log/slog"
	"time"
)

// WAL checkpoints (copying committed pages from the write-ahead log into the
// database file and syncing both) run on their own connection and goroutine
// instead of inside whichever commit crosses SQLite's auto-checkpoint
// threshold: the single writer never stalls on them. The writer wakes the
// checkpointer every checkpointEvery commits, and it checkpoints at most once
// per checkpointGap; a PASSIVE checkpoint copies what no reader still needs
// and blocks neither readers nor the writer. Spacing checkpoints out also
// copies each page that many commits rewrote (counters, queue pages) once.
const (
	checkpointEvery = 256
	checkpointGap   = 100 * time.Millisecond
)

// checkpointer runs PASSIVE checkpoints when woken.
type checkpointer struct {
	conn *sql.DB
	path string
	wake chan struct{}
	done chan struct{}
}

func startCheckpointer(path, params string) (*checkpointer, error) {
	conn, err := sql.Open("sqlite", path+params)
	if err != nil {
		return nil, fmt.Errorf("open sqlite checkpointer %q: %w", path, err)
	}
	conn.SetMaxOpenConns(1)
	c := &checkpointer{conn: conn, path: path, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go c.loop()
	return c, nil
}

// poke asks for a checkpoint without waiting.
func (c *checkpointer) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *checkpointer) loop() {
	defer close(c.done)
	for range c.wake {
		if _, err := c.conn.Exec(`PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
			slog.Warn("checkpoint the write-ahead log", "db", c.path, "err", err)
		}
		time.Sleep(checkpointGap)
	}
}

// close stops the loop and closes its connection.
func (c *checkpointer) close() error {
	close(c.wake)
	<-c.done
	return c.conn.Close()
}

// committed counts a commit and wakes the checkpointer every
// checkpointEvery commits. Only writeLoop calls it.
func (db *DB) committed() {
	db.commits++
	if db.commits%checkpointEvery == 0 && db.ckpt != nil {
		db.ckpt.poke()
	}
}
