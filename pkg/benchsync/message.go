package benchsync

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Schema versions of SyncMessage. Version 1 is a plain sync (workspace and
// key); version 2 adds the refresh fields; version 3 adds Resume (a sync or
// refresh parked on running image builds). This build reads all three and
// writes the lowest version that carries the message, so plain sync
// messages stay readable by builds that know only version 1, and a newer
// message is dead-lettered by older builds instead of being mistaken for
// another kind.
const (
	// SchemaVersionSync is the version of a plain sync message.
	SchemaVersionSync = 1
	// SchemaVersionRefresh is the version of a refresh message.
	SchemaVersionRefresh = 2
	// SchemaVersionResume is the version of a resume message.
	SchemaVersionResume = 3
	// SchemaVersion is the newest version this build reads.
	SchemaVersion = SchemaVersionResume
)

// Bounds of a resume message's builds (a dataset's Dockerfile tasks).
const (
	maxResumeBuilds = 10000
	maxBuildHandle  = 1024
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
	// Resume continues a sync or refresh that parked on running image
	// builds (schema version 3).
	Resume *Resume `json:"resume,omitempty"`
}

// Resume is what a parked sync hands its next delivery.
type Resume struct {
	// ParkedAt is the progress time the park recorded; the resume takes the
	// sync over only while it is still the latest (nothing else ran since).
	ParkedAt time.Time `json:"parked_at"`
	// Builds maps the build keys still building to their builder handles.
	Builds map[string]string `json:"builds"`
}

// NewResumeMessage returns the message that resumes msg's sync or refresh,
// parked at parkedAt on builds.
func NewResumeMessage(msg SyncMessage, parkedAt time.Time, builds map[string]string) SyncMessage {
	msg.SchemaVersion = SchemaVersionResume
	msg.Resume = &Resume{ParkedAt: parkedAt.UTC(), Builds: builds}
	return msg
}

// parked reports whether at is the progress time this resume parked with
// (to the millisecond, what every store keeps).
func (r *Resume) parked(at time.Time) bool {
	if r == nil {
		return false
	}
	d := at.Sub(r.ParkedAt)
	return d > -time.Millisecond && d < time.Millisecond
}

// fenced is the progress time a resume's claim records: now, but past the
// parked time by more than parked's tolerance, so a second delivery of the
// same resume never takes the sync over again.
func (r *Resume) fenced(now time.Time) time.Time {
	if min := r.ParkedAt.Add(time.Millisecond); now.Before(min) {
		return min
	}
	return now
}

// builds returns the running builds, none for a nil resume.
func (r *Resume) builds() map[string]string {
	if r == nil {
		return nil
	}
	return r.Builds
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
	if m.SchemaVersion != SchemaVersionResume && m.Resume != nil {
		return fmt.Errorf("sync message schema_version %d has no resume: %w", m.SchemaVersion, ErrPoison)
	}
	switch m.SchemaVersion {
	case SchemaVersionSync:
		if m.Refresh || !m.LastSynced.IsZero() {
			return fmt.Errorf("sync message schema_version %d has no refresh or last_synced: %w", m.SchemaVersion, ErrPoison)
		}
	case SchemaVersionRefresh:
		if !m.Refresh {
			return fmt.Errorf("sync message schema_version %d without refresh: %w", m.SchemaVersion, ErrPoison)
		}
	case SchemaVersionResume:
		if err := m.Resume.check(); err != nil {
			return fmt.Errorf("sync message schema_version %d: %v: %w", m.SchemaVersion, err, ErrPoison)
		}
		if !m.Refresh && !m.LastSynced.IsZero() {
			return fmt.Errorf("sync message schema_version %d: last_synced belongs to a refresh: %w", m.SchemaVersion, ErrPoison)
		}
	default:
		return fmt.Errorf("sync message schema_version %d: this build reads %d, %d and %d: %w", m.SchemaVersion, SchemaVersionSync, SchemaVersionRefresh, SchemaVersionResume, ErrPoison)
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

// check bounds a resume: a parked time, and builds keyed by build key.
func (r *Resume) check() error {
	switch {
	case r == nil:
		return errors.New("resume is missing")
	case r.ParkedAt.IsZero():
		return errors.New("resume.parked_at is missing")
	case len(r.Builds) == 0:
		return errors.New("resume.builds is empty (a sync parks only on running builds)")
	case len(r.Builds) > maxResumeBuilds:
		return fmt.Errorf("resume.builds has %d entries, at most %d allowed", len(r.Builds), maxResumeBuilds)
	}
	for key, handle := range r.Builds {
		if _, err := hex.DecodeString(key); err != nil || len(key) != 64 || strings.ToLower(key) != key {
			return fmt.Errorf("resume.builds: key %.80q is not a build key (64 lowercase hex characters)", key)
		}
		if handle == "" || len(handle) > maxBuildHandle {
			return fmt.Errorf("resume.builds[%s]: handle must be 1..%d characters", key, maxBuildHandle)
		}
	}
	return nil
}
