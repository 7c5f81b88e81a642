// Package dynamo is the DynamoDB adapter of the table port.
//
// It is the DynamoDB adapter of the table port (store.Table) and
// its change stream (DynamoDB Streams, NEW_AND_OLD_IMAGES). It serves the same
// single-table data model as the SQLite adapter and passes the same contract
// suite, against AWS's DynamoDB Local in tests.
package dynamo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// API is the part of the DynamoDB client the table uses.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// Table implements store.Table on one DynamoDB table.
type Table struct {
	api   API
	name  string
	now   func() time.Time
	retry int
}

var _ store.Table = (*Table)(nil)

// New returns the adapter for the table named name.
func New(api API, name string) *Table {
	return &Table{api: api, name: name, now: time.Now, retry: 16}
}

const (
	defaultPageSize = 100
	maxPageSize     = 1000
	createWorkers   = 16
)

// Get returns the item, or store.ErrNotFound (also for an expired item).
func (t *Table) Get(ctx context.Context, pk, sk string) (store.Item, error) {
	out, err := t.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &t.name, Key: keyOf(pk, sk), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return store.Item{}, fmt.Errorf("get %s/%s: %w", pk, sk, err)
	}
	if out.Item == nil {
		return store.Item{}, fmt.Errorf("get %s/%s: %w", pk, sk, store.ErrNotFound)
	}
	item, err := decodeItem(out.Item)
	if err != nil {
		return store.Item{}, fmt.Errorf("get %s/%s: %w", pk, sk, err)
	}
	if t.expired(item) {
		return store.Item{}, fmt.Errorf("get %s/%s: %w", pk, sk, store.ErrNotFound)
	}
	return item, nil
}

func (t *Table) expired(item store.Item) bool {
	return item.ExpiresAt != 0 && item.ExpiresAt < t.now().Unix()
}

// Put writes the whole item under cond. For Always and IfExists the current
// version is read first and the write conditioned on it, so the version
// counts every write exactly.
func (t *Table) Put(ctx context.Context, item store.Item, cond store.Cond) (store.Item, error) {
	if err := checkKey(item.PK, item.SK); err != nil {
		return store.Item{}, err
	}
	switch cond.Kind {
	case store.IfNotExists:
		return t.putVersion(ctx, item, cond, 1)
	case store.IfVersion:
		return t.putVersion(ctx, item, cond, cond.Version+1)
	}
	for attempt := range t.retry {
		if err := backoff(ctx, attempt); err != nil {
			return store.Item{}, fmt.Errorf("put %s/%s: %w", item.PK, item.SK, err)
		}
		cur, err := t.Get(ctx, item.PK, item.SK)
		switch {
		case errors.Is(err, store.ErrNotFound) && cond.Kind == store.IfExists:
			return store.Item{}, fmt.Errorf("put %s/%s: %w", item.PK, item.SK, store.ErrConditionFailed)
		case errors.Is(err, store.ErrNotFound):
			stored, err := t.putVersion(ctx, item, store.Cond{Kind: store.IfNotExists}, 1)
			if errors.Is(err, store.ErrConditionFailed) {
				continue
			}
			return stored, err
		case err != nil:
			return store.Item{}, err
		}
		stored, err := t.putVersion(ctx, item, store.Cond{Kind: store.IfVersion, Version: cur.Version}, cur.Version+1)
		if errors.Is(err, store.ErrConditionFailed) {
			continue
		}
		return stored, err
	}
	return store.Item{}, fmt.Errorf("put %s/%s: too much contention after %d attempts: %w", item.PK, item.SK, t.retry, store.ErrConditionFailed)
}

func (t *Table) putVersion(ctx context.Context, item store.Item, cond store.Cond, version int64) (store.Item, error) {
	expr, names, values := condExpression(cond, t.now().Unix())
	in := &dynamodb.PutItemInput{TableName: &t.name, Item: encodeItem(item, version), ConditionExpression: expr}
	if expr != nil {
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = names, values
	}
	if _, err := t.api.PutItem(ctx, in); err != nil {
		return store.Item{}, fmt.Errorf("put %s/%s: %w", item.PK, item.SK, mapErr(err))
	}
	item.Version = version
	return item, nil
}

