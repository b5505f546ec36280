package terraform

import (
	"context"
	"encoding/json"

	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"
	"gopkg.in/yaml.v3"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/secret"
)

var _ workflow.OwnershipSource = (*Adapter)(nil)

// ManagedObjects implements workflow.OwnershipSource: it reads the managed
// resources of env's state (terraform show -json of the selected
// workspace) and translates them with the rules of ObjectsFromStateJSON.
// The state holds sensitive values in clear, so it is read through the
// quiet client and nothing of it but addresses, types, Kubernetes
// identities and field paths leaves the adapter.
//
// Planned creates are not included: they would cost a full plan (a
// refresh of every resource) per check, and relcap plan reviews them.
func (a *Adapter) ManagedObjects(ctx context.Context, env workflow.Environment) ([]ownership.ManagedObject, error) {
	var objects []ownership.ManagedObject
	err := a.inWorkspace(ctx, env, "ownership", func(t target, quiet *tfexec.Terraform) error {
		st, err := quiet.Show(ctx, tfexec.JSONNumber(true))
		if err != nil {
			return a.terraformError(ctx, "show", t, err)
		}
		learnStateSecrets(a.secrets, st)
		objects, err = objectsFromState(st)
		if err != nil {
			return fmt.Errorf("reading the state of %s (%s): %w", t.dir, t.workspace, err)
		}
		return nil
	})
	return objects, err
}

// inWorkspace runs op with the quiet client (the state holds sensitive
// values in clear) in env's initialised root with its workspace selected,
// holding the working-directory lock under the name what, and selects the
// workspace that was selected before once op is done.
func (a *Adapter) inWorkspace(ctx context.Context, env workflow.Environment, what string, op func(t target, quiet *tfexec.Terraform) error) error {
	t, err := a.target(env)
	if err != nil {
		return err
	}
	unlock, err := a.lockWorkdir(ctx, t, what)
	if err != nil {
		return err
	}
	defer unlock()
	loud, quiet, err := a.terraforms(ctx, t)
	if err != nil {
		return err
	}
	var restore func()
	err = a.withInit(ctx, t, loud, func() error {
		r, err := selectWorkspace(ctx, quiet, t)
		if err != nil {
			return err
		}
		if restore == nil {
			restore = r
		}
		return op(t, quiet)
	})
	if restore != nil {
		restore()
	}
	return err
}

// ObjectsFromStateJSON translates a "terraform show -json" document of a
// state into the objects Terraform manages: every managed resource with its
// address and type and, for resources that manage Kubernetes objects
// (kubernetes_* typed resources, kubernetes_manifest, gavinbunney's
// kubectl_manifest, helm_release), the object's identity and the
// desired-state field paths the resource sets, in the path scheme of
// ownership.FieldPaths. A helm_release is a pseudo object (group helm.sh,
// kind HelmRelease) named like the release, for hand-off matching. Data
// sources are not managed and are left out. Values never leave: only
// paths.
func ObjectsFromStateJSON(r io.Reader) ([]ownership.ManagedObject, error) {
	var st tfjson.State
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := dec.Decode(&st); err != nil {
		// encoding/json's messages name types and offsets, never values.
		return nil, fmt.Errorf("%w: not a terraform show -json state document: %w", fault.ErrUsage, err)
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", fault.ErrUsage, err)
	}
	return objectsFromState(&st)
}

func objectsFromState(st *tfjson.State) ([]ownership.ManagedObject, error) {
	if st == nil || st.Values == nil || st.Values.RootModule == nil {
		return nil, nil // nothing applied yet
	}
	var out []ownership.ManagedObject
	var errs []error
	var walk func(m *tfjson.StateModule)
	walk = func(m *tfjson.StateModule) {
		for _, r := range m.Resources {
			if r == nil || r.Mode != tfjson.ManagedResourceMode || r.DeposedKey != "" {
				// A deposed object is a leftover of create_before_destroy
				// that the next apply deletes; its current instance is
				// listed too.
				continue
			}
			o, err := objectOf(r)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, o)
		}
		for _, c := range m.ChildModules {
			if c != nil {
				walk(c)
			}
		}
	}
	walk(st.Values.RootModule)
	return out, errors.Join(errs...)
}

