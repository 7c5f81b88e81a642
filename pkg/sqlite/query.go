package sqlite

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Query page sizes.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

// indexColumns names the key columns of an index.
type indexColumns struct{ pk, sk string }

var indexes = map[store.Index]indexColumns{
	store.Primary: {"pk", "sk"},
	store.GSI1:    {"gsi1pk", "gsi1sk"},
	store.GSI2:    {"gsi2pk", "gsi2sk"},
}

// cursor is the decoded position after the last item of a page: the index
// and partition it was read from, the index sort key plus, on a GSI, the
// base key that breaks ties.
type cursor struct {
	Index     store.Index `json:"i,omitempty"`
	Partition string      `json:"q"`
	SK        string      `json:"s"`
	PK        string      `json:"p,omitempty"`
	BSK       string      `json:"b,omitempty"`
}

// Query returns one page of items in index sort-key order. On a GSI, items with
// equal index sort keys are ordered by pk then sk; items without both GSI key
// attributes are not in the index. Expired items are left out.
func (t *Table) Query(ctx context.Context, q store.Query) (store.Page, error) {
	sqlText, args, limit, err := buildQuery(q, t.db.now().Unix())
	if err != nil {
		return store.Page{}, err
	}
	rows, err := t.db.query(ctx, sqlText, args...)
	if err != nil {
		return store.Page{}, fmt.Errorf("query %s %q: %w", indexName(q.Index), q.PK, err)
	}
	defer rows.Close()
	var page store.Page
	for rows.Next() {
		item, err := scanItem(rows)
		if err != nil {
			return store.Page{}, fmt.Errorf("query %s %q: %w", indexName(q.Index), q.PK, err)
		}
		page.Items = append(page.Items, item)
	}
	if err := rows.Err(); err != nil {
		return store.Page{}, fmt.Errorf("query %s %q: %w", indexName(q.Index), q.PK, err)
	}
	if len(page.Items) > limit {
		page.Items = page.Items[:limit]
		page.Cursor = encodeCursor(q, page.Items[limit-1])
	}
	return page, nil
}

func buildQuery(q store.Query, nowUnix int64) (string, []any, int, error) {
	cols, ok := indexes[q.Index]
	if !ok {
		return "", nil, 0, fmt.Errorf("query: unknown index %q", q.Index)
	}
	if q.PK == "" {
		return "", nil, 0, fmt.Errorf("query %s: pk is empty", indexName(q.Index))
	}
	limit := q.Limit
	switch {
	case limit < 0:
		return "", nil, 0, fmt.Errorf("query %s %q: limit %d is negative", indexName(q.Index), q.PK, limit)
	case limit == 0:
		limit = defaultLimit
	case limit > maxLimit:
		limit = maxLimit
	}
	var c *cursor
	if q.Cursor != "" {
		decoded, err := decodeCursor(q)
		if err != nil {
			return "", nil, 0, fmt.Errorf("query %s %q: %w", indexName(q.Index), q.PK, err)
		}
		c = &decoded
	}
	lo, hi := sortKeyBounds(q, c)
	var where strings.Builder
	args := []any{q.PK, nowUnix}
	fmt.Fprintf(&where, "%s = ? AND %s IS NOT NULL AND (expires_at = 0 OR expires_at >= ?)", cols.pk, cols.sk)
	if lo.set {
		fmt.Fprintf(&where, " AND %s %s ?", cols.sk, map[bool]string{false: ">=", true: ">"}[lo.strict])
		args = append(args, lo.value)
	}
	if hi.set {
		fmt.Fprintf(&where, " AND %s %s ?", cols.sk, map[bool]string{false: "<=", true: "<"}[hi.strict])
		args = append(args, hi.value)
	}
	order, op := "ASC", ">"
	if q.Desc {
		order, op = "DESC", "<"
	}
	if c != nil && q.Index != store.Primary {
		// Items sharing the cursor's index sort key continue in base-key order.
		fmt.Fprintf(&where, " AND (%s, pk, sk) %s (?, ?, ?)", cols.sk, op)
		args = append(args, c.SK, c.PK, c.BSK)
	}
	orderBy := fmt.Sprintf("sk %s", order)
	if q.Index != store.Primary {
		orderBy = fmt.Sprintf("%s %s, pk %s, sk %s", cols.sk, order, order, order)
	}
	sqlText := fmt.Sprintf("SELECT %s FROM items WHERE %s ORDER BY %s LIMIT ?", itemColumns, where.String(), orderBy)
	args = append(args, limit+1)
	return sqlText, args, limit, nil
}

