package benchsync

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Schema versions of SyncMessage. Version 1 is a plain sync (workspace and
// key); version 2 adds the refresh fields. This build reads both and
// writes the lowest version that carries the message, so plain sync
// messages stay readable by builds that know only version 1, and a refresh
// message is dead-lettered by them instead of being mistaken for a sync.
const (
	// SchemaVersionSync is the version of a plain sync message.
	SchemaVersionSync = 1
	// SchemaVersionRefresh is the version of a refresh message.
	SchemaVersionRefresh = 2
	// SchemaVersion is the newest version this build reads.
	SchemaVersion = SchemaVersionRefresh
)

// SyncMessage asks for one benchmark's task list to be synced, or (Refresh)
// for a ready benchmark to be re-resolved in its registry.
type SyncMessage struct {
	SchemaVersion int    `json:"schema_version"`
	Workspace     string `json:"workspace"`
	Key           string `json:"key"`
	// Refresh asks for a refresh of a ready benchmark (schema version 2):
	// the dataset is resolved again and, when its content changed, the
	// ready version switches to the new one; the benchmark stays ready.
	Refresh bool `json:"refresh,omitempty"`
	// LastSynced is the benchmark's last successful sync when the refresh
	// was scheduled (schema version 2). A benchmark that synced after it has
	// been refreshed already and the message changes nothing; zero asks for
	// a refresh whenever the benchmark last synced.
	LastSynced time.Time `json:"last_synced,omitzero"`
}

// NewSyncMessage returns the message that syncs the workspace's benchmark key.
func NewSyncMessage(ws, key string) SyncMessage {
	return SyncMessage{SchemaVersion: SchemaVersionSync, Workspace: ws, Key: key}
}

// NewRefreshMessage returns the message that refreshes the workspace's
// ready benchmark key, last synced at lastSynced (zero: unconditionally).
func NewRefreshMessage(ws, key string, lastSynced time.Time) SyncMessage {
	return SyncMessage{SchemaVersion: SchemaVersionRefresh, Workspace: ws, Key: key, Refresh: true, LastSynced: lastSynced.UTC()}
}

// Encode returns the message's JSON body.
func (m SyncMessage) Encode() ([]byte, error) {
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("encode sync message: %w", err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode sync message: %w", err)
	}
	return b, nil
}

// check reports a message this build cannot process, wrapping ErrPoison.
func (m SyncMessage) check() error {
	switch m.SchemaVersion {
	case SchemaVersionSync:
		if m.Refresh || !m.LastSynced.IsZero() {
			return fmt.Errorf("sync message schema_version %d has no refresh or last_synced: %w", m.SchemaVersion, ErrPoison)
		}
	case SchemaVersionRefresh:
		if !m.Refresh {
			return fmt.Errorf("sync message schema_version %d without refresh: %w", m.SchemaVersion, ErrPoison)
		}
	default:
		return fmt.Errorf("sync message schema_version %d: this build reads %d and %d: %w", m.SchemaVersion, SchemaVersionSync, SchemaVersionRefresh, ErrPoison)
	}
	if m.Workspace == "" || m.Key == "" {
		return fmt.Errorf("sync message without workspace or key: %w", ErrPoison)
	}
	return nil
}

// DecodeSyncMessage decodes a message body strictly: unknown fields, trailing
// data, a missing or unknown schema_version, refresh fields in a version 1
// message, a version 2 message that is no refresh, and a missing workspace
// or key give errors wrapping ErrPoison.
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
	if err := m.check(); err != nil {
		return SyncMessage{}, err
	}
	return m, nil
}
