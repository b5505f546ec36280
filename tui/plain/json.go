package plain

import (
	"io"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// WriteJSON writes v as --json documents are written: indented by two
// spaces, with encoding/json's semantics (field names, omitempty, embedded
// structs inlined) and a trailing newline. It encodes with the v2 engine
// under v1 options, which writes the same bytes as json.Encoder with
// SetIndent at about twice the speed: a plan review of ten thousand
// resources is a 45 MB document.
func WriteJSON(w io.Writer, v any) error {
	if err := jsonv2.MarshalWrite(w, v, jsonv1.DefaultOptionsV1(), jsontext.WithIndent("  ")); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