// objectOf translates one managed resource.
func objectOf(r *tfjson.StateResource) (ownership.ManagedObject, error) {
	o := ownership.ManagedObject{Manager: ownership.OwnerTerraform, TerraformAddress: r.Address, TerraformType: r.Type}
	v := r.AttributeValues
	switch {
	case r.Type == "kubectl_manifest":
		return kubectlManifest(o, v)
	case r.Type == "kubernetes_manifest":
		m, _ := v["manifest"].(map[string]any)
		if m == nil {
			return o, nil // unknown until applied
		}
		setIdentity(&o, str(m["apiVersion"]), str(m["kind"]), metaOf(m))
		o.Fields = ownership.FieldPaths(m)
		return o, nil
	case r.Type == "helm_release":
		o.Group, o.Kind, o.Name, o.Namespace = "helm.sh", "HelmRelease", str(v["name"]), str(v["namespace"])
		if o.Namespace == "" {
			o.Namespace = "default" // the provider's default
		}
		return o, nil
	case strings.HasPrefix(r.Type, "kubernetes_"):
		typedKubernetes(&o, v)
		return o, nil
	}
	return o, nil
}

// kubectlManifest reads gavinbunney/kubectl's kubectl_manifest: the
// identity from its api_version, kind, namespace and name attributes, the
// fields from the YAML body. yaml_body_parsed (the body with sensitive
// fields obfuscated) is preferred to yaml_body; only keys are read either
// way.
func kubectlManifest(o ownership.ManagedObject, v map[string]any) (ownership.ManagedObject, error) {
	body := str(v["yaml_body_parsed"])
	if body == "" {
		body = str(v["yaml_body"])
	}
	var m map[string]any
	if body != "" {
		if err := yaml.Unmarshal([]byte(body), &m); err != nil {
			// yaml.v3 quotes the offending text in its messages, which
			// may be a secret: say where, not what.
			return o, fmt.Errorf("%s: yaml_body is not a YAML mapping relcap can read", o.TerraformAddress)
		}
	}
	md := metaOf(m)
	if ns := str(v["namespace"]); ns != "" {
		md["namespace"] = ns
	}
	if ns := str(v["override_namespace"]); ns != "" {
		md["namespace"] = ns
	}
	if n := str(v["name"]); n != "" {
		md["name"] = n
	}
	apiVersion, kind := str(v["api_version"]), str(v["kind"])
	if apiVersion == "" {
		apiVersion = str(m["apiVersion"])
	}
	if kind == "" {
		kind = str(m["kind"])
	}
	setIdentity(&o, apiVersion, kind, md)
	o.Fields = ownership.FieldPaths(m)
	if l, ok := v["ignore_fields"].([]any); ok {
		for _, f := range l {
			if s := str(f); s != "" {
				o.IgnoredFields = append(o.IgnoredFields, s)
			}
		}
	}
	return o, nil
}

func setIdentity(o *ownership.ManagedObject, apiVersion, kind string, md map[string]any) {
	o.Group, o.Kind = ownership.GroupOf(apiVersion), kind
	o.Namespace, o.Name = str(md["namespace"]), str(md["name"])
}

// metaOf returns m's metadata (a copy is not needed: callers only add the
// identity keys the provider's attributes already say).
func metaOf(m map[string]any) map[string]any {
	if md, ok := m["metadata"].(map[string]any); ok {
		return md
	}
	return map[string]any{}
}

// str reads a string attribute; anything else is "".
func str(v any) string {
	s, _ := v.(string)
	return s
}

// kubeKind is the Kubernetes group and kind a typed kubernetes_* resource
// manages.
type kubeKind struct{ group, kind string }