// Create puts each item that does not exist yet, several at a time, and
// reports how many it created. BatchWriteItem cannot carry conditions, so
// each item is a conditional PutItem.
func (t *Table) Create(ctx context.Context, items []store.Item) (int, error) {
	for _, item := range items {
		if err := checkKey(item.PK, item.SK); err != nil {
			return 0, err
		}
	}
	var (
		mu       sync.Mutex
		created  int
		firstErr error
		wg       sync.WaitGroup
		next     = make(chan store.Item)
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range min(createWorkers, len(items)) {
		wg.Go(func() {
			for item := range next {
				_, err := t.putVersion(ctx, item, store.Cond{Kind: store.IfNotExists}, 1)
				mu.Lock()
				switch {
				case err == nil:
					created++
				case errors.Is(err, store.ErrConditionFailed):
				case firstErr == nil:
					firstErr = err
					cancel()
				}
				mu.Unlock()
			}
		})
	}
feed:
	for _, item := range items {
		select {
		case next <- item:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return created, fmt.Errorf("create %d items: %w", len(items), firstErr)
	}
	if err := ctx.Err(); err != nil && created < len(items) {
		return created, fmt.Errorf("create %d items: %w", len(items), err)
	}
	return created, nil
}

// Delete removes the item under cond.
func (t *Table) Delete(ctx context.Context, pk, sk string, cond store.Cond) error {
	expr, names, values := condExpression(cond, t.now().Unix())
	in := &dynamodb.DeleteItemInput{TableName: &t.name, Key: keyOf(pk, sk), ConditionExpression: expr}
	if expr != nil {
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = names, values
	}
	if _, err := t.api.DeleteItem(ctx, in); err != nil {
		return fmt.Errorf("delete %s/%s: %w", pk, sk, mapErr(err))
	}
	return nil
}

// Add atomically adds deltas to the item's counters with one UpdateItem.
func (t *Table) Add(ctx context.Context, pk, sk string, deltas map[string]int64, guard *store.Guard) (store.Item, error) {
	if err := checkKey(pk, sk); err != nil {
		return store.Item{}, err
	}
	update, cond, names, values, err := addExpression(deltas, guard)
	if err != nil {
		return store.Item{}, fmt.Errorf("add %s/%s: %w", pk, sk, err)
	}
	out, err := t.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &t.name, Key: keyOf(pk, sk),
		UpdateExpression: &update, ConditionExpression: cond,
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValues: types.ReturnValueAllNew,
	})
	if err != nil {
		return store.Item{}, fmt.Errorf("add %s/%s: %w", pk, sk, mapErr(err))
	}
	item, err := decodeItem(out.Attributes)
	if err != nil {
		return store.Item{}, fmt.Errorf("add %s/%s: %w", pk, sk, err)
	}
	return item, nil
}

// Query returns one page. Expired items are filtered out, so a page may hold
// fewer than Limit items while Cursor is still set.
func (t *Table) Query(ctx context.Context, q store.Query) (store.Page, error) {
	pkName, skName, index, err := indexAttrs(q.Index)
	if err != nil {
		return store.Page{}, err
	}
	if q.PK == "" {
		return store.Page{}, errors.New("query: partition key is empty")
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultPageSize
	}
	limit = min(limit, maxPageSize)
	names := map[string]string{"#pk": pkName, "#exp": attrExpiresAt}
	values := map[string]types.AttributeValue{
		":pk":  &types.AttributeValueMemberS{Value: q.PK},
		":now": number(t.now().Unix()),
	}
	keyCond := "#pk = :pk"
	lo, hi := q.From, q.To
	if q.Prefix != "" {
		if lo < q.Prefix {
			lo = q.Prefix
		}
		// The greatest valid code point bounds every key that starts with Prefix
		// (up to keys holding U+10FFFF itself, which the Go filter below settles).
		if end := q.Prefix + "\U0010FFFF"; hi == "" || hi > end {
			hi = end
		}
	}
	switch {
	case lo != "" && hi != "":
		keyCond += " AND #sk BETWEEN :lo AND :hi"
		values[":lo"], values[":hi"] = &types.AttributeValueMemberS{Value: lo}, &types.AttributeValueMemberS{Value: hi}
	case lo != "":
		keyCond += " AND #sk >= :lo"
		values[":lo"] = &types.AttributeValueMemberS{Value: lo}
	case hi != "":
		keyCond += " AND #sk <= :hi"
		values[":hi"] = &types.AttributeValueMemberS{Value: hi}
	}
	if lo != "" || hi != "" {
		names["#sk"] = skName
	}
	if lo != "" && hi != "" && lo > hi {
		return store.Page{}, nil
	}
	filter := "attribute_not_exists(#exp) OR #exp >= :now"
	in := &dynamodb.QueryInput{
		TableName: &t.name, IndexName: index,
		KeyConditionExpression: &keyCond, FilterExpression: &filter,
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ScanIndexForward: aws.Bool(!q.Desc), Limit: aws.Int32(int32(limit)),
		ConsistentRead: aws.Bool(index == nil),
	}
	if q.Cursor != "" {
		start, err := decodeCursor(q)
		if err != nil {
			return store.Page{}, err
		}
		in.ExclusiveStartKey = start
	}
	out, err := t.api.Query(ctx, in)
	if err != nil {
		return store.Page{}, fmt.Errorf("query %s %q: %w", q.Index, q.PK, err)
	}
	page := store.Page{Items: make([]store.Item, 0, len(out.Items))}
	for _, av := range out.Items {
		item, err := decodeItem(av)
		if err != nil {
			return store.Page{}, fmt.Errorf("query %s %q: %w", q.Index, q.PK, err)
		}
		if q.Prefix != "" && !strings.HasPrefix(sortKey(item, q.Index), q.Prefix) {
			continue
		}
		page.Items = append(page.Items, item)
	}
	if len(out.LastEvaluatedKey) > 0 {
		page.Cursor, err = encodeCursor(out.LastEvaluatedKey)
		if err != nil {
			return store.Page{}, err
		}
	}
	return page, nil
}

