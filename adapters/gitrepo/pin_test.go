package gitrepo

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
)

const webRepo = "registry.example.com/staging/web"

func digest(t testing.TB, c string) image.Digest {
	t.Helper()
	d, err := image.ParseDigest("sha256:" + strings.Repeat(c, 64))
	require.NoError(t, err)
	return d
}

const kustomization = `---
# Staging overlay for web. Keep this comment.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization

resources:
- ../base   # shared manifests

images:
# the web image, pinned by relcap
- name: web
  newTag: "1.2.3" # moved by hand once
- name: sidecar # not ours
  newTag: v7
`

func TestPinKustomizeKeepsCommentsAndLayout(t *testing.T) {
	t.Parallel()
	d := digest(t, "a")
	out, err := PinKustomize([]byte(kustomization), "web", webRepo, d)
	require.NoError(t, err)
	want := strings.Replace(kustomization, `  newTag: "1.2.3" # moved by hand once
`, `  newName: registry.example.com/staging/web
  digest: `+d.String()+`
`, 1)
	require.Equal(t, want, string(out), "only the pin lines change; comments, blank lines, the --- marker and sequence indentation stay")

	again, err := PinKustomize(out, "web", webRepo, d)
	require.NoError(t, err)
	require.Equal(t, string(out), string(again), "pinning twice changes nothing")

	ref, err := CurrentPin(out, workflow.EnvRepoTarget{Format: workflow.FormatKustomize, Image: "web"}, webRepo)
	require.NoError(t, err)
	require.Equal(t, Ref{Repository: webRepo, Digest: d}, ref)
	require.Equal(t, webRepo+"@"+d.String(), ref.String())
}

func TestPinKustomizeCases(t *testing.T) {
	t.Parallel()
	d, old := digest(t, "b"), digest(t, "c")
	cases := []struct {
		name, in, image, newName, want string
	}{
		{
			name:  "replaces an old digest and newName, removes newTag",
			in:    "images:\n  - name: web\n    newName: old.example.com/web\n    newTag: v1\n    digest: " + old.String() + "\n",
			image: "web", newName: webRepo,
			want: "images:\n  - name: web\n    newName: " + webRepo + "\n    digest: " + d.String() + "\n",
		},
		{
			name:  "leaves newName out when it equals name",
			in:    "images:\n- name: " + webRepo + "\n  newName: elsewhere.example.com/web\n  newTag: v1\n",
			image: webRepo, newName: webRepo,
			want: "images:\n- name: " + webRepo + "\n  digest: " + d.String() + "\n",
		},
		{
			name:  "keeps quoting style of the values it replaces",
			in:    "images:\n- name: 'web'\n  newName: \"old.example.com/web\"\n  digest: 'sha256:00'\n",
			image: "web", newName: webRepo,
			want: "images:\n- name: 'web'\n  newName: \"" + webRepo + "\"\n  digest: '" + d.String() + "'\n",
		},
		{
			name:  "four-space indentation and CRLF line ends",
			in:    "images:\r\n    -   name: web\r\n        newTag: v1\r\nresources:\r\n    - a.yaml\r\n",
			image: "web", newName: webRepo,
			want: "images:\r\n    -   name: web\r\n        newName: " + webRepo + "\r\n        digest: " + d.String() + "\r\nresources:\r\n    - a.yaml\r\n",
		},
		{
			name:  "a flow-style entry is re-encoded, still pinned",
			in:    "images: [{name: web, newTag: v1}]\n",
			image: "web", newName: webRepo,
			want: "images: [{name: web, newName: " + webRepo + ", digest: '" + d.String() + "'}]\n",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, err := PinKustomize([]byte(c.in), c.image, c.newName, d)
			require.NoError(t, err)
			require.Equal(t, c.want, string(out))
			ref, err := CurrentPin(out, workflow.EnvRepoTarget{Format: workflow.FormatKustomize, Image: c.image}, c.newName)
			require.NoError(t, err)
			require.Equal(t, d, ref.Digest)
			require.Empty(t, ref.Tag)
		})
	}
}

