package terraform

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

// FuzzReviewJSON: no input makes ReadPlanJSON (and its review) panic; every failure is a usage
// error; every success marshals.
func FuzzReviewJSON(f *testing.F) {
	hand, err := os.ReadFile(filepath.Join("testdata", "handwritten_aws_iam_and_rds.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(hand)
	f.Add(generatePlan(3, 1).data)
	f.Add([]byte(tugOfWarPlan))
	for _, s := range []string{
		``, `{`, `null`, `[]`, `{"format_version":"1.2"}`,
		`{"format_version":"1.2","resource_changes":[{"address":"a.b","change":{"actions":["update"],"before":{"a":[1,{"b":2}]},"after":{"a":[1,{"b":3}]},"after_unknown":{"a":[false,{"b":true}]},"before_sensitive":{"a":true},"after_sensitive":{"a":[false,true]}},"replace_paths":[["a",1,"b"]]}]}`,
		`{"format_version":"1.2","output_changes":{"o":{"actions":["create"],"after":"x","after_sensitive":true}}}`,
		`{"format_version":"1.2","resource_changes":[{"address":"a.b","change":{"actions":["delete","create"],"before":"x","after":[],"after_unknown":{"":true},"replace_paths":[[-1],[1.5],["x",{}]]}}]}`,
		`{"format_version":"1.2","complete":false,"errored":true,"deferred_changes":[{"reason":"x","resource_change":{"address":"a.b"}},null],"checks":[{"address":{"to_display":"c","kind":"check"},"status":"fail","instances":[{"problems":[{"message":"m"}]}]}]}`,
		`{"format_version":"1.2","action_invocations":[{"address":"action.a.b","type":"a","lifecycle_action_trigger":{"triggering_resource_address":"x.y","action_trigger_event":"after_create"}},null]}`,
		`{"format_version":"1.2","resource_drift":[{"address":"kubectl_manifest.m","mode":"managed","type":"kubectl_manifest","change":{"actions":["delete"],"before":{"yaml_body":"kind: Deployment\nmetadata: {name: x}"},"after":null}}]}`,
		`{"format_version":"1.2","variables":{"p":{"value":"fuzz-secret-value"}},"configuration":{"root_module":{"variables":{"p":{"sensitive":true}}}},"resource_changes":[{"address":"a.b","change":{"actions":["update"],"before":{"x":"fuzz-secret-value"},"after":{"x":"y"}}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := reviewJSON(bytes.NewReader(data), "fuzz", tfplan.DefaultClassify(), secret.NewSet())
		if err != nil {
			if !errors.Is(err, fault.ErrUsage) {
				t.Fatalf("error does not wrap ErrUsage: %v", err)
			}
			return
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("summary does not marshal: %v", err)
		}
		// Whatever the document marks sensitive, or declares a sensitive
		// variable's value, is learnt and appears nowhere in the review.
		secrets := secret.NewSet()
		if _, err := reviewJSON(bytes.NewReader(data), "fuzz", tfplan.DefaultClassify(), secrets); err != nil {
			t.Fatalf("a second review failed: %v", err)
		}
		if secrets.Contains(string(out)) {
			t.Fatalf("a secret the document marks is in the review: %s", out)
		}
		var d struct{ Drift, Checks, Actions, Deferred []any }
		if err := json.Unmarshal(out, &d); err != nil {
			t.Fatalf("summary does not read back: %v", err)
		}
	})
}
