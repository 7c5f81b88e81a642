package benchsync

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// SchemaVersion is the version of SyncMessage this code writes and the only
// one it reads.
const SchemaVersion = 1

// SyncMessage asks for one benchmark's task list to be synced.
type SyncMessage struct {
	SchemaVersion int    `json:"schema_version"`
	Workspace     string `json:"workspace"`
	Key           string `json:"key"`
}

// NewSyncMessage returns the message that syncs the workspace's benchmark key.
func NewSyncMessage(ws, key string) SyncMessage {
	return SyncMessage{SchemaVersion: SchemaVersion, Workspace: ws, Key: key}
}

// Encode returns the message's JSON body.
func (m SyncMessage) Encode() ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode sync message: %w", err)
	}
	return b, nil
}

// DecodeSyncMessage decodes a message body strictly: unknown fields, trailing
// data, a missing or unknown schema_version, and a missing workspace or key
// give errors wrapping ErrPoison.
func DecodeSyncMessage(body []byte) (SyncMessage, error) {
	var m SyncMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return SyncMessage{}, fmt.Errorf("decode sync message: %v: %w", err, ErrPoison)
	}
	if dec.More() {
		return SyncMessage{}, fmt.Errorf("decode sync message: trailing data: %w", ErrPoison)
	}
	if m.SchemaVersion != SchemaVersion {
		return SyncMessage{}, fmt.Errorf("sync message schema_version %d: this build reads only %d: %w", m.SchemaVersion, SchemaVersion, ErrPoison)
	}
	if m.Workspace == "" || m.Key == "" {
		return SyncMessage{}, fmt.Errorf("sync message without workspace or key: %w", ErrPoison)
	}
	return m, nil
}
