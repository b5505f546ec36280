package setup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/input"
)

// PeopleFile is the people file relcap init looks for beside relcap.yaml;
// OwnershipFile is the ownership map it writes there.
const (
	PeopleFile    = "allowed_signers"
	OwnershipFile = "ownership.yaml"
)

// toBeWritten stands for the ownership map while relcap.yaml, which names
// it, is checked before either is written.
type toBeWritten struct{}

func (toBeWritten) Name() string       { return OwnershipFile }
func (toBeWritten) Size() int64        { return 0 }
func (toBeWritten) Mode() fs.FileMode  { return 0o644 }
func (toBeWritten) ModTime() time.Time { return time.Time{} }
func (toBeWritten) IsDir() bool        { return false }
func (toBeWritten) Sys() any           { return nil }

// Finders are the discovery ports; Apps is nil when no Argo CD server is
// known.
type Finders struct {
	Terraform TerraformFinder
	EnvRepos  EnvRepoFinder
	Apps      AppLister
}

// Request is what relcap init was asked to do.
type Request struct {
	// Dir is the release repository, where both files are written.
	Dir string
	// Schema is the JSON Schema the yaml-language-server line names.
	Schema string
	// Force overwrites existing files without asking.
	Force bool
	// ArgoPlaintext: the Argo CD server listed talks without TLS, and so
	// relcap will too (argocd.plaintext).
	ArgoPlaintext bool
	// Found, when set, is told what was found before anything is asked.
	Found func(Discovery)
}

// Result is what relcap init found and did.
type Result struct {
	Discovery Discovery
	Plan      Plan
	// Notes are what the captain should know: a server that could not be
	// listed, values nothing supported.
	Notes []string
	// Written are the files written, absolute.
	Written []string
}

