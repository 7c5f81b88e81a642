// Package tomldoc decodes TOML documents with one decoder configuration.
//
// It decodes the TOML documents gauntlet reads (run configs,
// the benchmark catalog, Harbor's task.toml) with one decoder configuration.
//
// Every caller gets the same decoder (BurntSushi/toml, TOML 1.0) called the
// same way, and syntax errors as one type carrying the position, so each
// caller words its message from the same facts.
package tomldoc

import (
	"errors"

	"github.com/BurntSushi/toml"
)

// SyntaxError is a document that is not valid TOML. Its Error is the
// decoder's own text; Line, Column and Message let a caller word its own.
type SyntaxError struct {
	Line, Column int
	// Message is the decoder's description without the position.
	Message string
	err     error
}

// Error implements error.
func (e *SyntaxError) Error() string { return e.err.Error() }

// Unwrap returns the decoder's error.
func (e *SyntaxError) Unwrap() error { return e.err }

// MetaData is what a decode learned about the document's keys (for example
// the keys no field took: Undecoded).
type MetaData = toml.MetaData

// Decode decodes data into v (a struct pointer or *map[string]any). A
// syntax error is a *SyntaxError.
func Decode(data []byte, v any) (MetaData, error) {
	md, err := toml.Decode(string(data), v)
	if err == nil {
		return md, nil
	}
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return md, &SyntaxError{Line: pe.Position.Line, Column: pe.Position.Col, Message: pe.Message, err: err}
	}
	return md, err
}