func TestPinKustomizeRefuses(t *testing.T) {
	t.Parallel()
	d := digest(t, "d")
	cases := []struct {
		name, in, image string
		d               image.Digest
		msg             string
	}{
		{"zero digest", kustomization, "web", image.Digest{}, "no digest to pin"},
		{"no entry", kustomization, "api", d, "line 9: no images entry named api; add one or fix envrepo.image"},
		{"no images list", "resources: [a.yaml]\n", "web", d, "no images entry named web (the file has no images list); add one or fix envrepo.image"},
		{"two entries", "images:\n- name: web\n- name: web\n", "web", d, "two images entries named web (lines 2 and 3); keep one"},
		{"images is a map", "images: {web: x}\n", "web", d, "images is a map, want a list of entries"},
		{"not YAML", "images: [\n", "web", d, "not valid YAML"},
		{"duplicate keys", "images: []\nimages: []\n", "web", d, "not valid YAML"},
		{"top level list", "- a\n", "web", d, "the top level is a list, want a map"},
		{"empty", "", "web", d, "want one YAML document in a kustomization, found 0"},
		{"no image name", kustomization, "", d, "no image name given"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := PinKustomize([]byte(c.in), c.image, webRepo, c.d)
			require.ErrorIs(t, err, fault.ErrUsage)
			require.ErrorContains(t, err, c.msg)
			var ee *EditError
			require.True(t, errors.As(err, &ee))
		})
	}
	_, err := PinKustomize([]byte(kustomization), "web", webRepo+":v1", d)
	require.ErrorContains(t, err, "carries a tag or digest")
}

const values = `# values for web in staging
replicaCount: 2

image:
    # the chart renders repository@digest when digest is set
    repository: proxy
    tag: "1.25"
    pullPolicy: IfNotPresent

service:
    port: 80
`

func TestPinHelmValues(t *testing.T) {
	t.Parallel()
	d := digest(t, "e")
	cases := []struct {
		name, in, path, want string
	}{
		{
			name: "digest key: sets it beside repository, keeps comments and blank lines",
			in:   values, path: "image.digest",
			want: strings.Replace(values, "    repository: proxy\n", "    repository: "+webRepo+"\n    digest: "+d.String()+"\n", 1),
		},
		{
			name: "digest key splits the repository over a registry key",
			in:   "image:\n  registry: mirror.example.com\n  repository: team/proxy\n  digest: \"\"\n",
			path: "image.digest",
			want: "image:\n  registry: registry.example.com\n  repository: staging/web\n  digest: \"" + d.String() + "\"\n",
		},
		{
			name: "digest key without repository pins the digest alone",
			in:   "image:\n  pullPolicy: Always\n",
			path: "image.digest",
			want: "image:\n  pullPolicy: Always\n  digest: " + d.String() + "\n",
		},
		{
			name: "other leaf gets the whole reference",
			in:   "web:\n  image: proxy:1.25 # was a tag\n",
			path: "web.image",
			want: "web:\n  image: " + webRepo + "@" + d.String() + " # was a tag\n",
		},
		{
			name: "missing maps are created with the file's indentation",
			in:   values, path: "web.sidecar.image",
			want: values + "web:\n    sidecar:\n        image: " + webRepo + "@" + d.String() + "\n",
		},
		{
			name: "empty file",
			in:   "", path: "image.ref",
			want: "image:\n  ref: " + webRepo + "@" + d.String() + "\n",
		},
		{
			name: "null map is replaced",
			in:   "image:\nother: 1\n", path: "image.digest",
			want: "image:\n  digest: " + d.String() + "\nother: 1\n",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, err := PinHelmValues([]byte(c.in), c.path, webRepo, d)
			require.NoError(t, err)
			require.Equal(t, c.want, string(out))
			again, err := PinHelmValues(out, c.path, webRepo, d)
			require.NoError(t, err)
			require.Equal(t, string(out), string(again))
			ref, err := CurrentPin(out, workflow.EnvRepoTarget{Format: workflow.FormatHelmValues, ValuesPath: c.path}, webRepo)
			require.NoError(t, err)
			require.Equal(t, d, ref.Digest)
		})
	}
}

func TestPinHelmValuesRefuses(t *testing.T) {
	t.Parallel()
	d := digest(t, "f")
	cases := []struct{ name, in, path, msg string }{
		{"tag leaf", values, "image.tag", "values path image.tag names a tag"},
		{"scalar on the path", "image: proxy\n", "image.digest", "line 1: values path image.digest: image is a scalar, want a map"},
		{"leaf is a map", values, "image", "values path image is a map, want a string"},
		{"empty segment", values, "image..digest", "want dotted keys"},
		{"two documents", "a: 1\n---\nb: 2\n", "image.digest", "want one YAML document in a values file, found 2"},
		{"top level list", "- 1\n", "image.digest", "the top level is a list"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := PinHelmValues([]byte(c.in), c.path, webRepo, d)
			require.ErrorIs(t, err, fault.ErrUsage)
			require.ErrorContains(t, err, c.msg)
		})
	}
	_, err := PinHelmValues([]byte(values), "image.digest", webRepo, image.Digest{})
	require.ErrorIs(t, err, fault.ErrUsage)
}

