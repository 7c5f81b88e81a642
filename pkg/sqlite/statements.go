package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// itemColumns lists the items columns in the order scanItem reads them.
const itemColumns = `pk, sk, gsi1pk, gsi1sk, gsi2pk, gsi2sk, data, counters, version, expires_at`

// statements are the writer connection's prepared statements.
type statements struct {
	begin, commit, rollback        *sql.Stmt
	savepoint, rollbackTo, release *sql.Stmt

	getItem, upsertItem, insertItem, deleteItem, expiredItems *sql.Stmt
	saveCheckpoint, pruneChanges                              *sql.Stmt

	insertMessage, visibleMessages, deliverMessage, deadLetterMessage *sql.Stmt
	deleteMessage, changeVisibility, releaseInFlight, postponeMessage *sql.Stmt

	// bulk holds the multi-row INSERTs by kind and row count (bulk.go).
	bulk map[[2]int]*sql.Stmt

	all []*sql.Stmt
}

func prepare(ctx context.Context, conn *sql.Conn) (*statements, error) {
	s := &statements{bulk: map[[2]int]*sql.Stmt{}}
	for _, p := range []struct {
		dst   **sql.Stmt
		query string
	}{
		{&s.begin, `BEGIN IMMEDIATE`},
		{&s.commit, `COMMIT`},
		{&s.rollback, `ROLLBACK`},
		{&s.savepoint, `SAVEPOINT write`},
		{&s.rollbackTo, `ROLLBACK TO write`},
		{&s.release, `RELEASE write`},
		{&s.getItem, `SELECT ` + itemColumns + ` FROM items WHERE pk = ? AND sk = ?`},
		{&s.upsertItem, `INSERT INTO items (` + itemColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (pk, sk) DO UPDATE SET gsi1pk = excluded.gsi1pk, gsi1sk = excluded.gsi1sk,
			gsi2pk = excluded.gsi2pk, gsi2sk = excluded.gsi2sk, data = excluded.data,
			counters = excluded.counters, version = excluded.version, expires_at = excluded.expires_at`},
		{&s.insertItem, `INSERT INTO items (` + itemColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (pk, sk) DO NOTHING`},
		{&s.deleteItem, `DELETE FROM items WHERE pk = ? AND sk = ?`},
		{&s.expiredItems, `SELECT ` + itemColumns + ` FROM items WHERE expires_at > 0 AND expires_at < ? LIMIT ?`},
		{&s.saveCheckpoint, `INSERT INTO checkpoints (consumer, checkpoint) VALUES (?, ?)
			ON CONFLICT (consumer) DO UPDATE SET checkpoint = excluded.checkpoint`},
		// The newest change always stays, so sequence numbers never restart.
		{&s.pruneChanges, `DELETE FROM changes WHERE seq <= ? AND seq < (SELECT max(seq) FROM changes)`},
		{&s.insertMessage, `INSERT INTO messages (id, queue, body, visible_at, sent_at) VALUES (?, ?, ?, ?, ?)`},
		{&s.visibleMessages, `SELECT seq, id, body, receive_count, sent_at FROM messages
			WHERE queue = ? AND visible_at <= ? ORDER BY visible_at, seq LIMIT ?`},
		{&s.deliverMessage, `UPDATE messages SET receive_count = receive_count + 1, visible_at = ?, receipt = ? WHERE seq = ?`},
		{&s.deadLetterMessage, `UPDATE messages SET queue = ?, receive_count = 0, visible_at = ?, receipt = NULL WHERE seq = ?`},
		{&s.deleteMessage, `DELETE FROM messages WHERE seq = ? AND receipt = ?`},
		{&s.changeVisibility, `UPDATE messages SET visible_at = ? WHERE seq = ? AND receipt = ?`},
		{&s.postponeMessage, `UPDATE messages SET visible_at = ?, receipt = NULL, receive_count = max(receive_count - 1, 0) WHERE seq = ? AND receipt = ?`},
		{&s.releaseInFlight, `UPDATE messages SET visible_at = ?, receipt = NULL WHERE queue = ? AND receipt IS NOT NULL AND visible_at > ?`},
	} {
		stmt, err := conn.PrepareContext(ctx, p.query)
		if err != nil {
			_ = s.close()
			return nil, fmt.Errorf("prepare %q: %w", p.query, err)
		}
		*p.dst = stmt
		s.all = append(s.all, stmt)
	}
	return s, nil
}

func (s *statements) close() error {
	var errs []error
	for _, stmt := range s.all {
		errs = append(errs, stmt.Close())
	}
	return errors.Join(errs...)
}
