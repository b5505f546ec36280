package terraform

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
)

// genSecret prefixes every sensitive value the generator writes, so a test
// can assert that none reaches a summary.
const genSecret = "S3CR3T-"

// genDoc is a generated `terraform show -json` plan document and what it
// should review to.
type genDoc struct {
	data      []byte
	resources int
	// want counts by action, as tfplan.Counts names them.
	create, update, del, replaceDF, replaceCF, read, noop int
	outputs                                               int
}

var (
	gen10kOnce sync.Once
	gen10k     genDoc
)

// generated10k returns one 10,000-resource document, built once per test
// binary.
func generated10k() genDoc {
	gen10kOnce.Do(func() { gen10k = generatePlan(10_000, 1) })
	return gen10k
}

// generatePlan builds a realistic plan document for n resource instances:
// mixed creates, updates, replacements both ways, deletes, data reads and
// no-ops; resources spread over nested modules; nested blocks, maps, lists,
// long strings, unknown values and sensitive values (marked in
// before_sensitive/after_sensitive); and the planned_values, prior_state and
// configuration sections a real document carries, which a review must skip
// quickly.
func generatePlan(n int, seed uint64) genDoc {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := genDoc{resources: n}
	var changes, planned, prior []any
	types := []string{"aws_instance", "aws_security_group", "aws_s3_bucket", "aws_iam_role", "aws_db_instance", "aws_lb_target_group", "google_storage_bucket", "aws_route53_record"}
	configResources := map[string]any{}
	for i := range n {
		typ := types[r.IntN(len(types))]
		name := fmt.Sprintf("r%d", i)
		module := ""
		if i%3 != 0 {
			module = fmt.Sprintf("module.svc%d", i%17)
			if i%5 == 0 {
				module += fmt.Sprintf(".module.inner%d", i%4)
			}
		}
		addr := typ + "." + name
		if module != "" {
			addr = module + "." + addr
		}
		mode := "managed"
		before := genValues(r, typ, i, 0)
		after := genValues(r, typ, i, 1)
		beforeSens := genSensitive(typ)
		afterSens := genSensitive(typ)
		afterUnknown := map[string]any{}
		var actions []string
		var replacePaths []any
		switch p := r.IntN(100); {
		case p < 40:
			actions = []string{"create"}
			before, beforeSens = nil, false
			afterUnknown = map[string]any{"id": true, "arn": true}
			delete(after, "id")
			delete(after, "arn")
			g.create++
		case p < 65:
			actions = []string{"update"}
			after["id"], after["arn"] = before["id"], before["arn"]
			g.update++
		case p < 75:
			actions = []string{"delete", "create"}
			replacePaths = []any{[]any{"name"}, []any{"tags", "Name"}}
			afterUnknown = map[string]any{"id": true, "arn": true}
			g.replaceDF++
		case p < 80:
			actions = []string{"create", "delete"}
			replacePaths = []any{[]any{"ingress", 0, "from_port"}}
			afterUnknown = map[string]any{"id": true}
			g.replaceCF++
		case p < 90:
			actions = []string{"delete"}
			after, afterSens, afterUnknown = nil, false, nil
			g.del++
		case p < 95:
			actions = []string{"read"}
			mode = "data"
			addr = strings.Replace(addr, typ+".", "data."+typ+".", 1)
			before, beforeSens = nil, false
			g.read++
		default:
			actions = []string{"no-op"}
			after = before
			afterSens = beforeSens
			g.noop++
		}
		change := map[string]any{
			"actions":          actions,
			"before":           before,
			"after":            after,
			"after_unknown":    afterUnknown,
			"before_sensitive": beforeSens,
			"after_sensitive":  afterSens,
		}
		if after == nil {
			change["after_unknown"] = false
		}
		if replacePaths != nil {
			change["replace_paths"] = replacePaths
		}
		rc := map[string]any{
			"address":       addr,
			"mode":          mode,
			"type":          typ,
			"name":          name,
			"provider_name": "registry.terraform.io/hashicorp/" + strings.SplitN(typ, "_", 2)[0],
			"change":        change,
		}
		if module != "" {
			rc["module_address"] = module
		}
		if len(actions) == 2 {
			rc["action_reason"] = "replace_because_cannot_update"
		}
		changes = append(changes, rc)
		if after != nil {
			planned = append(planned, map[string]any{
				"address": addr, "mode": mode, "type": typ, "name": name,
				"provider_name": rc["provider_name"], "schema_version": 1,
				"values": after, "sensitive_values": afterSens,
			})
		}
		if before != nil {
			prior = append(prior, map[string]any{
				"address": addr, "mode": mode, "type": typ, "name": name,
				"provider_name": rc["provider_name"], "schema_version": 1,
				"values": before, "sensitive_values": beforeSens,
			})
		}
		if _, ok := configResources[typ]; !ok {
			configResources[typ] = map[string]any{
				"address": typ + ".x", "mode": "managed", "type": typ, "name": "x",
				"provider_config_key": "aws",
				"expressions": map[string]any{
					"name": map[string]any{"references": []any{"var.env", "local.prefix"}},
					"tags": map[string]any{"constant_value": map[string]any{"team": "platform"}},
				},
				"schema_version": 1,
			}
		}
	}
	outputs := map[string]any{}
	for i := range 20 {
		sens := i%4 == 0
		var before, after any = fmt.Sprintf("out-%d-old", i), fmt.Sprintf("out-%d-new", i)
		if sens {
			before, after = genSecret+"out-old", genSecret+"out-new"
		}
		actions := []string{"update"}
		if i%5 == 4 {
			actions = []string{"no-op"}
			after = before
		} else {
			g.outputs++
		}
		outputs[fmt.Sprintf("output_%02d", i)] = map[string]any{
			"actions": actions, "before": before, "after": after,
			"after_unknown": false, "before_sensitive": sens, "after_sensitive": sens,
		}
	}
	var cfgList []any
	for _, v := range configResources {
		cfgList = append(cfgList, v)
	}
	doc := map[string]any{
		"format_version":    "1.2",
		"terraform_version": "1.11.4",
		"variables": map[string]any{
			"env":         map[string]any{"value": "prod"},
			"db_password": map[string]any{"value": genSecret + "db-password"},
		},
		"planned_values":   map[string]any{"root_module": map[string]any{"resources": planned}},
		"resource_changes": changes,
		"output_changes":   outputs,
		"prior_state": map[string]any{
			"format_version": "1.0", "terraform_version": "1.11.4",
			"values": map[string]any{"root_module": map[string]any{"resources": prior}},
		},
		"configuration": map[string]any{
			"provider_config": map[string]any{"aws": map[string]any{"name": "aws", "full_name": "registry.terraform.io/hashicorp/aws"}},
			"root_module":     map[string]any{"resources": cfgList},
		},
		"relevant_attributes": []any{},
		"timestamp":           "2026-01-01T00:00:00Z",
		"applyable":           true,
		"complete":            true,
		"errored":             false,
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err) // test helper: the generator's own values always marshal
	}
	g.data = b
	return g
}

