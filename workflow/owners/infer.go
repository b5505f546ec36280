package owners

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/ownership"
)

// relcap ownership infer: the ownership map proposed from what really
// writes each field (ownership.Infer), written as a draft beside the map
// for a person to review, never over it.

// DraftName is the draft's file name beside the project's ownership map.
const DraftName = "ownership.draft.yaml"

// draftMark opens every draft relcap writes: a file without it is a
// person's, which infer never replaces.
const draftMark = "# ownership map drafted by relcap ownership infer"

// InferRequest asks for a proposal covering Envs (every environment when
// empty).
type InferRequest struct {
	Envs []string
	// Managers ties field managers to owners (--manager NAME=OWNER).
	Managers ownership.ManagerOwners
	// Out is the draft's path: "" for DraftName beside the project's
	// ownership map, "-" to write none (the caller prints it).
	Out string
	// FirstMap writes the proposal as the map itself: relcap init, over
	// the catch-all map it has just written. Out is ignored.
	FirstMap bool
}

// Inferred is what infer proposed, and where the draft went.
type Inferred struct {
	Envs      []string
	Inference ownership.Inference
	// Draft is the proposed map; YAML its text, as written.
	Draft ownership.Map
	YAML  []byte
	// Changes are where the draft differs from the current map for the
	// objects read.
	Changes []ownership.Change
	// Written is the draft's path ("" when Out was "-"); Partial says
	// the draft covers only some of the project's environments.
	Written string
	Partial bool
}

// Contested counts the contested fields, and of those the flipping ones.
func (i Inferred) Contested() (contested, flipping int) {
	for _, o := range i.Inference.Objects {
		for _, c := range o.Contested {
			contested++
			if c.Flipping() {
				flipping++
			}
		}
	}
	return contested, flipping
}

// Infer reads every environment of req through core's ownership sources
// (Argo CD's live objects with their field managers, Terraform state, or
// the environment repository rendered when Argo CD cannot be read),
// proposes a map, and writes it as a draft that reads back as the map it
// is (relcap validate accepts it). It journals what it proposed.
// Contested fields are in the result, not an error: the caller decides
// the exit code.
func Infer(ctx context.Context, core *workflow.Service, req InferRequest) (Inferred, error) {
	d := core.Deps()
	envs, err := selectEnvs(d.Project, req.Envs)
	if err != nil {
		return Inferred{}, err
	}
	out := d.Project.OwnershipFile
	if !req.FirstMap {
		if out, err = draftPath(d.Project, req.Out); err != nil {
			return Inferred{}, err
		}
	}
	res := Inferred{Partial: len(envs) < len(d.Project.Environments)}
	var all ownership.Sources
	all.LiveRan = true
	for _, env := range envs {
		res.Envs = append(res.Envs, env.Name)
		tctx, done := core.ToolOutput(ctx, workflow.StepOwnership)
		src, err := core.ReadOwnership(tctx, env)
		if err != nil {
			err = fmt.Errorf("environment %s: %w", env.Name, err)
			return Inferred{}, done(core.JournalFailure(ctx, err, journal.OwnershipCheckFailed{Env: env.Name, Error: err.Error()}))
		}
		if err := done(nil); err != nil {
			return Inferred{}, err
		}
		all.Terraform = append(all.Terraform, src.Terraform...)
		all.Live = append(all.Live, src.Live...)
		all.Desired = append(all.Desired, src.Desired...)
		if !src.LiveRan {
			all.LiveRan = false
			all.LiveError = strings.TrimPrefix(all.LiveError+"; "+env.Name+": "+liveWhy(src), "; ")
		}
	}
	current := d.Project.Ownership
	res.Inference = ownership.Infer(all, req.Managers)
	res.Draft = res.Inference.Map(draftFile(out, current.File), current)
	res.YAML, err = config.RenderOwnership(res.Draft, header(res, current.File, d.Clock.Now(), req.FirstMap), notes(res.Inference))
	if err != nil {
		return Inferred{}, err
	}
	res.Changes = ownership.Diff(current, res.Draft, all.Objects())
	if out != "" {
		if err := writeDraft(out, res.YAML, req.FirstMap); err != nil {
			return Inferred{}, err
		}
		res.Written = out
	}
	contested, flipping := res.Contested()
	sum := sha256.Sum256(res.YAML)
	return res, core.Journal(ctx, journal.OwnershipInferred{Envs: res.Envs, Objects: len(res.Inference.Objects), Contested: contested,
		Flipping: flipping, Changes: len(res.Changes), Live: res.Inference.Live, Draft: res.Written, SHA256: hex.EncodeToString(sum[:])})
}

// liveWhy says why an environment's live objects were not read.
func liveWhy(src ownership.Sources) string {
	if src.LiveError != "" {
		return src.LiveError
	}
	return "it has no Argo CD application to read"
}

