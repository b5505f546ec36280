package config

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// InvalidUTF8 finds the first byte of data that is not UTF-8 and returns
// its position (1-based line, and column counted in characters as yaml.v3
// counts them) and a problem message; found is false when data is valid
// UTF-8, or UTF-16 with its byte-order mark (which yaml.v3 reads). yaml.v3
// reports an invalid byte without a line ("invalid leading UTF-8 octet"),
// so relcap.yaml, the ownership map and the people file are checked here
// first.
func InvalidUTF8(data []byte) (line, col int, msg string, found bool) {
	if bytes.HasPrefix(data, []byte{0xfe, 0xff}) || bytes.HasPrefix(data, []byte{0xff, 0xfe}) {
		return 0, 0, "", false
	}
	if utf8.Valid(data) {
		return 0, 0, "", false
	}
	line, col = 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return line, col, fmt.Sprintf("invalid UTF-8 (byte 0x%02x): save the file as UTF-8", data[i]), true
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return 0, 0, "", false // unreachable: data is not valid
}

// checkUTF8 records data's first invalid UTF-8 byte as a problem of p's
// file, at its line and column, and reports whether data is UTF-8.
func (p *parser) checkUTF8(data []byte) bool {
	line, col, msg, found := InvalidUTF8(data)
	if found {
		p.probs.add(Problem{File: p.file, Line: line, Col: col, Message: msg})
	}
	return !found
}