// Run finds, proposes, asks, checks and writes. Nothing is written unless
// both files are valid and may be written.
func Run(ctx context.Context, req Request, f Finders, ask Asker) (Result, error) {
	var res Result
	dir, err := filepath.Abs(req.Dir)
	if err != nil {
		return res, fmt.Errorf("%w: %w", fault.ErrUsage, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return res, fmt.Errorf("%w: %s is not a directory; run relcap init in the release repository or pass --dir", fault.ErrUsage, req.Dir)
	}
	// Asked first, so nobody answers every question to be refused.
	for _, name := range []string{config.FileName, OwnershipFile} {
		if err := mayWrite(ctx, filepath.Join(dir, name), req.Force, ask); err != nil {
			return res, err
		}
	}
	d, notes, err := discover(ctx, dir, f)
	if err != nil {
		return res, err
	}
	d.Plaintext = d.Server != "" && req.ArgoPlaintext
	res.Discovery, res.Notes = d, notes
	if req.Found != nil {
		req.Found(d)
	}
	plan, err := interview(ctx, d, ask)
	if err != nil {
		return res, err
	}
	res.Plan = plan
	for _, g := range plan.Guessed {
		res.Notes = append(res.Notes, "guessed "+g+": check it")
	}
	schema := req.Schema
	if schema == "" {
		schema = SchemaURL
	}
	cfg, err := RenderConfig(plan, schema)
	if err != nil {
		return res, err
	}
	files := []struct{ name, content string }{{config.FileName, cfg}, {OwnershipFile, RenderOwnership(plan)}}
	// What the loader refuses is never written: relcap validate accepts
	// what init writes. The ownership map is checked on its own, as it is
	// not there yet.
	ownPath := filepath.Join(dir, OwnershipFile)
	stat := func(name string) (fs.FileInfo, error) {
		if name == ownPath {
			return toBeWritten{}, nil
		}
		return os.Stat(name)
	}
	if _, err := config.Parse(filepath.Join(dir, config.FileName), []byte(cfg), config.WithStat(stat), config.WithDir(dir)); err != nil {
		return res, fmt.Errorf("%w: the answers make a relcap.yaml that relcap validate refuses, so nothing was written:\n%w", fault.ErrUsage, err)
	}
	if _, err := config.ParseOwnership(ownPath, []byte(files[1].content)); err != nil {
		return res, fmt.Errorf("%w: the answers make an ownership.yaml that relcap validate refuses, so nothing was written:\n%w", fault.ErrUsage, err)
	}
	for _, file := range files {
		p := filepath.Join(dir, file.name)
		if err := writeFile(p, file.content); err != nil {
			return res, err
		}
		res.Written = append(res.Written, p)
	}
	return res, nil
}

// discover runs the finders. A server that cannot be listed is a note,
// not a failure: the applications are then asked for.
func discover(ctx context.Context, dir string, f Finders) (Discovery, []string, error) {
	d := Discovery{Dir: dir}
	var notes []string
	var err error
	if d.Roots, err = f.Terraform.TerraformRoots(ctx, dir); err != nil {
		return d, nil, fmt.Errorf("looking for Terraform roots under %s: %w", dir, err)
	}
	if d.Repos, err = f.EnvRepos.EnvRepos(ctx, dir); err != nil {
		return d, nil, fmt.Errorf("looking for the environment repository near %s: %w", dir, err)
	}
	if f.Apps != nil {
		apps, err := f.Apps.Applications(ctx)
		if err != nil {
			notes = append(notes, fmt.Sprintf("could not list Argo CD's applications at %s (%v); the applications below are proposed from names", f.Apps.Server(), err))
		} else {
			d.Apps, d.Server = apps, f.Apps.Server()
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, PeopleFile)); err == nil && fi.Mode().IsRegular() {
		d.People = filepath.Join(dir, PeopleFile)
	}
	if len(d.Roots) == 0 {
		return d, notes, fmt.Errorf("%w: found no Terraform root module under %s (a directory of .tf files that is not a module of another); run relcap init in the release repository or pass --dir", fault.ErrUsage, dir)
	}
	return d, notes, nil
}

// interview asks about every value of the proposal, each with the
// proposal as its default.
func interview(ctx context.Context, d Discovery, ask Asker) (Plan, error) {
	p := Propose(d)
	proposed := p.App
	var err error
	if p.App, err = ask.Ask(ctx, Question{Key: "app", Prompt: "Application name", Default: p.App, Check: checkApp}); err != nil {
		return p, err
	}
	renameGuessedApps(&p, proposed)
	var repoChoices []string
	for _, r := range d.Repos {
		if len(r.Files) > 0 {
			repoChoices = append(repoChoices, rel(d.Dir, r.Dir))
		}
	}
	repo, err := ask.Ask(ctx, Question{Key: "environments[].envrepo.path", Prompt: "Environment repository (a checkout or a clone URL)", Default: p.EnvRepo, Choices: repoChoices})
	if err != nil {
		return p, err
	}
	if repo != p.EnvRepo {
		// Propose again from the repository chosen.
		d.Repos = slices.DeleteFunc(slices.Clone(d.Repos), func(r EnvRepo) bool { return rel(d.Dir, r.Dir) != repo })
		app := p.App
		p = Propose(d)
		proposed := p.App
		p.App, p.EnvRepo = app, repo
		renameGuessedApps(&p, proposed)
	}
	var names []string
	for _, e := range p.Envs {
		names = append(names, e.Name)
	}
	list, err := ask.Ask(ctx, Question{Key: "environments", Prompt: "Environments, in promotion order", Default: strings.Join(names, ", "), Check: checkEnvList})
	if err != nil {
		return p, err
	}
	var envs []EnvPlan
	for _, name := range splitList(list) {
		i := slices.IndexFunc(p.Envs, func(e EnvPlan) bool { return e.Name == name })
		e := EnvPlan{Name: name, Production: slices.Contains(prodNames, name), ArgoServer: d.Server, ArgoPlaintext: d.Plaintext}
		if i >= 0 {
			e = p.Envs[i]
		}
		if e, err = askEnv(ctx, d, p, e, ask); err != nil {
			return p, err
		}
		envs = append(envs, e)
	}
	p.Envs = envs
	return p, nil
}

// renameGuessedApps follows a renamed application: the Argo CD
// applications guessed as <app>-<env> take the new name.
func renameGuessedApps(p *Plan, proposed string) {
	for i, e := range p.Envs {
		if e.ArgoApp == proposed+"-"+e.Name {
			p.Envs[i].ArgoApp = p.App + "-" + e.Name
		}
	}
}

// askEnv asks about one environment.
func askEnv(ctx context.Context, d Discovery, p Plan, e EnvPlan, ask Asker) (EnvPlan, error) {
	var roots, files, apps []string
	for _, r := range d.Roots {
		roots = append(roots, rel(d.Dir, r.Dir))
	}
	for _, r := range d.Repos {
		if rel(d.Dir, r.Dir) == p.EnvRepo {
			for _, f := range r.Files {
				files = append(files, f.Path)
			}
		}
	}
	for _, a := range d.Apps {
		apps = append(apps, a.Name)
	}
	qs := []struct {
		key, prompt string
		dst         *string
		choices     []string
		check       func(string) error
	}{
		{"terraform.dir", "Terraform root module", &e.TerraformDir, roots, nil},
		{"envrepo.file", "File that pins the image, in the environment repository", &e.File, files, nil},
		{"envrepo.format", "How that file pins it", &e.Format, []string{workflow.FormatKustomize, workflow.FormatHelmValues, workflow.FormatManifest}, checkFormat},
		{"envrepo.image", "Image name to pin in it", &e.Image, nil, nil},
		{"registry.repository", "Image repository this environment pulls from", &e.Repository, nil, nil},
		{"argocd.app", "Argo CD application", &e.ArgoApp, apps, nil},
	}
	for _, q := range qs {
		v, err := ask.Ask(ctx, Question{Key: "environments[]." + q.key, Prompt: e.Name + ": " + q.prompt, Default: *q.dst, Choices: q.choices, Check: q.check})
		if err != nil {
			return e, err
		}
		*q.dst = v
	}
	if e.Format == workflow.FormatHelmValues {
		v, err := ask.Ask(ctx, Question{Key: "environments[].envrepo.values_path", Prompt: e.Name + ": YAML path of the image reference in the values file", Default: e.ValuesPath})
		if err != nil {
			return e, err
		}
		e.ValuesPath = v
	}
	prod, err := ask.Confirm(ctx, e.Name+": is this a production environment?", e.Production)
	if err != nil {
		return e, err
	}
	e.Production = prod
	return e, nil
}

func checkApp(s string) error {
	if !input.ValidAppName(s) {
		return fmt.Errorf("want letters, digits, '.', '_' and '-' starting with a letter or digit (at most %d)", input.MaxAppNameLen)
	}
	return nil
}

func checkEnvList(s string) error {
	names := splitList(s)
	if len(names) == 0 {
		return errors.New("name at least one environment")
	}
	for i, n := range names {
		if !input.ValidEnvName(n) {
			return fmt.Errorf("%s: want lowercase letters, digits and dashes starting with a letter or digit (at most %d)", input.QuoteInput(n), input.MaxEnvNameLen)
		}
		if slices.Contains(names[:i], n) {
			return fmt.Errorf("%s is named twice", n)
		}
	}
	return nil
}

func checkFormat(s string) error {
	if !slices.Contains([]string{workflow.FormatKustomize, workflow.FormatHelmValues, workflow.FormatManifest}, s) {
		return errors.New("want kustomize, helm-values or manifest")
	}
	return nil
}

// splitList splits "staging, prod" or "staging prod".
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
}

