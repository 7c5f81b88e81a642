package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// CodeInvalidField is the problem code of a request field the domain
// refused (a benchmark's registry_credentials[i].secret, say).
const CodeInvalidField = "invalid_field"

func errorf(status int, code, format string, args ...any) *v1.Error {
	return &v1.Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// notFound is the answer for a missing entity and for another workspace's.
func notFound(what, id string) *v1.Error {
	return errorf(http.StatusNotFound, v1.CodeNotFound, "%s %q not found", what, id)
}

// writeError maps an error to its status code and writes the error shape.
// It is the only place that decides status codes for errors.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := h.classify(err)
	if e.Status >= 500 {
		h.log.ErrorContext(r.Context(), "request failed", "request_id", requestID(r.Context()),
			"method", r.Method, "path", r.URL.Path, "err", err)
	}
	_ = writeJSON(w, e.Status, e)
}

func (h *Handler) classify(err error) *v1.Error {
	var apiErr *v1.Error
	var rejected *pipeline.RejectedError
	var tooLarge *http.MaxBytesError
	var unknownDataset *benchsync.UnknownDatasetError
	var field *benchmark.FieldError
	var noSpace *diskspace.Error
	switch {
	case errors.As(err, &apiErr):
		return apiErr
	case errors.As(err, &rejected):
		return rejectedError(rejected)
	case errors.As(err, &tooLarge):
		return errorf(http.StatusRequestEntityTooLarge, v1.CodeTooLarge, "the request body is larger than %d bytes", tooLarge.Limit)
	case errors.As(err, &field):
		return &v1.Error{Status: http.StatusUnprocessableEntity, Code: v1.CodeValidation, Message: field.Error(),
			Details: v1.ProblemsDetails{Problems: []v1.Problem{{Code: CodeInvalidField, Field: field.Field, Message: field.Message}}}}
	case errors.Is(err, benchsync.ErrInvalidSpec):
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "%s", clientMessage(err))
	case errors.Is(err, benchsync.ErrDatasetNotFound):
		return errorf(http.StatusNotFound, v1.CodeNotFound, "%s", clientMessage(err))
	case errors.As(err, &unknownDataset):
		return errorf(http.StatusNotFound, v1.CodeNotFound, "%s", unknownDataset.Error())
	case errors.Is(err, benchsync.ErrRegistryInvalid):
		// The operator's registry is broken, not the request: say where.
		return errorf(http.StatusBadGateway, v1.CodeRegistryInvalid, "the benchmark registry is invalid: %s", registryProblem(err))
	case errors.Is(err, store.ErrInvalidCursor):
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "cursor is not one this API returned; start again without it")
	case errors.Is(err, benchsync.ErrRegistryUnavailable):
		return errorf(http.StatusServiceUnavailable, v1.CodeUnavailable, "the benchmark registry could not be read; check the registry location and try again")
	case errors.Is(err, records.ErrNotFound):
		return errorf(http.StatusNotFound, v1.CodeNotFound, "not found")
	case errors.As(err, &noSpace):
		return insufficientStorage(noSpace)
	case errors.Is(err, records.ErrConflict), errors.Is(err, run.ErrIllegalTransition), errors.Is(err, pipeline.ErrNotStoppable):
		return errorf(http.StatusConflict, v1.CodeConflict, "%s", clientMessage(err))
	}
	return &v1.Error{Status: http.StatusInternalServerError, Code: v1.CodeInternal,
		Message: "internal error; the server log has the details"}
}

// insufficientStorage answers a write the platform's full storage refused:
// the platform's condition, not the request's, so the same request succeeds
// once the operator frees space. It names the directory, never the failed
// write's own error.
func insufficientStorage(e *diskspace.Error) *v1.Error {
	msg := fmt.Sprintf("the platform's data dir is out of storage space: %s has no room for this write; free space there and try again", e.Dir)
	if e.Err == nil {
		msg = fmt.Sprintf("the platform's data dir is out of storage space: %s has %s free, below its floor of %s; free space there and try again",
			e.Dir, diskspace.MB(e.FreeBytes), diskspace.MB(e.FloorBytes))
	}
	return errorf(http.StatusInsufficientStorage, v1.CodeInsufficientStorage, "%s", msg)
}

// clientMessage is the text of a 4xx domain error: the error without the
// package prefixes sentinels carry.
func clientMessage(err error) string {
	msg := err.Error()
	for _, p := range []string{"records: ", "store: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return msg
}

func rejectedError(rej *pipeline.RejectedError) *v1.Error {
	details := v1.ProblemsDetails{Problems: problems(rej.Problems)}
	if rej.Has(pipeline.CodeBillingRequired) {
		msg := "billing required"
		for _, p := range rej.Problems {
			if p.Code == pipeline.CodeBillingRequired {
				msg = p.Message
			}
		}
		return &v1.Error{Status: http.StatusPaymentRequired, Code: v1.CodeBillingRequired, Message: msg, Details: details}
	}
	parts := make([]string, len(rej.Problems))
	for i, p := range rej.Problems {
		parts[i] = p.Message
		if p.Field != "" {
			parts[i] = p.Field + ": " + p.Message
		}
	}
	return &v1.Error{Status: http.StatusUnprocessableEntity, Code: v1.CodeValidation,
		Message: fmt.Sprintf("the submission has %s: %s", runconfig.CountProblems(len(parts)), strings.Join(parts, "; ")), Details: details}
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// decodeJSON decodes a bounded JSON body strictly: unknown fields and
// trailing data are errors.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := mediaType(r); ct != "application/json" && ct != "" {
		return errorf(http.StatusUnsupportedMediaType, v1.CodeUnsupportedType, "send Content-Type: application/json, not %q", ct)
	}
	body, err := readBody(w, r, v1.MaxSmallBody)
	if err != nil {
		return err
	}
	if err := checkUniqueKeys(body); err != nil {
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "invalid JSON body: %s", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errorf(http.StatusBadRequest, v1.CodeBadRequest, "the request body is empty; send a JSON object")
		}
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "invalid JSON body: %s", jsonProblem(err))
	}
	if dec.More() {
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "invalid JSON body: data after the object")
	}
	return nil
}

// registryProblem is the registry's own error without the sentinel's words,
// at most a few hundred bytes of it.
func registryProblem(err error) string {
	msg := strings.TrimPrefix(err.Error(), benchsync.ErrRegistryInvalid.Error()+": ")
	if len(msg) > 600 {
		msg = strings.ToValidUTF8(msg[:600], "") + "…"
	}
	return msg
}

// jsonProblem says what is wrong with a JSON body in JSON's words: the
// field and the kind of value wanted, never a Go type name.
func jsonProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return fmt.Sprintf("%s: want %s, got %s", typeErr.Field, jsonKind(typeErr.Type), typeErr.Value)
	case errors.As(err, &typeErr):
		return fmt.Sprintf("want %s, got %s", jsonKind(typeErr.Type), typeErr.Value)
	case errors.As(err, &syntax):
		return fmt.Sprintf("%s (at byte %d)", syntax.Error(), syntax.Offset)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "another kind of value"
}

// readBody reads a bounded body.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

func mediaType(r *http.Request) string {
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	return strings.ToLower(strings.TrimSpace(ct))
}
