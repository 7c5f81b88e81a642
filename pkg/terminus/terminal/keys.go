package terminal

import "strings"

// namedKeys are tmux's key names (matched without regard to case) and the
// bytes an xterm sends for them.
var namedKeys = map[string]string{
	"enter": "\r", "escape": "\x1b", "esc": "\x1b", "tab": "\t", "btab": "\x1b[Z",
	"space": " ", "bspace": "\x7f",
	"up": "\x1b[A", "down": "\x1b[B", "right": "\x1b[C", "left": "\x1b[D",
	"home": "\x1b[H", "end": "\x1b[F",
	"pageup": "\x1b[5~", "ppage": "\x1b[5~", "pgup": "\x1b[5~",
	"pagedown": "\x1b[6~", "npage": "\x1b[6~", "pgdn": "\x1b[6~",
	"dc": "\x1b[3~", "delete": "\x1b[3~", "ic": "\x1b[2~", "insert": "\x1b[2~",
	"f1": "\x1bOP", "f2": "\x1bOQ", "f3": "\x1bOR", "f4": "\x1bOS",
	"f5": "\x1b[15~", "f6": "\x1b[17~", "f7": "\x1b[18~", "f8": "\x1b[19~",
	"f9": "\x1b[20~", "f10": "\x1b[21~", "f11": "\x1b[23~", "f12": "\x1b[24~",
}

// ctrlSymbols are the control characters written as C- plus a symbol.
var ctrlSymbols = map[string]byte{
	"@": 0x00, "space": 0x00, "[": 0x1b, `\`: 0x1c, "]": 0x1d, "^": 0x1e, "_": 0x1f, "?": 0x7f,
}

// Keys turns a keystrokes string into the bytes to type. As with tmux's
// send-keys, a string that is exactly a key name ("C-c", "Enter", "Escape",
// "M-b", "^D", "Up", "F5", …) is that key; anything else is typed
// literally, byte for byte ("\n" included, which runs the command line).
func Keys(s string) []byte {
	if b, ok := keyBytes(s); ok {
		return []byte(b)
	}
	return []byte(s)
}

func keyBytes(name string) (string, bool) {
	if b, ok := namedKeys[strings.ToLower(name)]; ok {
		return b, true
	}
	if len(name) > 2 && (name[:2] == "M-" || name[:2] == "m-") {
		rest := name[2:]
		if b, ok := keyBytes(rest); ok {
			return "\x1b" + b, true
		}
		if len(rest) == 1 {
			return "\x1b" + rest, true
		}
		return "", false
	}
	var target string
	switch {
	case len(name) > 2 && (name[:2] == "C-" || name[:2] == "c-"):
		target = name[2:]
	case len(name) == 2 && name[0] == '^':
		target = name[1:]
	default:
		return "", false
	}
	if c, ok := ctrlSymbols[strings.ToLower(target)]; ok {
		return string([]byte{c}), true
	}
	if len(target) == 1 {
		c := target[0] | 0x20 // lower case
		if c >= 'a' && c <= 'z' {
			return string([]byte{c & 0x1f}), true
		}
	}
	return "", false
}

// IsKeyName reports whether Keys types s as a named key rather than
// literally.
func IsKeyName(s string) bool {
	_, ok := keyBytes(s)
	return ok
}
