package dynamo

// LambdaStreamFilters renders the stream records a consumer reads — the
// insertion or modification of an item whose sort key is one of sortKeys
// (not its removal), and the insertion of
// an item whose sort key starts with one of insertPrefixes — as the filter
// patterns of a Lambda event source mapping on the table's stream. Lambda
// invokes the function only for records that match some pattern, so a
// consumer that ignores most of the table's writes (logs, slots, counters)
// is not invoked, billed or retried for them.
func LambdaStreamFilters(sortKeys, insertPrefixes []string) []map[string]any {
	var filters []map[string]any
	if len(sortKeys) > 0 {
		values := make([]any, len(sortKeys))
		for i, k := range sortKeys {
			values[i] = k
		}
		filters = append(filters, map[string]any{"eventName": []any{"INSERT", "MODIFY"}, "dynamodb": sortKeyPattern(values)})
	}
	if len(insertPrefixes) > 0 {
		values := make([]any, len(insertPrefixes))
		for i, p := range insertPrefixes {
			values[i] = map[string]any{"prefix": p}
		}
		filters = append(filters, map[string]any{"eventName": []any{"INSERT"}, "dynamodb": sortKeyPattern(values)})
	}
	return filters
}

func sortKeyPattern(values []any) map[string]any {
	return map[string]any{"Keys": map[string]any{attrSK: map[string]any{"S": values}}}
}