// typedKinds maps the hashicorp/kubernetes provider's resource names
// (without "kubernetes_" and a version suffix) to what they manage.
var typedKinds = map[string]kubeKind{
	"deployment": {"apps", "Deployment"}, "stateful_set": {"apps", "StatefulSet"},
	"daemonset": {"apps", "DaemonSet"}, "daemon_set": {"apps", "DaemonSet"},
	"replication_controller": {"", "ReplicationController"}, "pod": {"", "Pod"},
	"namespace": {"", "Namespace"}, "service": {"", "Service"}, "service_account": {"", "ServiceAccount"},
	"default_service_account": {"", "ServiceAccount"},
	"config_map":              {"", "ConfigMap"}, "secret": {"", "Secret"}, "endpoints": {"", "Endpoints"},
	"persistent_volume_claim": {"", "PersistentVolumeClaim"}, "persistent_volume": {"", "PersistentVolume"},
	"limit_range": {"", "LimitRange"}, "resource_quota": {"", "ResourceQuota"},
	"role": {"rbac.authorization.k8s.io", "Role"}, "role_binding": {"rbac.authorization.k8s.io", "RoleBinding"},
	"cluster_role": {"rbac.authorization.k8s.io", "ClusterRole"}, "cluster_role_binding": {"rbac.authorization.k8s.io", "ClusterRoleBinding"},
	"ingress": {"networking.k8s.io", "Ingress"}, "ingress_class": {"networking.k8s.io", "IngressClass"},
	"network_policy":            {"networking.k8s.io", "NetworkPolicy"},
	"horizontal_pod_autoscaler": {"autoscaling", "HorizontalPodAutoscaler"},
	"job":                       {"batch", "Job"}, "cron_job": {"batch", "CronJob"},
	"pod_disruption_budget": {"policy", "PodDisruptionBudget"},
	"priority_class":        {"scheduling.k8s.io", "PriorityClass"},
	"storage_class":         {"storage.k8s.io", "StorageClass"}, "csi_driver": {"storage.k8s.io", "CSIDriver"},
	"runtime_class":                    {"node.k8s.io", "RuntimeClass"},
	"mutating_webhook_configuration":   {"admissionregistration.k8s.io", "MutatingWebhookConfiguration"},
	"validating_webhook_configuration": {"admissionregistration.k8s.io", "ValidatingWebhookConfiguration"},
	"api_service":                      {"apiregistration.k8s.io", "APIService"},
	"certificate_signing_request":      {"certificates.k8s.io", "CertificateSigningRequest"},
}

// typedVersion is the version suffix of typed resource names
// (kubernetes_deployment_v1, kubernetes_horizontal_pod_autoscaler_v2beta2).
var typedVersion = regexp.MustCompile(`_v\d+((alpha|beta)\d+)?$`)

// typedSkip are attributes of typed resources that steer the provider, not
// the object (as do all wait_for_* ones).
var typedSkip = map[string]bool{
	"id": true, "timeouts": true, "wait_for_rollout": true, "wait_for_load_balancer": true, "wait_for_completion": true,
	"wait_for_default_service_account": true, "status": true, "default_secret_name": true, "field_manager": true, "force": true,
	"api_version": true, "kind": true,
}

// listBlocks are the provider's repeated blocks and the Kubernetes list
// each one becomes; any other block is a single nested object that the
// provider stores as a list of one.
var listBlocks = map[string]string{
	"container": "containers", "init_container": "initContainers", "ephemeral_container": "ephemeralContainers",
	"port": "ports", "env": "env", "env_from": "envFrom", "volume": "volumes", "volume_mount": "volumeMounts",
	"toleration": "tolerations", "image_pull_secrets": "imagePullSecrets", "host_aliases": "hostAliases",
	"match_expressions": "matchExpressions", "rule": "rules", "path": "paths", "subject": "subjects",
	"ingress": "ingress", "egress": "egress", "from": "from", "to": "to", "tls": "tls", "metric": "metrics",
	"topology_spread_constraint": "topologySpreadConstraints", "volume_claim_template": "volumeClaimTemplates",
	"secret": "secrets", "webhook": "webhooks", "items": "items", "key_to_path": "items", "http": "http",
}