// bound is one end of a sort-key range.
type bound struct {
	value       string
	strict, set bool
}

// sortKeyBounds folds the prefix, From/To and the cursor into one lower and
// one upper bound, so the index range starts at the cursor however deep the
// page is.
func sortKeyBounds(q store.Query, c *cursor) (lo, hi bound) {
	if q.Prefix != "" {
		lo = bound{value: q.Prefix, set: true}
		if end, ok := prefixEnd(q.Prefix); ok {
			hi = bound{value: end, strict: true, set: true}
		}
	}
	if q.From != "" {
		lo = tighter(lo, bound{value: q.From, set: true}, 1)
	}
	if q.To != "" {
		hi = tighter(hi, bound{value: q.To, set: true}, -1)
	}
	if c != nil {
		// On the primary index the cursor's key itself is excluded; on a GSI,
		// items tied with it are filtered by base key instead.
		at := bound{value: c.SK, strict: q.Index == store.Primary, set: true}
		if q.Desc {
			hi = tighter(hi, at, -1)
		} else {
			lo = tighter(lo, at, 1)
		}
	}
	return lo, hi
}

// tighter returns the narrower of two bounds: the larger for a lower bound
// (dir 1), the smaller for an upper bound (dir -1); on a tie, the strict one.
func tighter(a, b bound, dir int) bound {
	switch {
	case !a.set:
		return b
	case a.value == b.value:
		a.strict = a.strict || b.strict
		return a
	case strings.Compare(b.value, a.value) == dir:
		return b
	}
	return a
}

// prefixEnd returns the smallest string greater than every string with the
// prefix, or false when there is none (the prefix is all 0xff bytes).
func prefixEnd(prefix string) (string, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

func encodeCursor(q store.Query, last store.Item) string {
	c := cursor{Index: q.Index, Partition: q.PK, SK: last.SK}
	switch q.Index {
	case store.GSI1:
		c = cursor{Index: q.Index, Partition: q.PK, SK: last.GSI1SK, PK: last.PK, BSK: last.SK}
	case store.GSI2:
		c = cursor{Index: q.Index, Partition: q.PK, SK: last.GSI2SK, PK: last.PK, BSK: last.SK}
	}
	b, _ := json.Marshal(c) // strings only: always encodes
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor decodes q's cursor and checks that it is one this query
// could have handed out: same index and partition, a position inside the
// query's sort-key range, and every key it needs. Anything else (a cursor
// of another query, or decodable garbage) is ErrInvalidCursor rather than
// a page from wherever it happens to point.
func decodeCursor(q store.Query) (cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(q.Cursor)
	if err != nil {
		return cursor{}, fmt.Errorf("%w: not from this table (%v)", store.ErrInvalidCursor, err)
	}
	var c cursor
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return cursor{}, fmt.Errorf("%w: not from this table (%v)", store.ErrInvalidCursor, err)
	}
	switch {
	case dec.More():
		return cursor{}, fmt.Errorf("%w: not from this table (data after the cursor)", store.ErrInvalidCursor)
	case c.Index != q.Index:
		return cursor{}, fmt.Errorf("%w: for index %s, not %s", store.ErrInvalidCursor, indexName(c.Index), indexName(q.Index))
	case c.Partition != q.PK:
		return cursor{}, fmt.Errorf("%w: from another partition", store.ErrInvalidCursor)
	case !q.InRange(c.SK):
		return cursor{}, fmt.Errorf("%w: outside the query's sort-key range", store.ErrInvalidCursor)
	case q.Index != store.Primary && (c.PK == "" || c.BSK == ""):
		return cursor{}, fmt.Errorf("%w: no base key", store.ErrInvalidCursor)
	case q.Index == store.Primary && (c.PK != "" || c.BSK != ""):
		return cursor{}, fmt.Errorf("%w: a base key on the primary index", store.ErrInvalidCursor)
	}
	return c, nil
}

func indexName(index store.Index) string {
	if index == store.Primary {
		return "primary"
	}
	return string(index)
}
