package dynamo

// LambdaStreamFilters renders the stream records a consumer reads — changes
// to items whose sort key is one of sortKeys or starts with one of
// prefixes — as the filter patterns of a Lambda event source mapping on the
// table's stream. Lambda invokes the function only for records that match
// some pattern, so a consumer that ignores most of the table's writes
// (logs, slots, counters) is not invoked, billed or retried for them.
//
// The patterns test the record's keys only: AWS documents that DynamoDB
// event source mappings filter on the record's "dynamodb" key alone, so
// the kind of change (insert, modify, remove) is left to the consumer.
func LambdaStreamFilters(sortKeys, prefixes []string) []map[string]any {
	values := make([]any, 0, len(sortKeys)+len(prefixes))
	for _, k := range sortKeys {
		values = append(values, k)
	}
	for _, p := range prefixes {
		values = append(values, map[string]any{"prefix": p})
	}
	if len(values) == 0 {
		return nil
	}
	return []map[string]any{{"dynamodb": map[string]any{"Keys": map[string]any{attrSK: map[string]any{"S": values}}}}}
}
