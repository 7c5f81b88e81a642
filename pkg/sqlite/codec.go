package sqlite

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Change images are stored in a compact binary form, written and read without
// reflection: the change log gets one or two images per write, and the JSON
// encoder spent most of its time re-validating Data, which was valid JSON
// when it was written. Images written by earlier versions are JSON objects
// and still decode.
//
// Layout: imageV1, then pk, sk, gsi1pk, gsi1sk, gsi2pk, gsi2sk and data as
// uvarint-length-prefixed bytes, then the counter count and each counter as
// a length-prefixed name and a varint, then version and expires_at as
// varints.
const imageV1 = 0x01

// errBadImage reports a change image this package did not write.
var errBadImage = errors.New("malformed change image")

// appendImage appends the binary image of item to b.
func appendImage(b []byte, item *store.Item) []byte {
	b = append(b, imageV1)
	for _, s := range []string{item.PK, item.SK, item.GSI1PK, item.GSI1SK, item.GSI2PK, item.GSI2SK} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(item.Data)))
	b = append(b, item.Data...)
	b = binary.AppendUvarint(b, uint64(len(item.Counters)))
	for _, name := range sortedNames(item.Counters) {
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
		b = binary.AppendVarint(b, item.Counters[name])
	}
	b = binary.AppendVarint(b, item.Version)
	return binary.AppendVarint(b, item.ExpiresAt)
}

// imageSize is an upper bound of the image's encoded size.
func imageSize(item *store.Item) int {
	n := 1 + 7*binary.MaxVarintLen32 + 3*binary.MaxVarintLen64 + len(item.PK) + len(item.SK) +
		len(item.GSI1PK) + len(item.GSI1SK) + len(item.GSI2PK) + len(item.GSI2SK) + len(item.Data)
	for name := range item.Counters {
		n += binary.MaxVarintLen32 + len(name) + binary.MaxVarintLen64
	}
	return n
}

// encodeImage returns the stored form of a change image (nil for none).
func encodeImage(item *store.Item) any {
	if item == nil {
		return nil
	}
	return appendImage(make([]byte, 0, imageSize(item)), item)
}

// decodeImage reads a stored change image: binary, or JSON from before.
func decodeImage(b []byte) (*store.Item, error) {
	if b == nil {
		return nil, nil
	}
	if len(b) > 0 && b[0] == '{' {
		var item store.Item
		if err := json.Unmarshal(b, &item); err != nil {
			return nil, err
		}
		return &item, nil
	}
	r := imageReader{b: b}
	if r.byte() != imageV1 {
		return nil, fmt.Errorf("%w: unknown format", errBadImage)
	}
	item := &store.Item{}
	for _, dst := range []*string{&item.PK, &item.SK, &item.GSI1PK, &item.GSI1SK, &item.GSI2PK, &item.GSI2SK} {
		*dst = string(r.bytes())
	}
	if data := r.bytes(); len(data) > 0 {
		item.Data = json.RawMessage(data)
	}
	if n := r.uvarint(); n > 0 && r.err == nil {
		item.Counters = make(map[string]int64, min(n, 64))
		for range n {
			name := string(r.bytes())
			item.Counters[name] = r.varint()
			if r.err != nil {
				break
			}
		}
	}
	item.Version = r.varint()
	item.ExpiresAt = r.varint()
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%w: %d trailing bytes", errBadImage, len(r.b))
	}
	if r.err != nil {
		return nil, r.err
	}
	return item, nil
}

// imageReader consumes an image; the first error sticks.
type imageReader struct {
	b   []byte
	err error
}

func (r *imageReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: truncated %s", errBadImage, what)
	}
	r.b = nil
}

func (r *imageReader) byte() byte {
	if len(r.b) == 0 {
		r.fail("header")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *imageReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("length")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *imageReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("number")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes returns the next length-prefixed field, aliasing the input.
func (r *imageReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if uint64(len(r.b)) < n {
		r.fail("field")
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func sortedNames(counters map[string]int64) []string {
	names := make([]string, 0, len(counters))
	for name := range counters {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// encodeCounters renders counters as the JSON object the counters column
// holds (keys sorted, as encoding/json writes them), without reflection.
func encodeCounters(counters map[string]int64) string {
	b := make([]byte, 0, 16*len(counters)+2)
	b = append(b, '{')
	for i, name := range sortedNames(counters) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, name)
		b = append(b, ':')
		b = strconv.AppendInt(b, counters[name], 10)
	}
	return string(append(b, '}'))
}

// appendJSONString appends s as a JSON string; names needing escapes (never
// the table's own counters) go through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// decodeCounters parses the counters column. The common shape — a flat
// object of plain names and integers — is read directly; anything else goes
// through encoding/json.
func decodeCounters(s string) (map[string]int64, error) {
	if out, ok := parseFlatCounters(s); ok {
		return out, nil
	}
	var out map[string]int64
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, err
	}
	return out, nil
}

// parseFlatCounters parses {"name":int,...} with unescaped names and no
// whitespace; ok is false for any other text.
func parseFlatCounters(s string) (map[string]int64, bool) {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, false
	}
	body := s[1 : len(s)-1]
	out := make(map[string]int64, 8)
	for len(body) > 0 {
		if body[0] != '"' {
			return nil, false
		}
		end := 1
		for end < len(body) && body[end] != '"' {
			if body[end] == '\\' || body[end] < 0x20 {
				return nil, false
			}
			end++
		}
		if end+1 >= len(body) || body[end+1] != ':' {
			return nil, false
		}
		name := body[1:end]
		body = body[end+2:]
		numEnd := 0
		for numEnd < len(body) && body[numEnd] != ',' {
			numEnd++
		}
		num := body[:numEnd]
		if !jsonInteger(num) {
			return nil, false
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return nil, false
		}
		out[name] = v
		if numEnd == len(body) {
			break
		}
		body = body[numEnd+1:]
		if len(body) == 0 {
			return nil, false // trailing comma
		}
	}
	return out, true
}

// jsonInteger reports whether s is an integer as JSON writes one: an optional
// minus sign and digits without a leading zero.
func jsonInteger(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
