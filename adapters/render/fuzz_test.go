package render_test

import (
	"testing"

	"github.com/relcap/relcap/adapters/render"
	"github.com/relcap/relcap/workflow/ownership"
)

// FuzzParseManifests: any file of an environment repository is read or
// refused with an error, never a panic, and every object it yields has a
// kind and a name whose field paths can be taken.
func FuzzParseManifests(f *testing.F) {
	for _, s := range envRepo {
		f.Add([]byte(s))
	}
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: List, items: []}]\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := render.ParseManifests(data, "f.yaml")
		if err != nil {
			return
		}
		for _, o := range objs {
			if o["kind"] == nil || o["apiVersion"] == nil {
				t.Fatalf("object without kind or apiVersion: %v", o)
			}
			_ = ownership.FieldPaths(o)
		}
	})
}
