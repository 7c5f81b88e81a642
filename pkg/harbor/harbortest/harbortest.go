// Package harbortest checks documents against the shapes Harbor's own
// models define: the JSON Schemas of Harbor v0.22.0's TrialResult,
// TrialConfig, JobConfig and JobResult, generated from its pydantic models
// by scripts/harbor/shapes.py and closed so that a misspelt field name
// fails. Field names, required fields, types, enums and formats (UUIDs,
// dates) are checked; Harbor's model validators (e.g. a task's path xor
// name) are not, harbor.TrialConfig.Validate does those.
package harbortest

import (
	"bytes"
	"embed"
	"fmt"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Shapes Harbor defines, by schema file name.
const (
	TrialResult = "trial-result"
	TrialConfig = "trial-config"
	JobConfig   = "job-config"
	JobResult   = "job-result"
)

//go:embed shapes/*.schema.json
var shapes embed.FS

var (
	compileOnce sync.Once
	compiled    map[string]*jsonschema.Schema
	compileErr  error
)

func compile() {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.RegisterFormat(&jsonschema.Format{Name: "date-time", Validate: pydanticDateTime})
	compiled = map[string]*jsonschema.Schema{}
	for _, name := range []string{TrialResult, TrialConfig, JobConfig, JobResult} {
		data, err := shapes.ReadFile("shapes/" + name + ".schema.json")
		if err != nil {
			compileErr = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			compileErr = fmt.Errorf("schema %s: %w", name, err)
			return
		}
		url := "https://harbor.invalid/" + name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			compileErr = fmt.Errorf("schema %s: %w", name, err)
			return
		}
		if compiled[name], err = c.Compile(url); err != nil {
			compileErr = fmt.Errorf("schema %s: %w", name, err)
			return
		}
	}
}

// pydanticDateTime accepts what pydantic's datetime accepts from JSON and
// JSON Schema's date-time does not: a time without a zone (Harbor writes
// naive local times), or without seconds, or with a space for the T.
func pydanticDateTime(v any) error {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04Z07:00",
		"2006-01-02T15:04", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if _, err := time.Parse(layout, s); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%q is not a date and time pydantic reads", s)
}

// Check validates a JSON document against the named Harbor shape; the
// error lists every violation with its JSON pointer.
func Check(shape string, doc []byte) error {
	compileOnce.Do(compile)
	if compileErr != nil {
		return compileErr
	}
	sch, ok := compiled[shape]
	if !ok {
		return fmt.Errorf("no Harbor shape %q", shape)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("%s: not JSON: %w", shape, err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("not a Harbor %s: %w", shape, err)
	}
	return nil
}
