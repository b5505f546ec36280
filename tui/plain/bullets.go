package plain

import "strings"

// Bullets prints items as a bulleted list wrapped at 80
// columns, for help text.
func Bullets(defs []string) string {
	var b strings.Builder
	for _, d := range defs {
		line := "  -"
		for _, w := range strings.Fields(d) {
			if len(line)+1+len(w) > 80 {
				b.WriteString(line + "\n")
				line = "   "
			}
			line += " " + w
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
