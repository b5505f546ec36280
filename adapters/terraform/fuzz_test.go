package terraform

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/secret"
)

// FuzzReviewJSON: no input makes ReviewJSON panic; every failure is a usage
// error; every success marshals.
func FuzzReviewJSON(f *testing.F) {
	hand, err := os.ReadFile(filepath.Join("testdata", "handwritten_aws_iam_and_rds.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(hand)
	f.Add(generatePlan(3, 1).data)
	for _, s := range []string{
		``, `{`, `null`, `[]`, `{"format_version":"1.2"}`,
		`{"format_version":"1.2","resource_changes":[{"address":"a.b","change":{"actions":["update"],"before":{"a":[1,{"b":2}]},"after":{"a":[1,{"b":3}]},"after_unknown":{"a":[false,{"b":true}]},"before_sensitive":{"a":true},"after_sensitive":{"a":[false,true]}},"replace_paths":[["a",1,"b"]]}]}`,
		`{"format_version":"1.2","output_changes":{"o":{"actions":["create"],"after":"x","after_sensitive":true}}}`,
		`{"format_version":"1.2","resource_changes":[{"address":"a.b","change":{"actions":["delete","create"],"before":"x","after":[],"after_unknown":{"":true},"replace_paths":[[-1],[1.5],["x",{}]]}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ReviewJSON(bytes.NewReader(data), "fuzz", workflow.DefaultClassify(), secret.NewSet())
		if err != nil {
			if !errors.Is(err, workflow.ErrUsage) {
				t.Fatalf("error does not wrap ErrUsage: %v", err)
			}
			return
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("summary does not marshal: %v", err)
		}
	})
}
