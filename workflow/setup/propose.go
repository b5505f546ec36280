package setup

import (
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/input"
)

// Discovery is what the finders found.
type Discovery struct {
	// Dir is the release repository, absolute.
	Dir   string
	Roots []TerraformRoot
	Repos []EnvRepo
	// Apps are the Argo CD server's applications; Server is where they
	// were listed ("" when no server was reachable).
	Apps   []ArgoApp
	Server string
	// Plaintext: that server talks without TLS.
	Plaintext bool
	// People is the people file found in Dir ("" when none).
	People string
}

// Plan is the configuration relcap init proposes, then writes once the
// captain has answered. Paths are as relcap.yaml writes them: relative to
// Dir.
type Plan struct {
	App     string
	EnvRepo string // envrepo.path
	Branch  string
	People  string
	Envs    []EnvPlan
	// Guessed names what nothing found supported, for the captain to
	// check before the first release.
	Guessed []string
}

// EnvPlan is one environment of the proposal.
type EnvPlan struct {
	Name       string
	Production bool
	TerraformDir,
	File, Format, Image, ValuesPath,
	Repository,
	ArgoServer, ArgoApp string
	ArgoPlaintext bool
}

// prodNames are environment names that mean production.
var prodNames = []string{"prod", "production", "prd", "live"}

// stageOrder ranks the environment names teams use, in promotion order.
var stageOrder = []string{"dev", "development", "sandbox", "test", "testing", "qa", "int", "integration", "staging", "stage", "stg", "uat", "preprod", "pre-prod", "prod", "production", "prd", "live"}

// containerDirs are directory names that hold roots rather than name an
// environment (infra/terraform/staging): never proposed as one.
var containerDirs = []string{"terraform", "tf", "infra", "infrastructure", "envs", "environments", "stacks", "root", "roots", "modules"}

// weakDirs name an environment only when nothing else in the path does:
// "live" is production in some teams and Terragrunt's top directory in
// others (live/staging/app).
var weakDirs = []string{"live", "main", "env"}

var notEnvChars = regexp.MustCompile(`[^a-z0-9-]+`)

// Propose turns what was found into a proposal; it decides nothing it
// could not see and says so in Guessed.
func Propose(d Discovery) Plan {
	var p Plan
	repo := chooseRepo(d.Dir, d.Repos)
	if repo != nil {
		p.EnvRepo = rel(d.Dir, repo.Dir)
		p.Branch = repo.Branch
	}
	if d.People != "" {
		p.People = rel(d.Dir, d.People)
	}
	p.App = proposeApp(d, repo)
	apps := d.Apps
	if len(apps) == 0 && repo != nil {
		apps = repo.Apps
	}
	for _, root := range d.Roots {
		name := EnvName(d.Dir, root.Dir)
		if name == "" {
			p.Guessed = append(p.Guessed, rel(d.Dir, root.Dir)+": left out: no environment name in its path (add it to environments: by hand)")
			continue
		}
		if i := slices.IndexFunc(p.Envs, func(e EnvPlan) bool { return e.Name == name }); i >= 0 {
			p.Guessed = append(p.Guessed, rel(d.Dir, root.Dir)+": left out: a second root for "+name+" beside "+p.Envs[i].TerraformDir+
				" (relcap plans one root per environment: keep the one it should plan)")
			continue
		}
		e := EnvPlan{Name: name, Production: slices.Contains(prodNames, name), TerraformDir: rel(d.Dir, root.Dir), ArgoServer: d.Server, ArgoPlaintext: d.Plaintext}
		if repo != nil {
			if f, ok := fileFor(repo.Files, name); ok {
				e.File, e.Format, e.Image, e.ValuesPath, e.Repository = f.Path, f.Format, f.Image, f.ValuesPath, f.Repository
			}
		}
		e.ArgoApp = appFor(apps, e, p.App)
		if e.Repository == "" {
			p.Guessed = append(p.Guessed, name+": registry.repository (no file named an image repository)")
		}
		if e.ArgoApp == "" {
			e.ArgoApp = p.App + "-" + name
			p.Guessed = append(p.Guessed, name+": argocd.app (no application found for it)")
		}
		p.Envs = append(p.Envs, e)
	}
	slices.SortStableFunc(p.Envs, func(a, b EnvPlan) int { return stageRank(a.Name) - stageRank(b.Name) })
	return p
}

