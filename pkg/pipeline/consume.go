package pipeline

import "context"

// Message entry points: each decodes one queue message body and calls its
// handler. A returned error wrapping ErrPoison means the message can never
// succeed (dead-letter it now); any other error means "deliver it again".
// The SQS Lambdas and the local pollers call these.

// HandlePlan handles a plan queue message.
func (s *Planner) HandlePlan(ctx context.Context, body []byte) error {
	m, err := DecodePlan(body)
	if err != nil {
		return err
	}
	return s.Plan(ctx, m)
}

// HandleSlot handles a slots queue message.
func (s *Dispatcher) HandleSlot(ctx context.Context, body []byte) error {
	m, err := DecodeSlot(body)
	if err != nil {
		return err
	}
	return s.Dispatch(ctx, m)
}

// HandleCompletion handles a completions queue message.
func (s *Grader) HandleCompletion(ctx context.Context, body []byte) error {
	c, err := DecodeCompletion(body)
	if err != nil {
		return err
	}
	return s.Grade(ctx, c)
}

// HandleResult handles a results queue message.
func (s *Ingester) HandleResult(ctx context.Context, body []byte) error {
	m, err := DecodeResult(body)
	if err != nil {
		return err
	}
	return s.Ingest(ctx, m)
}
