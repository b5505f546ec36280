package plain

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/relcap/relcap/workflow/owners"
	"github.com/relcap/relcap/workflow/ownership"
)

// InferenceJSON is relcap ownership infer --json.
type InferenceJSON struct {
	Envs      []string           `json:"envs"`
	Live      bool               `json:"live"`
	Unread    string             `json:"unread,omitempty"`
	Objects   []inferredObject   `json:"objects"`
	Changes   []ownership.Change `json:"changes"`
	Contested int                `json:"contested"`
	Flipping  int                `json:"flipping"`
	Draft     string             `json:"draft,omitempty"`
	Partial   bool               `json:"partial,omitempty"`
	YAML      string             `json:"yaml"`
}

type inferredObject struct {
	Key       string                     `json:"key"`
	Owner     ownership.Owner            `json:"owner"`
	Fields    map[string]ownership.Owner `json:"fields,omitempty"`
	Writers   []ownership.Writer         `json:"writers"`
	Contested []contestedField           `json:"contested"`
}

type contestedField struct {
	ownership.ContestedField
	Flipping bool `json:"flipping"`
}

// InferenceDocument is the --json document of res.
func InferenceDocument(res owners.Inferred) InferenceJSON {
	c, f := res.Contested()
	doc := InferenceJSON{Envs: res.Envs, Live: res.Inference.Live, Unread: res.Inference.Unread, Objects: []inferredObject{},
		Changes: res.Changes, Contested: c, Flipping: f, Draft: res.Written, Partial: res.Partial, YAML: string(res.YAML)}
	if doc.Changes == nil {
		doc.Changes = []ownership.Change{}
	}
	for _, o := range res.Inference.Objects {
		obj := inferredObject{Key: o.Key, Owner: o.Owner, Fields: o.Fields, Writers: o.Writers, Contested: []contestedField{}}
		for _, cf := range o.Contested {
			obj.Contested = append(obj.Contested, contestedField{cf, cf.Flipping()})
		}
		doc.Objects = append(doc.Objects, obj)
	}
	return doc
}

// PrintInference prints what infer proposed: each object more than one
// owner writes with its writers and contested fields, where the draft
// differs from the map, and where the draft went (the draft itself when
// print is set).
func PrintInference(w io.Writer, res owners.Inferred, print bool) {
	w = SafeWriter(w)
	c, f := res.Contested()
	fmt.Fprintf(w, "%s: %d object(s) written by more than one owner, %d contested field(s), %d flipping\n",
		strings.Join(res.Envs, ", "), len(res.Inference.Objects), c, f)
	if !res.Inference.Live {
		fmt.Fprintf(w, "the live objects were not read (%s): contested fields are those both tools declare\n", res.Inference.Unread)
	}
	for _, o := range res.Inference.Objects {
		fmt.Fprintf(w, "\n%s → %s\n", o.Key, o.Owner)
		for _, wr := range o.Writers {
			if wr.Manager == "" {
				fmt.Fprintf(w, "  declared by %s (%d fields)\n", wr.Via, wr.Fields)
				continue
			}
			fmt.Fprintf(w, "  held by field manager %s (%s): %s, %d fields\n", wr.Manager, wr.How(), wr.Owner, wr.Fields)
		}
		for _, cf := range o.Contested {
			mark := "contested"
			if cf.Flipping() {
				mark = "FLIPPING "
			}
			owners := make([]string, len(cf.Owners))
			for i, x := range cf.Owners {
				owners[i] = string(x)
			}
			line := fmt.Sprintf("  %s %s: %s", mark, cf.Field, strings.Join(owners, " and "))
			if len(cf.Holders) > 0 {
				line += "; held by " + strings.Join(cf.Holders, ", ")
			}
			fmt.Fprintln(w, line)
		}
		for _, field := range slices.Sorted(maps.Keys(o.Fields)) {
			fmt.Fprintf(w, "  proposed: %s → %s\n", field, o.Fields[field])
		}
	}
	fmt.Fprintln(w)
	if len(res.Changes) == 0 {
		fmt.Fprintln(w, "the draft gives every object read the owner the current map gives it")
	} else {
		fmt.Fprintf(w, "where the draft differs from the current map (%d):\n", len(res.Changes))
		for _, ch := range res.Changes {
			fmt.Fprintf(w, "  %s\n", ch)
		}
	}
	switch {
	case print:
		fmt.Fprintf(w, "\n%s", res.YAML)
	case res.Written != "":
		fmt.Fprintf(w, "draft written to %s: review it, then replace the map with it\n", res.Written)
	}
	if res.Partial {
		fmt.Fprintln(w, "the draft covers only "+strings.Join(res.Envs, ", ")+"; infer without --env for a whole map")
	}
}
