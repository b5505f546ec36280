package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/relcap/relcap/workflow/config"
)

// TestLabConfigMatchesTheSchema: every relcap.yaml relcap-lab up writes
// (plaintext or TLS Argo CD, with Gitea's pull requests, with rehearsal
// keys) is accepted by docs/relcap.schema.json.
func TestLabConfigMatchesTheSchema(t *testing.T) {
	t.Parallel()
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "..", config.SchemaFile))
	require.NoError(t, err)
	plain := testLab()
	tls := testLab()
	tls.ArgoCAFile = "/tmp/lab/pki/ca.crt"
	rehearse := testLab()
	rehearse.Rehearsal, rehearse.UnreadyDigest = &Rehearsal{Self: "/cache/bin/relcap-lab"}, "sha256:"+string(bytes.Repeat([]byte("ab"), 32))
	gitea := testLab()
	gitea.Gitea = &GiteaState{URL: "http://127.0.0.1:3000", RepoURL: "http://127.0.0.1:3000/captain/env", CloneURL: "http://127.0.0.1:3000/captain/env.git"}
	for name, l := range map[string]Lab{"plaintext": plain, "tls": tls, "rehearsal": rehearse, "gitea": gitea} {
		data := []byte(RenderRelcapConfig(l))
		_, err := config.Parse(filepath.Join(l.Dir, "relcap.yaml"), data)
		require.NoError(t, err, name)
		var v any
		require.NoError(t, yaml.Unmarshal(data, &v))
		j, err := json.Marshal(v)
		require.NoError(t, err)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		require.NoError(t, err)
		require.NoError(t, sch.Validate(inst), name)
	}
}
