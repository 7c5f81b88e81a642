package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// maxJSONDepth bounds how deeply a request body may nest objects and
// arrays; no request shape comes near it.
const maxJSONDepth = 64

// errJSONSyntax ends the key check at a syntax error, which the decoder
// that runs next reports in its own words.
var errJSONSyntax = errors.New("json syntax")

// checkUniqueKeys reports the first object key a JSON document repeats,
// naming where: encoding/json keeps the last of them silently, so
// {"name":"a","name":"b"} would mean whatever the last writer meant. It
// also refuses nesting deeper than maxJSONDepth.
func checkUniqueKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := uniqueValue(dec, "", 0); err != nil && !errors.Is(err, errJSONSyntax) {
		return err
	}
	return nil
}

func uniqueValue(dec *json.Decoder, path string, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return errJSONSyntax
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth >= maxJSONDepth {
		return fmt.Errorf("the body nests objects and arrays deeper than %d levels", maxJSONDepth)
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return errJSONSyntax
			}
			k, _ := kt.(string)
			if seen[k] {
				return fmt.Errorf("key %q appears twice in %s; give each key once", k, where(path))
			}
			seen[k] = true
			sub := k
			if path != "" {
				sub = path + "." + k
			}
			if err := uniqueValue(dec, sub, depth+1); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := uniqueValue(dec, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return errJSONSyntax
	}
	return nil
}

func where(path string) string {
	if path == "" {
		return "the top-level object"
	}
	return path
}
