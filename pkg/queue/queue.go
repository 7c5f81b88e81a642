// Package queue defines the queue port: at-least-once message delivery with
// batch send, delay, visibility timeout, receive counts and dead-lettering.
// The local adapter keeps messages in SQLite; the cloud adapter is SQS.
package queue

import (
	"context"
	"time"
)

// MaxBatch is the largest batch Send accepts in one call to an adapter that
// has a limit; adapters split larger batches themselves.
const MaxBatch = 10

// Outgoing is a message to send.
type Outgoing struct {
	Body  []byte
	Delay time.Duration // ≤ 15 minutes
}

// Message is a received message. Receipt identifies this delivery for Delete
// and ChangeVisibility; ReceiveCount counts deliveries including this one.
type Message struct {
	ID           string
	Body         []byte
	Receipt      string
	ReceiveCount int
	SentAt       time.Time
}

// Queue is one named queue. A message received and not deleted before its
// visibility timeout ends is delivered again; after the queue's maximum
// receive count it moves to the queue's dead-letter queue instead.
type Queue interface {
	// Send enqueues the messages (any number; adapters batch).
	Send(ctx context.Context, msgs ...Outgoing) error
	// Receive returns up to max visible messages, hiding each for visibility.
	// It waits up to wait for at least one message.
	Receive(ctx context.Context, max int, visibility, wait time.Duration) ([]Message, error)
	// Delete acknowledges a delivery.
	Delete(ctx context.Context, receipt string) error
	// ChangeVisibility hides a delivery for d from now (0 = visible now).
	ChangeVisibility(ctx context.Context, receipt string, d time.Duration) error
}
