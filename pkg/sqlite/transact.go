package sqlite

import (
	"context"
	"fmt"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Transact applies every op or none, in one transaction. Like DynamoDB it
// refuses more than store.MaxTransactOps ops and two ops on the same item.
func (t *Table) Transact(ctx context.Context, ops []store.Op) error {
	if err := validateOps(ops); err != nil {
		return fmt.Errorf("transact: %w", err)
	}
	if len(ops) == 0 {
		return nil
	}
	return t.db.write(ctx, func(ctx context.Context, w *writeTx) error {
		for i, op := range ops {
			if err := w.apply(ctx, op); err != nil {
				return fmt.Errorf("transact op %d (%s %q/%q): %w", i, opName(op.Kind), op.Item.PK, op.Item.SK, err)
			}
		}
		return nil
	})
}

func (w *writeTx) apply(ctx context.Context, op store.Op) error {
	switch op.Kind {
	case store.OpPut:
		_, err := w.put(ctx, op.Item, op.Cond)
		return err
	case store.OpDelete:
		return w.delete(ctx, op.Item.PK, op.Item.SK, op.Cond)
	case store.OpAdd:
		_, err := w.add(ctx, op.Item.PK, op.Item.SK, op.Deltas, op.Guard)
		return err
	case store.OpCheck:
		old, err := w.current(ctx, op.Item.PK, op.Item.SK)
		if err != nil {
			return err
		}
		return checkCond(old, op.Cond)
	}
	return fmt.Errorf("unknown op kind %d", op.Kind)
}

func validateOps(ops []store.Op) error {
	if len(ops) > store.MaxTransactOps {
		return fmt.Errorf("%d ops: %w (at most %d)", len(ops), store.ErrTooManyOps, store.MaxTransactOps)
	}
	seen := make(map[[2]string]int, len(ops))
	for i, op := range ops {
		var err error
		switch op.Kind {
		case store.OpPut:
			err = validateItem(op.Item)
		case store.OpDelete, store.OpAdd, store.OpCheck:
			err = validateKey(op.Item.PK, op.Item.SK)
		default:
			err = fmt.Errorf("unknown op kind %d", op.Kind)
		}
		if err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
		key := [2]string{op.Item.PK, op.Item.SK}
		if j, dup := seen[key]; dup {
			return fmt.Errorf("ops %d and %d both address %q/%q", j, i, op.Item.PK, op.Item.SK)
		}
		seen[key] = i
	}
	return nil
}

func opName(kind store.OpKind) string {
	switch kind {
	case store.OpPut:
		return "put"
	case store.OpDelete:
		return "delete"
	case store.OpAdd:
		return "add"
	case store.OpCheck:
		return "check"
	}
	return fmt.Sprintf("op kind %d", kind)
}
