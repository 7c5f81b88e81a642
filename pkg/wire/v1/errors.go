// Package v1 holds the wire types of gauntlet's /v1 HTTP API.
//
// Every request body, answer and error shape the server writes and the
// client, the CLI and the OpenAPI document read is declared here, once. The
// package imports only the standard library, so a client of the API depends
// on nothing internal to the platform; the server converts its domain and
// stored types into these at one place each.
package v1

import (
	"encoding/json"
	"fmt"
)

// Error codes of the error shape.
const (
	CodeBadRequest   = "BAD_REQUEST"
	CodeValidation   = "VALIDATION_FAILED"
	CodeUnauthorized = "UNAUTHORIZED"
	// CodeForbidden is an authenticated caller who may not use a route (403).
	CodeForbidden        = "FORBIDDEN"
	CodeBillingRequired  = "BILLING_REQUIRED"
	CodeNotFound         = "NOT_FOUND"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	CodeConflict         = "CONFLICT"
	CodeTooLarge         = "BODY_TOO_LARGE"
	CodeUnsupportedType  = "UNSUPPORTED_MEDIA_TYPE"
	CodeUnavailable      = "UNAVAILABLE"
	CodeRegistryInvalid  = "REGISTRY_INVALID"
	// CodeInsufficientStorage is a write the platform's full storage
	// refused (507); the message names the data dir.
	CodeInsufficientStorage = "INSUFFICIENT_STORAGE"
	CodeInternal            = "INTERNAL"
)

// Error is the one error shape of every non-2xx answer.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Details carries structured context, e.g. {"problems": […]} for a
	// rejected submission; omitted when there is none.
	Details any `json:"details,omitempty"`
}

// Body limits.
const (
	// MaxRunBody bounds a run config body (TOML or JSON): the run config's
	// own limit (runconfig.MaxConfigBytes, pinned equal by a test in
	// pkg/api), so a larger body is a 413, never a 422 after the read.
	MaxRunBody = 64 << 10
	// MaxSmallBody bounds every other request body.
	MaxSmallBody = 64 << 10
)

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// Problem is one problem of a rejected submission: a code, the config key it
// concerns (empty for the submission as a whole) and what to change.
type Problem struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// ProblemsDetails is the Details of a rejected submission's Error.
type ProblemsDetails struct {
	Problems []Problem `json:"problems"`
}

// Problems returns the problems of a rejected submission's error details.
func (e *Error) Problems() ([]Problem, bool) {
	if e.Details == nil {
		return nil, false
	}
	raw, err := json.Marshal(e.Details)
	if err != nil {
		return nil, false
	}
	var d ProblemsDetails
	if json.Unmarshal(raw, &d) != nil || d.Problems == nil {
		return nil, false
	}
	return d.Problems, true
}

// Health is the answer of GET /v1/health.
type Health struct {
	// Status is HealthReady or HealthStarting.
	Status string `json:"status"`
	// Detail says, while starting, what the platform is still doing
	// ("syncing the catalog").
	Detail string `json:"detail,omitempty"`
}

// Statuses of GET /v1/health.
const (
	HealthReady    = "ready"
	HealthStarting = "starting"
)
