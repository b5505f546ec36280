package terraform

import (
	"encoding/json"
	"fmt"

	tfjson "github.com/hashicorp/terraform-json"
	"gopkg.in/yaml.v3"

	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/tfplan"
)

// drifted translates one entry of resource_drift: what changed outside
// Terraform, as an attribute diff of the state before and after refresh,
// and, for a resource that manages a Kubernetes object, that object with
// the fields Terraform sets on it (from the refreshed values).
func (tr *translator) drifted(rc *tfjson.ResourceChange) error {
	if rc == nil || rc.Change == nil || rc.Address == "" {
		return fmt.Errorf("resource_drift: an entry without address or change")
	}
	ch := rc.Change
	learnSensitive(tr.secrets, ch.Before, ch.BeforeSensitive)
	learnSensitive(tr.secrets, ch.After, ch.AfterSensitive)
	action, _, err := mapActions(ch.Actions)
	if err != nil {
		return fmt.Errorf("resource_drift (%s): %w", rc.Address, err)
	}
	d := tfplan.DriftedResource{ResourceChange: tfplan.ResourceChange{
		Address: rc.Address, Type: rc.Type, Name: rc.Name, Module: rc.ModuleAddress, Action: action,
	}}
	var diff differ
	diff.walk("", ch.Before, ch.After, ch.BeforeSensitive, ch.AfterSensitive, nil)
	d.Attributes = diff.out
	values := asMap(ch.After)
	if values == nil {
		values = asMap(ch.Before) // deleted outside Terraform: what it managed
	}
	if values != nil && rc.Mode == tfjson.ManagedResourceMode {
		if o, err := objectOf(&tfjson.StateResource{Address: rc.Address, Mode: rc.Mode, Type: rc.Type, Name: rc.Name, AttributeValues: values}); err == nil && o.Kind != "" {
			d.Object = &o
		}
	}
	if d.Object != nil {
		d.Fields = manifestDrift(rc.Type, asMap(ch.Before), asMap(ch.After), tr.secrets.Contains)
	}
	tr.t.drift = append(tr.t.drift, d)
	return nil
}

// manifestDrift descends into the manifest a Kubernetes resource holds on
// both sides of its drift and names the fields whose values changed:
// kubernetes_manifest's object (the object as refreshed), kubectl_manifest's
// yaml_body_parsed. The kubectl provider refreshes only a fingerprint of
// the live fields (live_manifest_incluster), so its drift names no value
// unless the body itself changed. mask says which values are secret.
func manifestDrift(typ string, before, after map[string]any, mask func(string) bool) []ownership.FieldChange {
	var b, a map[string]any
	switch typ {
	case "kubernetes_manifest":
		b, a = asMap(before["object"]), asMap(after["object"])
	case "kubectl_manifest":
		b, a = yamlMap(str(before["yaml_body_parsed"])), yamlMap(str(after["yaml_body_parsed"]))
	}
	if b == nil || a == nil {
		return nil
	}
	return ownership.ManifestChanges(b, a, mask)
}

// yamlMap reads a YAML mapping as JSON would decode it (so its values
// compare and print as JSON), or nil.
func yamlMap(body string) map[string]any {
	if body == "" {
		return nil
	}
	var m map[string]any
	if yaml.Unmarshal([]byte(body), &m) != nil {
		return nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	var out map[string]any
	if json.Unmarshal(data, &out) != nil {
		return nil
	}
	return out
}
