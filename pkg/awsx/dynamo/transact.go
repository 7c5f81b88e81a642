package dynamo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Transact applies ops with one TransactWriteItems call. Puts under Always or
// IfExists read the current version first and condition on it (so versions
// stay exact); when only those implicit conditions fail the transaction is
// retried, while a failed caller condition returns store.ErrConditionFailed.
// DynamoDB refuses two operations on one item in a transaction.
func (t *Table) Transact(ctx context.Context, ops []store.Op) error {
	if len(ops) == 0 {
		return nil
	}
	if len(ops) > store.MaxTransactOps {
		return fmt.Errorf("transact %d ops: %w", len(ops), store.ErrTooManyOps)
	}
	for attempt := range t.retry {
		if err := backoff(ctx, attempt); err != nil {
			return fmt.Errorf("transact %d ops: %w", len(ops), err)
		}
		items, implicit, err := t.transactItems(ctx, ops)
		if err != nil {
			return err
		}
		_, err = t.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return nil
		}
		var canceled *types.TransactionCanceledException
		if !errors.As(err, &canceled) {
			return fmt.Errorf("transact %d ops: %w", len(ops), err)
		}
		if callerConditionFailed(canceled.CancellationReasons, implicit) {
			return fmt.Errorf("transact %d ops: %w", len(ops), store.ErrConditionFailed)
		}
	}
	return fmt.Errorf("transact %d ops: too much contention after %d attempts: %w", len(ops), t.retry, store.ErrConditionFailed)
}

// backoff waits before a retry: nothing before the first attempt, then a
// jittered, doubling delay (5 ms … 320 ms), so writers contending for the
// same hot items (run tallies, gates) spread out instead of colliding again.
func backoff(ctx context.Context, attempt int) error {
	if attempt == 0 {
		return nil
	}
	limit := 5 * time.Millisecond << min(attempt-1, 6)
	d := limit/2 + time.Duration(rand.Int64N(int64(limit/2)+1))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// callerConditionFailed reports whether a cancellation was caused by a
// condition the caller asked for (as opposed to an implicit version check or
// a transient conflict, which are retried).
func callerConditionFailed(reasons []types.CancellationReason, implicit []bool) bool {
	for i, r := range reasons {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" && i < len(implicit) && !implicit[i] {
			return true
		}
	}
	return false
}

func (t *Table) transactItems(ctx context.Context, ops []store.Op) ([]types.TransactWriteItem, []bool, error) {
	now := t.now().Unix()
	items := make([]types.TransactWriteItem, len(ops))
	implicit := make([]bool, len(ops))
	for i, op := range ops {
		if err := checkKey(op.Item.PK, op.Item.SK); err != nil {
			return nil, nil, fmt.Errorf("transact op %d: %w", i, err)
		}
		switch op.Kind {
		case store.OpPut:
			put, isImplicit, err := t.transactPut(ctx, op, now)
			if err != nil {
				return nil, nil, fmt.Errorf("transact op %d: %w", i, err)
			}
			items[i].Put, implicit[i] = put, isImplicit
		case store.OpDelete:
			expr, names, values := condExpression(op.Cond, now)
			d := &types.Delete{TableName: &t.name, Key: keyOf(op.Item.PK, op.Item.SK), ConditionExpression: expr}
			if expr != nil {
				d.ExpressionAttributeNames, d.ExpressionAttributeValues = names, values
			}
			items[i].Delete = d
		case store.OpAdd:
			update, cond, names, values, err := addExpression(op.Deltas, op.Guard)
			if err != nil {
				return nil, nil, fmt.Errorf("transact op %d: %w", i, err)
			}
			items[i].Update = &types.Update{
				TableName: &t.name, Key: keyOf(op.Item.PK, op.Item.SK),
				UpdateExpression: &update, ConditionExpression: cond,
				ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			}
		case store.OpCheck:
			expr, names, values := condExpression(op.Cond, now)
			if expr == nil {
				return nil, nil, fmt.Errorf("transact op %d: a check needs a condition", i)
			}
			items[i].ConditionCheck = &types.ConditionCheck{
				TableName: &t.name, Key: keyOf(op.Item.PK, op.Item.SK),
				ConditionExpression: expr, ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			}
		default:
			return nil, nil, fmt.Errorf("transact op %d: unknown kind %d", i, op.Kind)
		}
	}
	return items, implicit, nil
}

// transactPut builds a conditional Put with an exact new version.
func (t *Table) transactPut(ctx context.Context, op store.Op, now int64) (*types.Put, bool, error) {
	cond, version, isImplicit := op.Cond, int64(1), false
	switch op.Cond.Kind {
	case store.IfNotExists:
	case store.IfVersion:
		version = op.Cond.Version + 1
	default:
		cur, err := t.Get(ctx, op.Item.PK, op.Item.SK)
		switch {
		case errors.Is(err, store.ErrNotFound) && op.Cond.Kind == store.IfExists:
			return nil, false, store.ErrConditionFailed
		case errors.Is(err, store.ErrNotFound):
			cond, isImplicit = store.Cond{Kind: store.IfNotExists}, true
		case err != nil:
			return nil, false, err
		default:
			cond, version, isImplicit = store.Cond{Kind: store.IfVersion, Version: cur.Version}, cur.Version+1, true
		}
	}
	expr, names, values := condExpression(cond, now)
	put := &types.Put{TableName: &t.name, Item: encodeItem(op.Item, version), ConditionExpression: expr}
	if expr != nil {
		put.ExpressionAttributeNames, put.ExpressionAttributeValues = names, values
	}
	return put, isImplicit, nil
}