func sortKey(item store.Item, index store.Index) string {
	switch index {
	case store.GSI1:
		return item.GSI1SK
	case store.GSI2:
		return item.GSI2SK
	}
	return item.SK
}

func indexAttrs(index store.Index) (pk, sk string, name *string, err error) {
	switch index {
	case store.Primary:
		return attrPK, attrSK, nil, nil
	case store.GSI1:
		return attrGSI1PK, attrGSI1SK, aws.String(string(store.GSI1)), nil
	case store.GSI2:
		return attrGSI2PK, attrGSI2SK, aws.String(string(store.GSI2)), nil
	}
	return "", "", nil, fmt.Errorf("query: unknown index %q (want \"\", %q or %q)", index, store.GSI1, store.GSI2)
}

// A cursor is the LastEvaluatedKey's string attributes as base64 JSON; every
// key attribute of the table and its indexes is a string.
func encodeCursor(key map[string]types.AttributeValue) (string, error) {
	plain := make(map[string]string, len(key))
	for name, v := range key {
		s, err := stringOf(name, v)
		if err != nil {
			return "", fmt.Errorf("encode cursor: %w", err)
		}
		plain[name] = s
	}
	b, err := json.Marshal(plain)
	if err != nil {
		return "", fmt.Errorf("encode cursor: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// decodeCursor decodes q's cursor and checks that it is a key this query
// could have stopped at: exactly the key attributes of the query's index,
// the query's partition, a sort key inside the query's range. Anything else
// (a cursor of another query, or decodable garbage) is ErrInvalidCursor
// here, rather than a page from wherever it points or a ValidationException
// from DynamoDB.
func decodeCursor(q store.Query) (map[string]types.AttributeValue, error) {
	b, err := base64.RawURLEncoding.DecodeString(q.Cursor)
	if err != nil {
		return nil, fmt.Errorf("query: %w: not one this table returned (%v)", store.ErrInvalidCursor, err)
	}
	var plain map[string]string
	if err := json.Unmarshal(b, &plain); err != nil || len(plain) == 0 {
		return nil, fmt.Errorf("query: %w: not one this table returned", store.ErrInvalidCursor)
	}
	pkName, skName, _, err := indexAttrs(q.Index)
	if err != nil {
		return nil, err
	}
	want := []string{attrPK, attrSK}
	if q.Index != store.Primary {
		want = append(want, pkName, skName)
	}
	for _, name := range want {
		if plain[name] == "" {
			return nil, fmt.Errorf("query: %w: not one this table returned (no %s)", store.ErrInvalidCursor, name)
		}
	}
	switch {
	case len(plain) != len(want):
		return nil, fmt.Errorf("query: %w: not one this table returned (other attributes)", store.ErrInvalidCursor)
	case plain[pkName] != q.PK:
		return nil, fmt.Errorf("query: %w: from another partition", store.ErrInvalidCursor)
	case !q.InRange(plain[skName]):
		return nil, fmt.Errorf("query: %w: outside the query's sort-key range", store.ErrInvalidCursor)
	}
	key := make(map[string]types.AttributeValue, len(plain))
	for name, s := range plain {
		key[name] = &types.AttributeValueMemberS{Value: s}
	}
	return key, nil
}

func checkKey(pk, sk string) error {
	if pk == "" || sk == "" {
		return fmt.Errorf("item key %q/%q: partition and sort key must both be non-empty", pk, sk)
	}
	return nil
}

// mapErr turns DynamoDB's conditional failures into store.ErrConditionFailed.
func mapErr(err error) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("%w: %s", store.ErrConditionFailed, aws.ToString(ccf.Message))
	}
	return err
}