// mayWrite refuses to replace an existing file unless forced or the
// captain says so.
func mayWrite(ctx context.Context, p string, force bool, ask Asker) error {
	_, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if force {
		return nil
	}
	ok, err := ask.Confirm(ctx, p+" exists: overwrite it?", false)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s exists and was not overwritten; nothing was written (pass --force to replace it)", fault.ErrUsage, p)
	}
	return nil
}

// writeFile writes content to p through a temporary file renamed into
// place, so an interrupted init leaves no half-written file.
func writeFile(p, content string) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// Defaults answers every question with its proposal: relcap init --yes.
// A question with no proposal is an error saying what to do, and so is an
// existing file (Confirm answers no).
type Defaults struct{}

// Ask returns the default, or says why there is none.
func (Defaults) Ask(_ context.Context, q Question) (string, error) {
	if q.Default == "" {
		return "", fmt.Errorf("%w: relcap init --yes found nothing to propose for %s (%s); run relcap init without --yes and type it", fault.ErrUsage, q.Key, q.Prompt)
	}
	if q.Check != nil {
		if err := q.Check(q.Default); err != nil {
			return "", fmt.Errorf("%w: relcap init --yes: the proposal for %s, %s, will not do: %v; run relcap init without --yes", fault.ErrUsage, q.Key, input.QuoteInput(q.Default), err)
		}
	}
	return q.Default, nil
}

// Confirm returns def.
func (Defaults) Confirm(_ context.Context, _ string, def bool) (bool, error) { return def, nil }