// selectEnvs returns the environments named (each once, in the project's
// order), or every one.
func selectEnvs(p *workflow.Project, names []string) ([]workflow.Environment, error) {
	if len(names) == 0 {
		return p.Environments, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		if _, err := p.Env(n); err != nil {
			return nil, err
		}
		want[n] = true
	}
	var out []workflow.Environment
	for _, e := range p.Environments {
		if want[e.Name] {
			out = append(out, e)
		}
	}
	return out, nil
}

// draftPath is where the draft goes: out as given, DraftName beside the
// project's map, or "" for none. The map itself is never the draft.
func draftPath(p *workflow.Project, out string) (string, error) {
	switch out {
	case "-":
		return "", nil
	case "":
		if p.OwnershipFile == "" {
			return "", fmt.Errorf("%w: relcap.yaml names no ownership map: pass --out FILE (or --out - to print the draft)", fault.ErrUsage)
		}
		out = filepath.Join(filepath.Dir(p.OwnershipFile), DraftName)
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", fmt.Errorf("%w: --out %s: %w", fault.ErrUsage, out, err)
	}
	if p.OwnershipFile != "" && sameFile(abs, p.OwnershipFile) {
		return "", fmt.Errorf("%w: --out %s is the ownership map itself: infer writes a draft to review; write it elsewhere and move it over once reviewed", fault.ErrUsage, out)
	}
	if st, err := os.Stat(filepath.Dir(abs)); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: --out %s: its directory does not exist", fault.ErrUsage, out)
	}
	return abs, nil
}

func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// draftFile names the draft in messages: its path, or the map's name with
// "(draft)" when none is written.
func draftFile(out, current string) string {
	if out != "" {
		return out
	}
	return current + " (draft)"
}

// writeDraft writes the draft through a temporary file renamed into place,
// replacing only a draft relcap wrote before (or, for relcap init's first
// map, the map init has just written).
func writeDraft(p string, data []byte, firstMap bool) error {
	old, err := os.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read %s: %w", p, err)
	case !firstMap && !bytes.HasPrefix(old, []byte(draftMark)):
		return fmt.Errorf("%w: %s exists and is not a draft relcap wrote; nothing was written (pass --out with another path)", fault.ErrUsage, p)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".*")
	if err != nil {
		return fmt.Errorf("write the draft: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		return fmt.Errorf("write the draft %s: %w", p, err)
	}
	return nil
}

// header is the draft's opening comment: what it is, from what, what it
// found, and what to do with it.
func header(res Inferred, current string, now time.Time, firstMap bool) []string {
	contested, flipping := res.Contested()
	h := []string{
		strings.TrimPrefix(draftMark, "# ") + " at " + now.UTC().Format(time.RFC3339) + ",",
		"from Terraform state, the Argo CD applications and their live objects' field managers,",
		"for " + strings.Join(res.Envs, ", ") + ".",
		fmt.Sprintf("%d object(s) written by more than one owner; %d contested field(s), %d of them flipping.", len(res.Inference.Objects), contested, flipping),
	}
	if !res.Inference.Live {
		h = append(h, "The live objects were not read ("+res.Inference.Unread+"): contested fields are those both tools declare.")
	}
	if firstMap {
		return append(h, "It is the first map, written by relcap init: decide every contested field",
			"(one owner here, the field taken out of the other tool) before a release.")
	}
	if res.Partial {
		h = append(h, "It covers only these environments; "+current+" covers every one: infer without --env for a whole map.")
	}
	return append(h, "Review it, decide every contested field (one owner, the field taken out of the other tool),",
		"then replace "+current+" with it; relcap validate reads it as it reads the map.")
}

// notes are the comments above each object's rule: its writers and its
// contested fields, the evidence for the proposal.
func notes(inf ownership.Inference) map[int][]string {
	out := map[int][]string{}
	for i, o := range inf.Objects {
		n := []string{o.Key + ", written by:"}
		for _, w := range o.Writers {
			if w.Manager == "" {
				n = append(n, fmt.Sprintf("  %s declares %d field(s)", w.Via, w.Fields))
				continue
			}
			n = append(n, fmt.Sprintf("  field manager %s (%s) holds %d field(s): %s, as %s", w.Manager, w.How(), w.Fields, w.Owner, w.Why))
		}
		if len(o.Contested) > 0 {
			n = append(n, "contested:")
		}
		for _, c := range o.Contested {
			line := fmt.Sprintf("  %s: %s", c.Field, ownersList(c.Owners))
			if len(c.Holders) > 0 {
				line += "; held by " + strings.Join(c.Holders, ", ")
			}
			if c.Flipping() {
				line += "; flips: " + ownersList(c.Wanting) + " writes it back"
			}
			n = append(n, line)
		}
		out[i] = n
	}
	return out
}

func ownersList(os []ownership.Owner) string {
	s := make([]string, len(os))
	for i, o := range os {
		s[i] = string(o)
	}
	return strings.Join(s, ", ")
}
