package cloudtest

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
)

type labelKey struct{}

// WithLabel attributes the AWS calls made under ctx to label (a function
// name, "esm" for the event-source poller, …) in a Counter.
func WithLabel(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, labelKey{}, label)
}

// Usage is what one label's calls cost in billable units.
type Usage struct {
	// Calls counts calls by "Service.Operation".
	Calls map[string]int
	// EmptyReceives counts ReceiveMessage calls that returned nothing.
	EmptyReceives int
	// RRU and WRU are DynamoDB read and write request units, from the
	// ConsumedCapacity DynamoDB returned (ReturnConsumedCapacity TOTAL);
	// FailedWrites counts conditional writes that failed (AWS bills one
	// WRU each for those, which no ConsumedCapacity reports).
	RRU, WRU     float64
	FailedWrites int
	// TxWRU is the part of WRU that TransactWriteItems reported. DynamoDB
	// bills transactional writes at twice the units; DynamoDB Local reports
	// them at the plain rate, so a cost model adds TxWRU once more.
	TxWRU float64
}

// Counter counts the AWS requests of SDK clients that carry its API
// option, by label, asking DynamoDB for the capacity each request used.
type Counter struct {
	mu    sync.Mutex
	usage map[string]*Usage
}

// NewCounter returns an empty counter.
func NewCounter() *Counter { return &Counter{usage: map[string]*Usage{}} }

// Option is the middleware to add to aws.Config.APIOptions (or a client's
// options); def labels calls whose context carries no label. Calls are
// counted where responses are deserialized, so each HTTP attempt counts
// (as AWS bills them) and presigning, which sends nothing, does not.
func (c *Counter) Option(def string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("gauntletConsumedCapacity",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if awsmiddleware.GetServiceID(ctx) == "DynamoDB" {
					setField(in.Parameters, "ReturnConsumedCapacity", reflect.ValueOf(types.ReturnConsumedCapacityTotal))
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
		if err != nil {
			return err
		}
		return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("gauntletCount",
			func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleDeserialize(ctx, in)
				label, _ := ctx.Value(labelKey{}).(string)
				if label == "" {
					label = def
				}
				c.record(label, awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx), out.Result, err)
				return out, md, err
			}), middleware.Before)
	}
}

func (c *Counter) record(label, service, op string, result any, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.usage[label]
	if u == nil {
		u = &Usage{Calls: map[string]int{}}
		c.usage[label] = u
	}
	u.Calls[service+"."+op]++
	if r, ok := result.(*sqs.ReceiveMessageOutput); ok && err == nil && len(r.Messages) == 0 {
		u.EmptyReceives++
	}
	if service != "DynamoDB" {
		return
	}
	if err != nil {
		if strings.Contains(err.Error(), "ConditionalCheckFailed") || strings.Contains(err.Error(), "TransactionCanceled") {
			u.FailedWrites++
		}
		return
	}
	read := op == "GetItem" || op == "Query" || op == "Scan" || op == "BatchGetItem" || op == "TransactGetItems"
	for _, cc := range consumed(result) {
		units := deref(cc.CapacityUnits)
		switch {
		case read:
			u.RRU += units
		case op == "TransactWriteItems":
			u.WRU += units
			u.TxWRU += units
		default:
			u.WRU += units
		}
	}
}

// Usage returns a copy of one label's usage.
func (c *Counter) Usage(label string) Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.usage[label]
	if u == nil {
		return Usage{Calls: map[string]int{}}
	}
	cp := *u
	cp.Calls = map[string]int{}
	for k, v := range u.Calls {
		cp.Calls[k] = v
	}
	return cp
}

// Reset forgets everything counted so far.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.usage = map[string]*Usage{}
}

// String renders every label's counts, sorted.
func (c *Counter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var labels []string
	for l := range c.usage {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	var b strings.Builder
	for _, l := range labels {
		u := c.usage[l]
		var ops []string
		for op, n := range u.Calls {
			ops = append(ops, fmt.Sprintf("%s=%d", op, n))
		}
		sort.Strings(ops)
		fmt.Fprintf(&b, "%s: %s; empty receives %d; RRU %.1f WRU %.1f (transactional %.1f) failed writes %d\n",
			l, strings.Join(ops, " "), u.EmptyReceives, u.RRU, u.WRU, u.TxWRU, u.FailedWrites)
	}
	return b.String()
}

// consumed extracts the ConsumedCapacity of any DynamoDB output (one value
// or a list).
func consumed(result any) []types.ConsumedCapacity {
	v := reflect.ValueOf(result)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil
	}
	f := v.Elem().FieldByName("ConsumedCapacity")
	switch {
	case !f.IsValid():
		return nil
	case f.Kind() == reflect.Pointer && !f.IsNil():
		cc, _ := f.Interface().(*types.ConsumedCapacity)
		return []types.ConsumedCapacity{*cc}
	case f.Kind() == reflect.Slice:
		cc, _ := f.Interface().([]types.ConsumedCapacity)
		return cc
	}
	return nil
}

func setField(params any, name string, value reflect.Value) {
	v := reflect.ValueOf(params)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return
	}
	if f := v.Elem().FieldByName(name); f.IsValid() && f.CanSet() && f.Type() == value.Type() {
		f.Set(value)
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