// genValues is one resource's attribute values, version v (0 before, 1
// after): some attributes change between versions, most do not.
func genValues(r *rand.Rand, typ string, i, v int) map[string]any {
	ingress := make([]any, 1+i%3)
	for j := range ingress {
		ingress[j] = map[string]any{
			"from_port":   443 + j + v*(i%2),
			"to_port":     443 + j,
			"protocol":    "tcp",
			"cidr_blocks": []any{"10.0.0.0/8", fmt.Sprintf("172.%d.0.0/16", 16+j)},
			"description": "https from the internal networks",
		}
	}
	vals := map[string]any{
		"id":   fmt.Sprintf("%s-%08x", typ, i),
		"arn":  fmt.Sprintf("arn:aws:service:eu-west-1:123456789012:%s/%08x", typ, i),
		"name": fmt.Sprintf("web-%d-v%d", i, v*(i%2)),
		"tags": map[string]any{
			"Name": fmt.Sprintf("web-%d", i), "team": "platform", "env": "prod",
			"cost-center": "cc-1234", "release": fmt.Sprintf("r%d", v),
		},
		"tags_all":               map[string]any{"Name": fmt.Sprintf("web-%d", i), "team": "platform", "env": "prod"},
		"ingress":                ingress,
		"egress":                 []any{map[string]any{"from_port": 0, "to_port": 0, "protocol": "-1", "cidr_blocks": []any{"0.0.0.0/0"}}},
		"instance_type":          []string{"t3.micro", "t3.small"}[v],
		"ami":                    "ami-0abcdef1234567890",
		"user_data":              strings.Repeat("#!/bin/bash\necho provisioning node; ", 6),
		"monitoring":             true,
		"ebs_optimized":          i%2 == 0,
		"availability_zone":      "eu-west-1a",
		"subnet_id":              fmt.Sprintf("subnet-%06x", i%97),
		"vpc_security_group_ids": []any{"sg-0123456789", "sg-9876543210"},
		"root_block_device": []any{map[string]any{
			"volume_size": 20 + 10*v, "volume_type": "gp3", "encrypted": true,
			"iops": 3000, "throughput": 125, "delete_on_termination": true,
			"tags": map[string]any{"backup": "daily"},
		}},
		"metadata_options": []any{map[string]any{"http_tokens": "required", "http_endpoint": "enabled", "http_put_response_hop_limit": 1}},
		"timeouts":         nil,
		"weight":           r.IntN(100),
		"password":         fmt.Sprintf("%spw-%d-%d", genSecret, i, v),
		"connection": map[string]any{
			"host": "db.internal", "user": "app", "token": fmt.Sprintf("%stoken-%d", genSecret, v),
		},
	}
	return vals
}

// genSensitive marks password wholly and one key of connection sensitive, as
// a provider schema and a sensitive variable would.
func genSensitive(string) any {
	return map[string]any{
		"password":   true,
		"connection": map[string]any{"token": true},
		"tags":       map[string]any{},
		"ingress":    []any{},
	}
}
