package gateway

// topLevelString finds the string value of key in a JSON object without
// decoding the rest: requests run to hundreds of kilobytes (the whole
// conversation), and the gateway reads only a few top-level fields. It
// returns the byte range of the value (quotes included) and its text when
// it has no escapes; ok is false when body is not an object with key as a
// plain string.
func topLevelString(body []byte, key string) (start, end int, val string, ok bool) {
	start, end, ok = topLevelValue(body, key)
	if !ok {
		return 0, 0, "", false
	}
	v := body[start:end]
	if len(v) < 2 || v[0] != '"' {
		return 0, 0, "", false
	}
	for _, c := range v[1 : len(v)-1] {
		if c == '\\' {
			return 0, 0, "", false
		}
	}
	return start, end, string(v[1 : len(v)-1]), true
}

// topLevelValue returns the byte range of key's value in the JSON object
// body; ok is false when body is not an object or has no such key.
func topLevelValue(body []byte, key string) (start, end int, ok bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return 0, 0, false
	}
	i++
	for {
		i = skipSpace(body, i)
		if i >= len(body) || body[i] != '"' {
			return 0, 0, false
		}
		ks := i
		i = skipString(body, i)
		if i < 0 {
			return 0, 0, false
		}
		k := body[ks+1 : i-1]
		i = skipSpace(body, i)
		if i >= len(body) || body[i] != ':' {
			return 0, 0, false
		}
		i = skipSpace(body, i+1)
		vs := i
		i = skipValue(body, i)
		if i < 0 {
			return 0, 0, false
		}
		if string(k) == key {
			return vs, i, true
		}
		i = skipSpace(body, i)
		if i >= len(body) || body[i] != ',' {
			return 0, 0, false
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the index after the value starting at b[i]: strings
// and nesting are followed, scalars run to the next delimiter.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				if i < 0 {
					return -1
				}
				i--
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}
