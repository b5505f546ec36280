package argosim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

const testDigest = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"

func TestRenderReadsThePinnedImagesOfEachFormat(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file, data string
		want             []string
		deployment       string
	}{
		{
			name: "kustomize digest", file: "apps/web/kustomization.yaml",
			data: "images:\n  - name: web\n    newName: registry.example.com/web\n    digest: " + testDigest + "\n",
			want: []string{"registry.example.com/web@" + testDigest}, deployment: "web",
		},
		{
			name: "kustomize tag without newName", file: "kustomization.yml",
			data: "images:\n- name: nginx\n  newTag: '1.27'\n",
			want: []string{"nginx:1.27"}, deployment: "web",
		},
		{
			name: "helm values with registry and digest", file: "values.yaml",
			data: "replicaCount: 2\nimage:\n  registry: registry.example.com\n  repository: team/web\n  digest: " + testDigest + "\n  tag: ignored\n",
			want: []string{"registry.example.com/team/web@" + testDigest}, deployment: "web",
		},
		{
			name: "manifest names its deployment", file: "deploy.yaml",
			data: "apiVersion: v1\nkind: Service\nmetadata: {name: svc}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api}\n" +
				"spec:\n  template:\n    spec:\n      initContainers: [{name: init, image: busybox:1}]\n      containers:\n      - name: api\n        image: registry.example.com/api@" + testDigest + "\n",
			want: []string{"busybox:1", "registry.example.com/api@" + testDigest}, deployment: "api",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			format := formatOf(tc.file, []byte(tc.data))
			r, err := render("abc", []byte(tc.data), renderOptions{format: format, name: "web", namespace: "ns", replicas: 1})
			require.NoError(t, err)
			require.ElementsMatch(t, tc.want, r.images)
			require.Equal(t, tc.deployment, r.meta("name", "web"))
			require.Contains(t, r.json, `"kind":"Deployment"`)
		})
	}
}

func TestRenderRefusesAFileWithoutImages(t *testing.T) {
	t.Parallel()
	_, err := render("abc", []byte("resources: [a.yaml]\n"), renderOptions{format: "kustomize", name: "web"})
	require.ErrorContains(t, err, "pins no image")
	_, err = render("abc", []byte("images: [\n"), renderOptions{format: "kustomize", name: "web"})
	require.ErrorContains(t, err, "parse kustomization")
}

func TestDriftEditsTheLiveObject(t *testing.T) {
	t.Parallel()
	r, err := render("abc", []byte("images:\n- name: web\n  newName: r.example.com/web\n  digest: "+testDigest+"\n"), renderOptions{format: "kustomize", name: "web", namespace: "ns", replicas: 2})
	require.NoError(t, err)

	d, err := r.withDrift("spec.replicas")
	require.NoError(t, err)
	require.Contains(t, d.json, `"replicas":5`)
	require.Equal(t, r.images, d.images)

	d, err = r.withDrift("image")
	require.NoError(t, err)
	require.Equal(t, []string{"r.example.com/web:hand-patched"}, d.images)

	d, err = r.withDrift("metadata.labels.team")
	require.NoError(t, err)
	require.Contains(t, d.json, `"team":"drifted-by-hand"`)

	_, err = r.withDrift("spec.template.spec.containers[3].image")
	require.ErrorContains(t, err, "no element 3")
	require.NotContains(t, r.json, "hand", "drift never edits the target")
}

func TestMergePatchFollowsRFC7386(t *testing.T) {
	t.Parallel()
	out, err := mergePatch([]byte(`{"a":{"b":1,"c":2},"d":[1]}`), []byte(`{"a":{"b":null,"e":3},"d":[2]}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"a":{"c":2,"e":3},"d":[2]}`, string(out))
}