// typedKubernetes reads a hashicorp/kubernetes typed resource. The
// provider stores objects in Terraform's shape (snake_case, nested blocks
// as lists, defaults filled in); it is turned back into a manifest so its
// paths compare with Argo CD's. Zero values (the provider's defaults for
// unset attributes) are left out. The field-level resources
// (kubernetes_labels, kubernetes_annotations, kubernetes_config_map_v1_data)
// set only their keys of an object created by someone else.
func typedKubernetes(o *ownership.ManagedObject, v map[string]any) {
	name := typedVersion.ReplaceAllString(strings.TrimPrefix(o.TerraformType, "kubernetes_"), "")
	md, _ := single(v["metadata"]).(map[string]any)
	ident := func(apiVersion, kind string) {
		o.Group, o.Kind = ownership.GroupOf(apiVersion), kind
		o.Namespace, o.Name = str(md["namespace"]), str(md["name"])
	}
	switch name {
	case "labels", "annotations":
		ident(str(v["api_version"]), str(v["kind"]))
		for k := range asMap(v[name]) {
			o.Fields = append(o.Fields, ownership.FieldPaths(map[string]any{"metadata": map[string]any{name: map[string]any{k: ""}}})...)
		}
		for k := range asMap(v["template_annotations"]) {
			o.Fields = append(o.Fields, ownership.FieldPaths(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": map[string]any{k: ""}}}}})...)
		}
		return
	case "config_map_v1_data", "config_map_data":
		ident("v1", "ConfigMap")
		data := map[string]any{}
		for k := range asMap(v["data"]) {
			data[k] = ""
		}
		o.Fields = ownership.FieldPaths(map[string]any{"data": data})
		return
	}
	kk, ok := typedKinds[name]
	if !ok || md == nil {
		return // not a Kubernetes object relcap knows (kubernetes_env, …)
	}
	o.Group, o.Kind = kk.group, kk.kind
	o.Namespace, o.Name = str(md["namespace"]), str(md["name"])
	if name == "default_service_account" && o.Name == "" {
		o.Name = "default"
	}
	manifest := map[string]any{}
	for k, val := range v {
		if typedSkip[k] || strings.HasPrefix(k, "wait_for") {
			continue
		}
		if c := toManifest(k, val); c != nil {
			manifest[camelKey(k)] = c
		}
	}
	if name == "secret" {
		// Secret values are in state in clear; keys are all that is read,
		// and binary_data's too.
		for _, k := range []string{"data", "binaryData"} {
			if d, ok := manifest[k].(map[string]any); ok {
				for dk := range d {
					d[dk] = ""
				}
			}
		}
	}
	o.Fields = ownership.FieldPaths(manifest)
}

// toManifest converts one attribute value from Terraform's shape, or
// returns nil for a zero value.
func toManifest(key string, v any) any {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		if v == "" {
			return nil
		}
		return v
	case bool:
		if !v {
			return nil
		}
		return v
	case json.Number:
		if f, err := v.Float64(); err == nil && f == 0 {
			return nil
		}
		return v
	case float64:
		if v == 0 {
			return nil
		}
		return v
	case map[string]any:
		if len(v) == 0 {
			return nil
		}
		return v // labels, annotations, data, match_labels: user keys, kept as is
	case []any:
		if _, repeated := listBlocks[key]; !repeated && len(v) == 1 {
			if m, ok := v[0].(map[string]any); ok {
				return blockToManifest(m)
			}
		}
		var out []any
		for _, e := range v {
			if m, ok := e.(map[string]any); ok {
				if c := blockToManifest(m); c != nil {
					out = append(out, c)
				}
			} else if e != nil {
				out = append(out, e)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return v
}

func blockToManifest(m map[string]any) any {
	out := map[string]any{}
	for k, v := range m {
		if c := toManifest(k, v); c != nil {
			if plural, ok := listBlocks[k]; ok {
				out[plural] = c
			} else {
				out[camelKey(k)] = c
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// camelKey turns the provider's snake_case attribute names into the
// Kubernetes API's camelCase, pluralising repeated blocks.
func camelKey(k string) string {
	if p, ok := listBlocks[k]; ok {
		return p
	}
	parts := strings.Split(k, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// single unwraps a nested block stored as a list of one.
func single(v any) any {
	if l, ok := v.([]any); ok && len(l) == 1 {
		return l[0]
	}
	return v
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// learnStateSecrets teaches secrets every value a `terraform show -json`
// state marks sensitive, and sensitive outputs.
func learnStateSecrets(secrets *secret.Set, st *tfjson.State) {
	if secrets == nil || st == nil || st.Values == nil {
		return
	}
	for _, o := range st.Values.Outputs {
		if o != nil && o.Sensitive {
			learnValue(secrets, o.Value)
		}
	}
	var walk func(m *tfjson.StateModule)
	walk = func(m *tfjson.StateModule) {
		if m == nil {
			return
		}
		for _, r := range m.Resources {
			if r == nil || len(r.SensitiveValues) == 0 {
				continue
			}
			var shape any
			if json.Unmarshal(r.SensitiveValues, &shape) == nil {
				learnSensitive(secrets, any(r.AttributeValues), shape)
			}
		}
		for _, c := range m.ChildModules {
			walk(c)
		}
	}
	walk(st.Values.RootModule)
}
