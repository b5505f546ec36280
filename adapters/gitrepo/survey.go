package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"gopkg.in/yaml.v3"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/setup"
)

var _ setup.EnvRepoFinder = Surveyor{}

// Surveyor finds environment repositories for relcap init: Git
// repositories beside the release repository (../env) or in it (a bare
// env.git, a checked-out submodule), and directories of the release
// repository itself, that hold kustomizations, Helm values or manifests.
// A bare repository is read at its HEAD; a checkout as it is on disk.
type Surveyor struct{}

// Limits of one survey: an environment repository is small; anything
// bigger is not read whole.
const (
	maxSurveyFiles = 5000
	maxSurveySize  = 512 << 10
)

// EnvRepos surveys the candidates near a release repository, siblings
// first, and returns those holding any file that pins an image or any
// Argo CD Application.
func (Surveyor) EnvRepos(ctx context.Context, near string) ([]setup.EnvRepo, error) {
	var out []setup.EnvRepo
	for _, dir := range candidates(near) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r, err := survey(dir)
		if err != nil {
			continue // not a repository after all, or unreadable
		}
		if len(r.Files) > 0 || len(r.Apps) > 0 {
			out = append(out, r)
		}
	}
	return out, nil
}

// candidates are the Git repositories beside near, then the directories
// in near (repositories or not), and repositories one level further down
// (git/env.git).
func candidates(near string) []string {
	var out []string
	parent := filepath.Dir(near)
	if entries, err := os.ReadDir(parent); err == nil && parent != near {
		for _, e := range entries {
			p := filepath.Join(parent, e.Name())
			if e.IsDir() && p != near && isRepo(p) {
				out = append(out, p)
			}
		}
	}
	if entries, err := os.ReadDir(near); err == nil {
		for _, e := range entries {
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p := filepath.Join(near, e.Name())
			out = append(out, p)
			if isRepo(p) {
				continue
			}
			inner, _ := os.ReadDir(p)
			for _, ie := range inner {
				if q := filepath.Join(p, ie.Name()); ie.IsDir() && isRepo(q) {
					out = append(out, q)
				}
			}
		}
	}
	return out
}

// isRepo reports whether dir is a Git checkout or a bare repository.
func isRepo(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return true
	}
	return isBare(dir)
}

func isBare(dir string) bool {
	_, errH := os.Stat(filepath.Join(dir, "HEAD"))
	fi, errO := os.Stat(filepath.Join(dir, "objects"))
	return errH == nil && errO == nil && fi.IsDir()
}

