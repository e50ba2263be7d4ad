package clientconf

import "strings"

// stripJSONC removes // and /* */ comments and then trailing commas, both
// outside strings, so that VS Code's JSON with comments decodes.
func stripJSONC(data []byte) []byte {
	var noComments []byte
	scanJSON(data, func(i int, inString bool) int {
		switch {
		case !inString && data[i] == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			return i
		case !inString && data[i] == '/' && i+1 < len(data) && data[i+1] == '*':
			end := strings.Index(string(data[i+2:]), "*/")
			if end < 0 {
				return len(data)
			}
			return i + end + 4
		}
		noComments = append(noComments, data[i])
		return i + 1
	})
	var out []byte
	scanJSON(noComments, func(i int, inString bool) int {
		if !inString && noComments[i] == ',' {
			j := i + 1
			for j < len(noComments) && strings.IndexByte(" \t\r\n", noComments[j]) >= 0 {
				j++
			}
			if j < len(noComments) && (noComments[j] == '}' || noComments[j] == ']') {
				return i + 1
			}
		}
		out = append(out, noComments[i])
		return i + 1
	})
	return out
}

// scanJSON calls step for each position, telling it whether the byte is
// inside a string; step returns the next position to visit.
func scanJSON(data []byte, step func(i int, inString bool) int) {
	inString, escaped := false, false
	for i := 0; i < len(data); {
		c := data[i]
		if inString {
			next := step(i, true)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			i = next
			continue
		}
		next := step(i, false)
		if c == '"' && next == i+1 {
			inString = true
		}
		i = next
	}
}