// EnvName names the environment of a Terraform root from its path,
// lowercased to what relcap.yaml accepts ("" when nothing fits): a known
// stage name anywhere in it (infra/live/prod/network is prod), else its
// last element that is not a container directory, weak names
// (live, main, env) only when nothing else is left.
func EnvName(dir, root string) string {
	parts := strings.Split(filepath.ToSlash(rel(dir, root)), "/")
	var candidates []string // from the last element to the first
	for i := len(parts) - 1; i >= 0; i-- {
		name := strings.Trim(notEnvChars.ReplaceAllString(strings.ToLower(parts[i]), "-"), "-")
		if name == "" || slices.Contains(containerDirs, name) || !input.ValidEnvName(name) {
			continue
		}
		candidates = append(candidates, name)
	}
	for _, pick := range []func(string) bool{
		func(n string) bool { return slices.Contains(stageOrder, n) },
		func(n string) bool { return !slices.Contains(weakDirs, n) },
		func(string) bool { return true },
	} {
		if i := slices.IndexFunc(candidates, pick); i >= 0 {
			return candidates[i]
		}
	}
	return ""
}

// stageRank orders environments: known stages in promotion order, others
// between development and production.
func stageRank(name string) int {
	if i := slices.Index(stageOrder, name); i >= 0 {
		return i
	}
	return slices.Index(stageOrder, "uat")
}

// chooseRepo proposes the repository that pins images most likely to be
// this release repository's: one holding Argo CD applications first, then
// one inside dir (the release repository's own) before one beside it (a
// sibling checkout may be any project's), then the one with more pinning
// files; the first found among equals. The captain may name another.
func chooseRepo(dir string, repos []EnvRepo) *EnvRepo {
	score := func(r EnvRepo) []int {
		inside := 0
		if rel, err := filepath.Rel(dir, r.Dir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			inside = 1
		}
		return []int{min(len(r.Apps), 1), inside, len(r.Files)}
	}
	var best *EnvRepo
	for i := range repos {
		if len(repos[i].Files) == 0 {
			continue
		}
		if best == nil || slices.Compare(score(repos[i]), score(*best)) > 0 {
			best = &repos[i]
		}
	}
	return best
}

// proposeApp names the application: the image the environment repository
// pins, else the release repository's directory.
func proposeApp(d Discovery, repo *EnvRepo) string {
	if repo != nil {
		for _, f := range repo.Files {
			if input.ValidAppName(f.Image) {
				return f.Image
			}
		}
	}
	base := strings.Trim(notEnvChars.ReplaceAllString(strings.ToLower(filepath.Base(d.Dir)), "-"), "-")
	if input.ValidAppName(base) {
		return base
	}
	return "app"
}

// fileFor picks the file of env: one whose path names env as a directory
// or as a file name (values-staging.yaml), preferring kustomize overlays,
// then Helm values, then manifests.
func fileFor(files []EnvFile, env string) (EnvFile, bool) {
	var best EnvFile
	bestRank := -1
	for _, f := range files {
		if !namesEnv(f.Path, env) {
			continue
		}
		rank := slices.Index([]string{workflow.FormatManifest, workflow.FormatHelmValues, workflow.FormatKustomize}, f.Format)
		if rank > bestRank {
			best, bestRank = f, rank
		}
	}
	return best, bestRank >= 0
}

// namesEnv reports whether a slash path names env as one of its
// directories or in its file name.
func namesEnv(p, env string) bool {
	dir, file := path.Split(p)
	if slices.Contains(strings.Split(strings.Trim(dir, "/"), "/"), env) {
		return true
	}
	stem := strings.TrimSuffix(file, path.Ext(file))
	return slices.Contains(strings.FieldsFunc(stem, func(r rune) bool { return r == '-' || r == '_' || r == '.' }), env)
}

// appFor picks env's application: the one whose source is the directory
// of env's file, else the one whose name is app-env, env-app or names env.
func appFor(apps []ArgoApp, e EnvPlan, app string) string {
	if e.File != "" {
		dir := path.Dir(e.File)
		for _, a := range apps {
			if a.Path != "" && path.Clean(a.Path) == dir {
				return a.Name
			}
		}
	}
	for _, want := range []string{app + "-" + e.Name, e.Name + "-" + app} {
		for _, a := range apps {
			if a.Name == want {
				return a.Name
			}
		}
	}
	for _, a := range apps {
		if slices.Contains(strings.FieldsFunc(a.Name, func(r rune) bool { return r == '-' || r == '_' || r == '.' }), e.Name) {
			return a.Name
		}
	}
	return ""
}

// rel is p relative to dir, slash-separated, or p itself when it is not
// below dir's parent (an absolute path reads better than ../../..).
func rel(dir, p string) string {
	r, err := filepath.Rel(dir, p)
	if err != nil || strings.HasPrefix(r, "../..") {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(r)
}
