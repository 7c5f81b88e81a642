package harbor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
)

// Size limits of the files this package reads. Each reader stops at its
// limit with an error naming it, so a hostile file (or /dev/zero) costs at
// most the limit in memory.
const (
	// MaxRegistryBytes bounds a registry.json.
	MaxRegistryBytes = 64 << 20
	// MaxTaskConfigBytes bounds a task.toml.
	MaxTaskConfigBytes = 1 << 20
	// MaxInstructionBytes bounds an instruction.md.
	MaxInstructionBytes = 4 << 20
	// MaxRewardBytes bounds reward.json and reward.txt.
	MaxRewardBytes = 64 << 10
	// MaxTrialResultBytes bounds a result.json.
	MaxTrialResultBytes = 16 << 20
)

// ErrTooLarge is wrapped by every error about an input over its size limit.
var ErrTooLarge = errors.New("input too large")

// ReadLimited reads r up to limit bytes; more is an error wrapping
// ErrTooLarge that says the limit. what names the input.
func ReadLimited(r io.Reader, limit int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w: larger than the %d-byte limit", what, ErrTooLarge, limit)
	}
	return data, nil
}

// ReadFileLimited reads the file at path up to limit bytes (see ReadLimited).
func ReadFileLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadLimited(f, limit, path)
}

// decodeJSON decodes data into v, rejecting trailing content, and turns the
// decoder's errors into ones that say where (line and column) and what was
// expected in JSON words, never Go type names.
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return JSONError(data, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("line %s: unexpected content after the JSON document", position(data, dec.InputOffset()))
	}
	return nil
}

// JSONError rewrites an encoding/json error about data: a position as
// "line L, column C", the field path, and the JSON kind wanted ("a string",
// "an array") instead of a Go type.
func JSONError(data []byte, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("line %s: %s", position(data, syntax.Offset), syntax.Error())
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "the document"
		}
		return fmt.Errorf("line %s: %s: want %s, got a JSON %s", position(data, typ.Offset), field, jsonKind(typ.Type), typ.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("line %s: unexpected end of JSON", position(data, int64(len(data))))
	}
	return err
}

// position gives the 1-based "line, column" of byte offset off in data.
func position(data []byte, off int64) string {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := int64(len(before)-bytes.LastIndexByte(before, '\n')) - 1
	return fmt.Sprintf("%d, column %d", line, col+1)
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
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