// survey reads one candidate's files.
func survey(dir string) (setup.EnvRepo, error) {
	r := setup.EnvRepo{Dir: dir}
	files := map[string][]byte{}
	if isBare(dir) {
		repo, err := git.PlainOpen(dir)
		if err != nil {
			return r, err
		}
		head, err := repo.Head()
		if err != nil {
			return r, err
		}
		r.Branch = head.Name().Short()
		c, err := repo.CommitObject(head.Hash())
		if err != nil {
			return r, err
		}
		tree, err := c.Tree()
		if err != nil {
			return r, err
		}
		err = tree.Files().ForEach(func(f *object.File) error {
			if len(files) >= maxSurveyFiles {
				return io.EOF
			}
			if isYAML(f.Name) && f.Size <= maxSurveySize {
				if data, err := f.Contents(); err == nil {
					files[f.Name] = []byte(data)
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, io.EOF) {
			return r, err
		}
	} else {
		if repo, err := git.PlainOpen(dir); err == nil {
			if head, err := repo.Head(); err == nil && head.Name().IsBranch() {
				r.Branch = head.Name().Short()
			}
		}
		_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil || len(files) >= maxSurveyFiles {
				return fs.SkipDir
			}
			if e.IsDir() && p != dir && (strings.HasPrefix(e.Name(), ".") || isRepo(p)) {
				return fs.SkipDir // a repository inside is a candidate of its own
			}
			if !e.Type().IsRegular() || !isYAML(p) {
				return nil
			}
			if fi, err := e.Info(); err == nil && fi.Size() <= maxSurveySize {
				if data, err := os.ReadFile(p); err == nil {
					rel, _ := filepath.Rel(dir, p)
					files[filepath.ToSlash(rel)] = data
				}
			}
			return nil
		})
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		classify(&r, n, files[n], files)
	}
	return r, nil
}

func isYAML(p string) bool {
	ext := strings.ToLower(path.Ext(p))
	return ext == ".yaml" || ext == ".yml"
}

// workloadKinds are the kinds whose containers name images.
var workloadKinds = []string{"Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod", "ReplicaSet", "Rollout"}

// classify records what one file pins (or the Application it declares).
func classify(r *setup.EnvRepo, name string, data []byte, all map[string][]byte) {
	base := path.Base(name)
	dir := path.Dir(name)
	switch {
	case base == "kustomization.yaml" || base == "kustomization.yml":
		var k struct {
			Images []struct {
				Name    string `yaml:"name"`
				NewName string `yaml:"newName"`
			} `yaml:"images"`
		}
		if yaml.Unmarshal(data, &k) != nil {
			return
		}
		for _, img := range k.Images {
			if img.Name == "" {
				continue
			}
			repo := img.NewName
			if repo == "" {
				repo = img.Name
			}
			r.Files = append(r.Files, setup.EnvFile{Path: name, Format: workflow.FormatKustomize, Image: img.Name, Repository: repo})
			return // the first entry: a file pins one image for relcap
		}
	case strings.HasPrefix(base, "values") && (all[path.Join(dir, "Chart.yaml")] != nil || all[path.Join(path.Dir(dir), "Chart.yaml")] != nil):
		if f, ok := helmValues(name, data); ok {
			r.Files = append(r.Files, f)
		}
	default:
		surveyManifest(r, name, data)
	}
}

// helmValues reads a values file's top-level image: a mapping with
// repository (and registry) pinned at image.digest, or a whole reference.
func helmValues(name string, data []byte) (setup.EnvFile, bool) {
	var v struct {
		Image yaml.Node `yaml:"image"`
	}
	if yaml.Unmarshal(data, &v) != nil {
		return setup.EnvFile{}, false
	}
	f := setup.EnvFile{Path: name, Format: workflow.FormatHelmValues}
	switch v.Image.Kind {
	case yaml.MappingNode:
		var img struct{ Registry, Repository string }
		if v.Image.Decode(&img) != nil || img.Repository == "" {
			return f, false
		}
		f.Repository, f.ValuesPath = img.Repository, "image.digest"
		if img.Registry != "" {
			f.Repository = img.Registry + "/" + img.Repository
		}
	case yaml.ScalarNode:
		f.Repository, f.ValuesPath = repoOf(v.Image.Value), "image"
	default:
		return f, false
	}
	f.Image = path.Base(f.Repository)
	return f, f.Repository != ""
}

// surveyManifest records the first container image of a workload, and any Argo
// CD Application, of a YAML stream.
func surveyManifest(r *setup.EnvRepo, name string, data []byte) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	pinned := false
	for {
		var doc struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
			Metadata   struct {
				Name string `yaml:"name"`
			} `yaml:"metadata"`
			Spec yaml.Node `yaml:"spec"`
		}
		if err := dec.Decode(&doc); err != nil {
			return // the end, or not YAML this survey can read
		}
		switch {
		case doc.Kind == "Application" && strings.HasPrefix(doc.APIVersion, "argoproj.io/"):
			var spec struct {
				Source struct {
					RepoURL string `yaml:"repoURL"`
					Path    string `yaml:"path"`
				} `yaml:"source"`
			}
			_ = doc.Spec.Decode(&spec)
			if doc.Metadata.Name != "" {
				r.Apps = append(r.Apps, setup.ArgoApp{Name: doc.Metadata.Name, Path: spec.Source.Path, RepoURL: spec.Source.RepoURL})
			}
		case slices.Contains(workloadKinds, doc.Kind) && !pinned:
			if img := firstImage(&doc.Spec); img != "" {
				repo := repoOf(img)
				r.Files = append(r.Files, setup.EnvFile{Path: name, Format: workflow.FormatManifest, Image: path.Base(repo), Repository: repo})
				pinned = true
			}
		}
	}
}

// firstImage finds the first containers[].image under n.
func firstImage(n *yaml.Node) string {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "containers" && v.Kind == yaml.SequenceNode {
				for _, c := range v.Content {
					var ct struct{ Image string }
					if c.Decode(&ct) == nil && ct.Image != "" {
						return ct.Image
					}
				}
			}
		}
	}
	for _, c := range n.Content {
		if img := firstImage(c); img != "" {
			return img
		}
	}
	return ""
}

// repoOf is an image reference's repository, without tag or digest.
func repoOf(ref string) string {
	repo, _, _ := splitRef(ref)
	return repo
}
