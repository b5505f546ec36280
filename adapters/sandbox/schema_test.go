package sandbox

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/relcap/relcap/workflow/config"
)

// TestDemoConfigMatchesTheSchema: the relcap.yaml relcap demo writes is
// accepted by the JSON Schema editors check relcap.yaml with
// (docs/relcap.schema.json), with and without a terraform binary.
func TestDemoConfigMatchesTheSchema(t *testing.T) {
	t.Parallel()
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "..", config.SchemaFile))
	require.NoError(t, err)
	for _, binary := range []string{"", "/usr/local/bin/terraform"} {
		dir := t.TempDir()
		s := &Sandbox{Dir: dir, Config: filepath.Join(dir, ConfigFile), OwnershipFile: filepath.Join(dir, OwnerFile),
			Registry: "127.0.0.1:5000", ArgoCD: "127.0.0.1:8080", TokenEnv: TokenEnv}
		require.NoError(t, s.writeConfig(binary))
		data, err := os.ReadFile(s.Config)
		require.NoError(t, err)
		var v any
		require.NoError(t, yaml.Unmarshal(data, &v))
		j, err := json.Marshal(v)
		require.NoError(t, err)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		require.NoError(t, err)
		require.NoError(t, sch.Validate(inst), "binary %q", binary)
	}
}