const manifest = `---
# web, all workload shapes relcap meets
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      initContainers:
        - name: migrate
          image: web:1.2.3   # same image, runs migrations
      containers:
        - name: web
          image: registry.example.com/staging/web@sha256:0000000000000000000000000000000000000000000000000000000000000000
        - name: proxy
          image: mesh-proxy:v1.30 # not ours

---
apiVersion: batch/v1
kind: CronJob
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - image: "web"
`

func TestPinManifest(t *testing.T) {
	t.Parallel()
	d := digest(t, "1")
	out, err := PinManifest([]byte(manifest), "web", webRepo, d)
	require.NoError(t, err)
	ref := webRepo + "@" + d.String()
	want := strings.NewReplacer(
		"image: web:1.2.3   #", "image: "+ref+"   #",
		"image: registry.example.com/staging/web@sha256:0000000000000000000000000000000000000000000000000000000000000000", "image: "+ref,
		`image: "web"`, `image: "`+ref+`"`,
	).Replace(manifest)
	require.Equal(t, want, string(out))
	require.Contains(t, string(out), "image: mesh-proxy:v1.30 # not ours")

	again, err := PinManifest(out, "web", webRepo, d)
	require.NoError(t, err)
	require.Equal(t, string(out), string(again))

	got, err := CurrentPin(out, workflow.EnvRepoTarget{Format: workflow.FormatManifest, Image: "web"}, webRepo)
	require.NoError(t, err)
	require.Equal(t, Ref{Repository: webRepo, Digest: d}, got)

	_, err = CurrentPin([]byte(manifest), workflow.EnvRepoTarget{Format: workflow.FormatManifest, Image: "web"}, webRepo)
	require.ErrorContains(t, err, "containers pin different references")

	_, err = PinManifest([]byte(manifest), "api", "registry.example.com/staging/api", d)
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, "no container image named api or registry.example.com/staging/api; fix envrepo.image")
}

func TestPinManifestShapes(t *testing.T) {
	t.Parallel()
	d := digest(t, "2")
	for _, in := range []string{
		"kind: Pod\nspec:\n  containers:\n  - image: web:1\n",
		"kind: StatefulSet\nspec:\n  template:\n    spec:\n      containers:\n      - image: web\n",
		"kind: DaemonSet\nspec:\n  template:\n    spec:\n      initContainers:\n      - image: web@sha256:00\n",
		"kind: Job\nspec:\n  template:\n    spec:\n      containers: [{name: a, image: 'web:2'}]\n",
		"kind: List\nitems:\n- kind: Pod\n  spec:\n    containers:\n    - image: localhost:5000/x\n    - image: web\n",
	} {
		out, err := PinManifest([]byte(in), "web", webRepo, d)
		require.NoError(t, err, in)
		require.Contains(t, string(out), webRepo+"@"+d.String(), in)
		require.NotContains(t, string(out), "web:", in)
	}
}

func TestCurrentPinReadsTagOnlyReferences(t *testing.T) {
	t.Parallel()
	ref, err := CurrentPin([]byte(kustomization), workflow.EnvRepoTarget{Format: workflow.FormatKustomize, Image: "web"}, webRepo)
	require.NoError(t, err)
	require.Equal(t, Ref{Repository: "web", Tag: "1.2.3"}, ref)
	require.True(t, ref.Digest.IsZero())

	helm := workflow.EnvRepoTarget{Format: workflow.FormatHelmValues, ValuesPath: "image.digest"}
	ref, err = CurrentPin([]byte("image:\n  repository: r\n  tag: v1\n"), helm, webRepo)
	require.NoError(t, err)
	require.Equal(t, Ref{Repository: "r", Tag: "v1"}, ref, "no digest key: the tag-only reference")

	_, err = CurrentPin([]byte("image:\n  repository: r\n  digest: sha256:00\n"), helm, webRepo)
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, `"sha256:00" is not a digest`)

	_, err = CurrentPin(nil, workflow.EnvRepoTarget{Format: "jsonnet"}, webRepo)
	require.ErrorContains(t, err, `unknown envrepo format "jsonnet"`)
}
