package gitrepo

import (
	"testing"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/image"
)

// The editors take whatever an environment repository holds. On any input
// they must not panic, and when they succeed the file must read back as
// pinning the digest, and pinning it again must change nothing (Pin's
// idempotency rests on that).

func fuzzDigest(t testing.TB) image.Digest {
	d, err := image.ParseDigest("sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func checkPinned(t *testing.T, target workflow.EnvRepoTarget, webRepo string, d image.Digest, out []byte) {
	t.Helper()
	ref, err := CurrentPin(out, target, webRepo)
	if err != nil {
		t.Fatalf("pinned file does not read back: %v\n%s", err, out)
	}
	if ref.Digest != d {
		t.Fatalf("pinned file reads back as %q, want digest %s\n%s", ref, d, out)
	}
	again, err := PinFile(out, target, webRepo, d)
	if err != nil {
		t.Fatalf("pinning again: %v\n%s", err, out)
	}
	if string(again) != string(out) {
		t.Fatalf("pinning again changed the file:\n%s\n---- to ----\n%s", out, again)
	}
}

func FuzzPinKustomize(f *testing.F) {
	for _, s := range []string{
		kustomization,
		"images:\n  - name: web\n    newName: old.example.com/web\n    newTag: v1\n",
		"images: [{name: web, newTag: v1}]\n",
		"images:\r\n- name: web\r\n  newTag: v1\r\n",
		"images:\n- name: web\n  digest: &d sha256:00\n- name: x\n  digest: *d\n",
		"images:\n- name: web\n  newTag: |\n    v1\n",
		"images:\n- newTag: v1\n  name: web # first\n",
		"images:\n- name: web\n  newTag: v1 # c\n  # foot\nresources: []\n",
	} {
		f.Add(s, "web", webRepo)
	}
	f.Add("images:\n- name: \"web:x\"\n", "web:x", "localhost:5000/w")
	d := fuzzDigest(f)
	f.Fuzz(func(t *testing.T, data, image, newName string) {
		// The given names, then names that pass validation, so the
		// fuzzer's effort goes into the file.
		for _, names := range [][2]string{{image, newName}, {"web", webRepo}, {"web", "web"}} {
			out, err := PinKustomize([]byte(data), names[0], names[1], d)
			if err != nil {
				continue
			}
			if names[1] == "" {
				names[1] = names[0]
			}
			checkPinned(t, workflow.EnvRepoTarget{Format: workflow.FormatKustomize, Image: names[0]}, names[1], d, out)
		}
	})
}

func FuzzPinHelmValues(f *testing.F) {
	for _, s := range []string{
		values,
		"",
		"image:\n",
		"image:\n  registry: mirror.example.com\n  repository: team/proxy\n  digest: \"\"\n",
		"web:\n  image: proxy:1.25 # was a tag\n",
		"image: {repository: x}\n",
		"a: &a {digest: x}\nb: *a\n",
		"# only a comment",
		"---\n",
	} {
		f.Add(s, "image.digest", webRepo)
		f.Add(s, "web.image", webRepo)
	}
	d := fuzzDigest(f)
	f.Fuzz(func(t *testing.T, data, path, r string) {
		for _, args := range [][2]string{{path, r}, {path, webRepo}, {"image.digest", webRepo}, {"image.ref", webRepo}} {
			out, err := PinHelmValues([]byte(data), args[0], args[1], d)
			if err != nil {
				continue
			}
			checkPinned(t, workflow.EnvRepoTarget{Format: workflow.FormatHelmValues, ValuesPath: args[0]}, args[1], d, out)
		}
	})
}

func FuzzPinManifest(f *testing.F) {
	for _, s := range []string{
		manifest,
		"kind: Pod\nspec:\n  containers:\n  - image: web:1\n",
		"kind: Job\nspec:\n  template:\n    spec:\n      containers: [{name: a, image: 'web:2'}]\n",
		"kind: List\nitems:\n- spec:\n    containers:\n    - image: localhost:5000/x\n    - image: web\n",
		"a: &c\n  containers:\n  - image: web\nb: *c\n",
		"---\n---\nspec:\n  initContainers:\n  - image: \"web@sha256:00\"\n...\n",
	} {
		f.Add(s, "web", webRepo)
	}
	d := fuzzDigest(f)
	f.Fuzz(func(t *testing.T, data, image, r string) {
		for _, names := range [][2]string{{image, r}, {"web", webRepo}} {
			out, err := PinManifest([]byte(data), names[0], names[1], d)
			if err != nil {
				continue
			}
			checkPinned(t, workflow.EnvRepoTarget{Format: workflow.FormatManifest, Image: names[0]}, names[1], d, out)
		}
	})
}
