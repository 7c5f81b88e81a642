package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// SchemaVersion is the version of every message type this code writes and
// the only one it reads.
const SchemaVersion = 1

// ErrPoison marks a message that can never be processed (undecodable, or of
// an unknown schema version): consumers send it to the dead-letter queue at
// once instead of retrying it.
var ErrPoison = errors.New("poison message")

// PlanMessage asks the planner to fan a run out into slots.
type PlanMessage struct {
	SchemaVersion int    `json:"schema_version"`
	RunID         string `json:"run_id"`
}

// SlotMessage asks the dispatcher to launch one generation of a slot.
type SlotMessage struct {
	SchemaVersion int    `json:"schema_version"`
	RunID         string `json:"run_id"`
	SlotID        string `json:"slot_id"`
	Generation    int    `json:"generation"`
	// Deferrals is the slot's deferral count when the message was sent; a
	// message older than the slot's count is a superseded duplicate.
	Deferrals int `json:"deferrals,omitempty"`
}

// ResultMessage carries a graded attempt result from the grader to the
// ingester. Result.Retried says the grader decided on a retry.
type ResultMessage struct {
	SchemaVersion int        `json:"schema_version"`
	Result        run.Result `json:"result"`
}

func encodeMessage(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	return b, nil
}

// decodeMessage decodes a versioned message strictly: unknown fields, a
// missing or unknown schema_version and trailing data are poison.
func decodeMessage(body []byte, v any, version func() int) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode %T: %v: %w", v, err, ErrPoison)
	}
	if dec.More() {
		return fmt.Errorf("decode %T: trailing data: %w", v, ErrPoison)
	}
	if got := version(); got != SchemaVersion {
		return fmt.Errorf("%T schema_version %d: this build reads only %d: %w", v, got, SchemaVersion, ErrPoison)
	}
	return nil
}

// DecodePlan decodes a plan message body.
func DecodePlan(body []byte) (PlanMessage, error) {
	var m PlanMessage
	err := decodeMessage(body, &m, func() int { return m.SchemaVersion })
	if err == nil && m.RunID == "" {
		err = fmt.Errorf("plan message without run_id: %w", ErrPoison)
	}
	return m, err
}

// DecodeSlot decodes a slot message body.
func DecodeSlot(body []byte) (SlotMessage, error) {
	var m SlotMessage
	err := decodeMessage(body, &m, func() int { return m.SchemaVersion })
	if err == nil && (m.RunID == "" || m.SlotID == "" || m.Generation < 0) {
		err = fmt.Errorf("slot message without run_id, slot_id or a generation ≥ 0: %w", ErrPoison)
	}
	return m, err
}

// DecodeResult decodes a result message body.
func DecodeResult(body []byte) (ResultMessage, error) {
	var m ResultMessage
	err := decodeMessage(body, &m, func() int { return m.SchemaVersion })
	if err == nil {
		if verr := m.Result.Validate(); verr != nil {
			err = fmt.Errorf("%v: %w", verr, ErrPoison)
		}
	}
	return m, err
}

// DecodeCompletion decodes a sandbox completion event. Completions are the
// sandbox port's own type (sandbox.Completion) and carry no schema_version;
// unknown fields are poison.
func DecodeCompletion(body []byte) (sandbox.Completion, error) {
	var c sandbox.Completion
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("decode completion: %v: %w", err, ErrPoison)
	}
	if c.RunID == "" || c.SlotID == "" || c.LaunchID == "" {
		return c, fmt.Errorf("completion without run_id, slot_id or launch_id: %w", ErrPoison)
	}
	return c, nil
}
