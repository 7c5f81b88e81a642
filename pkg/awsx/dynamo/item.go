package dynamo

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Attribute names of the single table. Counters are top-level number
// attributes named counterPrefix+name because DynamoDB's ADD action only
// works on top-level attributes.
const (
	attrPK        = "pk"
	attrSK        = "sk"
	attrGSI1PK    = "gsi1pk"
	attrGSI1SK    = "gsi1sk"
	attrGSI2PK    = "gsi2pk"
	attrGSI2SK    = "gsi2sk"
	attrData      = "data"
	attrVersion   = "version"
	attrExpiresAt = "expires_at"
	counterPrefix = "c_"
)

// encodeItem renders item as DynamoDB attributes with the given version.
// Empty index keys are omitted so the GSIs stay sparse.
func encodeItem(item store.Item, version int64) map[string]types.AttributeValue {
	av := map[string]types.AttributeValue{
		attrPK:      &types.AttributeValueMemberS{Value: item.PK},
		attrSK:      &types.AttributeValueMemberS{Value: item.SK},
		attrVersion: number(version),
	}
	putString(av, attrGSI1PK, item.GSI1PK)
	putString(av, attrGSI1SK, item.GSI1SK)
	putString(av, attrGSI2PK, item.GSI2PK)
	putString(av, attrGSI2SK, item.GSI2SK)
	if item.Data != nil {
		av[attrData] = &types.AttributeValueMemberS{Value: string(item.Data)}
	}
	if item.ExpiresAt != 0 {
		av[attrExpiresAt] = number(item.ExpiresAt)
	}
	for name, v := range item.Counters {
		av[counterPrefix+name] = number(v)
	}
	return av
}

func putString(av map[string]types.AttributeValue, name, value string) {
	if value != "" {
		av[name] = &types.AttributeValueMemberS{Value: value}
	}
}

func number(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// decodeItem is the inverse of encodeItem.
func decodeItem(av map[string]types.AttributeValue) (store.Item, error) {
	var item store.Item
	for name, v := range av {
		var err error
		switch name {
		case attrPK:
			item.PK, err = stringOf(name, v)
		case attrSK:
			item.SK, err = stringOf(name, v)
		case attrGSI1PK:
			item.GSI1PK, err = stringOf(name, v)
		case attrGSI1SK:
			item.GSI1SK, err = stringOf(name, v)
		case attrGSI2PK:
			item.GSI2PK, err = stringOf(name, v)
		case attrGSI2SK:
			item.GSI2SK, err = stringOf(name, v)
		case attrData:
			var s string
			s, err = stringOf(name, v)
			item.Data = []byte(s)
		case attrVersion:
			item.Version, err = numberOf(name, v)
		case attrExpiresAt:
			item.ExpiresAt, err = numberOf(name, v)
		default:
			if counter, ok := strings.CutPrefix(name, counterPrefix); ok {
				var n int64
				n, err = numberOf(name, v)
				if item.Counters == nil {
					item.Counters = map[string]int64{}
				}
				item.Counters[counter] = n
			}
		}
		if err != nil {
			return store.Item{}, err
		}
	}
	return item, nil
}

func stringOf(name string, v types.AttributeValue) (string, error) {
	s, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		return "", fmt.Errorf("decode attribute %s: want a string, got %T", name, v)
	}
	return s.Value, nil
}

func numberOf(name string, v types.AttributeValue) (int64, error) {
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("decode attribute %s: want a number, got %T", name, v)
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("decode attribute %s: %w", name, err)
	}
	return i, nil
}

func keyOf(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: pk},
		attrSK: &types.AttributeValueMemberS{Value: sk},
	}
}

// validCounter keeps counter names usable as attribute names.
func validCounter(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("counter name %q must be 1–64 characters", name)
	}
	for _, r := range name {
		if !(r == '_' || r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return fmt.Errorf("counter name %q may hold only letters, digits, '_', '-' and '.'", name)
		}
	}
	return nil
}

// addExpression builds `ADD version :one, #c0 :d0, …` with a guard condition.
// Deltas are sorted so the expression is deterministic.
func addExpression(deltas map[string]int64, guard *store.Guard) (update string, cond *string, names map[string]string, values map[string]types.AttributeValue, err error) {
	names = map[string]string{"#v": attrVersion}
	values = map[string]types.AttributeValue{":one": number(1)}
	counters := make([]string, 0, len(deltas))
	for name := range deltas {
		if err := validCounter(name); err != nil {
			return "", nil, nil, nil, err
		}
		counters = append(counters, name)
	}
	sort.Strings(counters)
	parts := []string{"#v :one"}
	for i, name := range counters {
		n, v := fmt.Sprintf("#c%d", i), fmt.Sprintf(":d%d", i)
		names[n] = counterPrefix + name
		values[v] = number(deltas[name])
		parts = append(parts, n+" "+v)
	}
	update = "ADD " + strings.Join(parts, ", ")
	if guard != nil {
		if err := validCounter(guard.Counter); err != nil {
			return "", nil, nil, nil, err
		}
		// After the add, Counter ≤ Max  ⇔  Counter ≤ Max − delta before it.
		limit := guard.Max - deltas[guard.Counter]
		names["#g"] = counterPrefix + guard.Counter
		values[":lim"] = number(limit)
		expr := "#g <= :lim"
		if limit >= 0 {
			expr = "attribute_not_exists(#g) OR #g <= :lim"
		}
		cond = &expr
	}
	return update, cond, names, values, nil
}

// condExpression renders a write condition. IfVersion checks the version
// attribute; Always yields no expression. An item past its expires_at counts
// as missing, as it does for reads, even before DynamoDB's TTL sweep removes it.
func condExpression(c store.Cond, now int64) (*string, map[string]string, map[string]types.AttributeValue) {
	var expr string
	names := map[string]string{}
	values := map[string]types.AttributeValue{}
	switch c.Kind {
	case store.IfNotExists:
		expr = "attribute_not_exists(#pk) OR (attribute_exists(#exp) AND #exp < :now)"
		names["#pk"], names["#exp"] = attrPK, attrExpiresAt
		values[":now"] = number(now)
	case store.IfExists:
		expr = "attribute_exists(#pk) AND (attribute_not_exists(#exp) OR #exp >= :now)"
		names["#pk"], names["#exp"] = attrPK, attrExpiresAt
		values[":now"] = number(now)
	case store.IfVersion:
		expr = "#v = :ver AND (attribute_not_exists(#exp) OR #exp >= :now)"
		names["#v"], names["#exp"] = attrVersion, attrExpiresAt
		values[":ver"], values[":now"] = number(c.Version), number(now)
	default:
		return nil, nil, nil
	}
	return &expr, names, values
}
