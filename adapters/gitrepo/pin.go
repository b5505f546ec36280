package gitrepo

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
)

// EditError says why a file cannot be pinned or read as asked: it is not
// valid YAML, the key is missing or has the wrong shape, or the request
// carries no digest. It satisfies errors.Is(err, fault.ErrUsage): the fix
// is in the file or in relcap.yaml, not in a retry.
type EditError struct {
	// File is the file's path in the environment repository; the pure
	// editing functions leave it empty and the Adapter fills it in.
	File string
	// Line is the 1-based line the problem was found at; 0 when unknown.
	Line int
	// Key is the YAML path concerned, e.g. "images" or "image.digest".
	Key string
	// Msg says what is wrong and what to do about it.
	Msg string
}

// Error formats the error as "file:line: message", leaving out what is
// unknown.
func (e *EditError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		b.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap makes errors.Is(err, fault.ErrUsage) hold.
func (e *EditError) Unwrap() error { return fault.ErrUsage }

func editErr(n *yaml.Node, key, format string, args ...any) *EditError {
	e := &EditError{Key: key, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line = n.Line
	}
	return e
}

// Ref is the domain's image reference: what a file pins.
type Ref = image.Ref

// splitRef splits an image reference into repository, tag and digest, as
// written; it does not validate them.
func splitRef(s string) (repo, tag, digest string) {
	if i := strings.IndexByte(s, '@'); i >= 0 {
		s, digest = s[:i], s[i+1:]
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 && !strings.Contains(s[i+1:], "/") {
		s, tag = s[:i], s[i+1:]
	}
	return s, tag, digest
}

// parseRef reads a written reference; a malformed digest is an error, a
// missing one is not (the caller decides what a tag-only reference means).
func parseRef(n *yaml.Node, key, s string) (Ref, error) {
	repo, tag, digest := splitRef(s)
	r := Ref{Repository: repo, Tag: tag}
	if digest != "" {
		d, err := image.ParseDigest(digest)
		if err != nil {
			return r, editErr(n, key, "%s: %s", key, strings.TrimPrefix(err.Error(), fault.ErrUsage.Error()+": "))
		}
		r.Digest = d
	}
	return r, nil
}

// repoName is an image repository as OCI references spell it: an optional
// registry host (with port), then lowercase path components.
var repoName = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?/)?` +
	`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)

// checkName refuses what is not an image repository name: the pin would
// write it into the file, and a match against it would find nothing.
func checkName(what, s string) error {
	if s == "" {
		return &EditError{Msg: "no " + what + " given"}
	}
	if _, tag, digest := splitRef(s); tag != "" || digest != "" {
		return &EditError{Msg: fmt.Sprintf("%s %q carries a tag or digest; want the repository alone", what, s)}
	}
	if len(s) > 255 || !repoName.MatchString(s) {
		return &EditError{Msg: fmt.Sprintf("%s %q is not an image repository name (e.g. registry.example.com/team/web)", what, s)}
	}
	return nil
}

// checkRepo refuses a repository that is malformed or carries a tag or a
// digest: the pin adds the digest itself.
func checkRepo(repo string) error { return checkName("repository", repo) }

func checkDigest(d image.Digest) error {
	if d.IsZero() {
		return &EditError{Msg: "no digest to pin; relcap pins digests, never tags"}
	}
	return nil
}

// PinFile pins repo@d in data, a file of format t.Format, selected by
// t.Image (and t.ValuesPath for helm values). It is the dispatcher over
// PinKustomize, PinHelmValues and PinManifest; an unchanged result means
// the file already pins repo@d.
func PinFile(data []byte, t workflow.EnvRepoTarget, repo string, d image.Digest) ([]byte, error) {
	switch t.Format {
	case workflow.FormatKustomize:
		return PinKustomize(data, t.Image, repo, d)
	case workflow.FormatHelmValues:
		return PinHelmValues(data, t.ValuesPath, repo, d)
	case workflow.FormatManifest:
		return PinManifest(data, t.Image, repo, d)
	}
	return nil, &EditError{Key: "format", Msg: fmt.Sprintf("unknown envrepo format %q; want kustomize, helm-values or manifest", t.Format)}
}

// CurrentPin reads back the reference a file pins, for the same selection
// as PinFile: the images entry named t.Image (kustomize), the key at
// t.ValuesPath (helm values), or the containers whose image repository is
// t.Image or repo (manifest), which must all agree. A tag-only reference
// comes back with a zero Digest.
func CurrentPin(data []byte, t workflow.EnvRepoTarget, repo string) (Ref, error) {
	f, err := parseYAML(data)
	if err != nil {
		return Ref{}, err
	}
	switch t.Format {
	case workflow.FormatKustomize:
		return readKustomize(f, t.Image)
	case workflow.FormatHelmValues:
		return readHelm(f, t.ValuesPath)
	case workflow.FormatManifest:
		return readManifest(f, t.Image, repo)
	}
	return Ref{}, &EditError{Key: "format", Msg: fmt.Sprintf("unknown envrepo format %q; want kustomize, helm-values or manifest", t.Format)}
}

// --- kustomize ---

// PinKustomize pins newName@d for the images entry named image in a
// kustomization: it sets newName (left out when it would equal name), sets
// digest, and removes newTag, since a tag must never sit beside the pin.
// A missing entry is an error rather than added: an entry that matches no
// image in the resources pins nothing, and a typo would go unnoticed.
func PinKustomize(data []byte, image, newName string, d image.Digest) ([]byte, error) {
	if err := checkDigest(d); err != nil {
		return nil, err
	}
	if err := checkName("image name", image); err != nil {
		return nil, err
	}
	if newName == "" {
		newName = image
	}
	if err := checkRepo(newName); err != nil {
		return nil, err
	}
	f, err := parseYAML(data)
	if err != nil {
		return nil, err
	}
	entry, err := kustomizeEntry(f, image)
	if err != nil {
		return nil, err
	}
	if i, v := lookup(entry, "newName"); newName == image && i >= 0 {
		// The name alone is the reference; a different newName would
		// redirect the pin.
		if v.Kind != yaml.ScalarNode || v.Value != image {
			f.deletePair(entry, i)
		}
	} else if newName != image {
		if i >= 0 && v.Kind == yaml.ScalarNode {
			f.setScalar(v, newName)
		} else if i >= 0 {
			return nil, editErr(v, "images", "images entry %s: newName is %s, want a string", image, kindName(v))
		} else {
			ni, _ := lookup(entry, "name")
			f.insertPair(entry, ni, []string{"newName"}, newName)
		}
	}
	if i, v := lookup(entry, "digest"); i >= 0 {
		if v.Kind != yaml.ScalarNode {
			return nil, editErr(v, "images", "images entry %s: digest is %s, want a string", image, kindName(v))
		}
		f.setScalar(v, d.String())
	} else {
		after, _ := lookup(entry, "newName")
		if after < 0 {
			after, _ = lookup(entry, "name")
		}
		f.insertPair(entry, after, []string{"digest"}, d.String())
	}
	if i, _ := lookup(entry, "newTag"); i >= 0 {
		f.deletePair(entry, i)
	}
	out, err := f.bytes()
	if err != nil {
		return nil, err
	}
	return out, assertPinned(out, func(g *yamlFile) (Ref, error) { return readKustomize(g, image) }, newName, d, false)
}

// kustomizeEntry finds the one images entry named image.
func kustomizeEntry(f *yamlFile, image string) (*yaml.Node, error) {
	docs := nonEmpty(f.docs)
	if len(docs) != 1 {
		return nil, &EditError{Msg: fmt.Sprintf("want one YAML document in a kustomization, found %d", len(docs))}
	}
	root := content(docs[0])
	if root.Kind != yaml.MappingNode {
		return nil, editErr(root, "", "not a kustomization: the top level is %s, want a map", kindName(root))
	}
	ik, images := lookup(root, "images")
	if ik < 0 {
		return nil, editErr(nil, "images", "no images entry named %s (the file has no images list); add one or fix envrepo.image", image)
	}
	if images.Kind != yaml.SequenceNode && !isNull(images) {
		return nil, editErr(images, "images", "images is %s, want a list of entries", kindName(images))
	}
	var found *yaml.Node
	for _, e := range images.Content {
		if e.Kind != yaml.MappingNode {
			continue
		}
		if name, _ := scalarValue(e, "name"); name == image {
			if found != nil {
				return nil, editErr(e, "images", "two images entries named %s (lines %d and %d); keep one", image, found.Line, e.Line)
			}
			found = e
		}
	}
	if found == nil {
		return nil, editErr(root.Content[ik], "images", "no images entry named %s; add one or fix envrepo.image", image)
	}
	return found, nil
}

func readKustomize(f *yamlFile, name string) (Ref, error) {
	e, err := kustomizeEntry(f, name)
	if err != nil {
		return Ref{}, err
	}
	r := Ref{Repository: name}
	if _, v := lookup(e, "newName"); v != nil && v.Kind == yaml.ScalarNode && v.Value != "" && !isNull(v) {
		r.Repository = v.Value
	}
	r.Tag, _ = scalarValue(e, "newTag")
	if _, v := lookup(e, "digest"); v != nil && v.Kind == yaml.ScalarNode && v.Value != "" && !isNull(v) {
		d, err := image.ParseDigest(v.Value)
		if err != nil {
			return r, editErr(v, "images", "images entry %s: digest %q is not a digest", name, v.Value)
		}
		r.Digest = d
	}
	return r, nil
}

// --- helm values ---

// PinHelmValues pins repo@d at the dotted YAML path in a Helm values file.
// When the path ends in a key named digest, that key gets d and a sibling
// repository key, if there is one, gets repo (split over a sibling registry
// key when there is one of those too); otherwise the key gets the full
// reference repo@d. Missing maps on the path are created. A path ending in
// tag is refused: a digest written into a tag field renders as
// "repository:sha256:…", which no registry resolves.
func PinHelmValues(data []byte, path, repo string, d image.Digest) ([]byte, error) {
	if err := checkDigest(d); err != nil {
		return nil, err
	}
	keys, err := valuesPath(path)
	if err != nil {
		return nil, err
	}
	leaf := keys[len(keys)-1]
	if strings.EqualFold(leaf, "tag") {
		return nil, &EditError{Key: path, Msg: fmt.Sprintf("values path %s names a tag, where a digest cannot be pinned; point envrepo.values_path at the digest key (e.g. image.digest) or at a key holding the whole image reference", path)}
	}
	if leaf != "digest" || repo != "" {
		if err := checkRepo(repo); err != nil {
			return nil, err
		}
	}
	f, err := parseYAML(data)
	if err != nil {
		return nil, err
	}
	m, err := helmRoot(f)
	if err != nil {
		return nil, err
	}
	value := d.String()
	if leaf != "digest" {
		value = repo + "@" + d.String()
	}
	for i, k := range keys[:len(keys)-1] {
		ki, v := lookup(m, k)
		switch {
		case ki < 0:
			f.insertPair(m, -1, keys[i:], value)
			return helmFinish(f, path, repo, d, leaf)
		case v.Kind == yaml.MappingNode:
			m = v
		case isNull(v):
			// "image:" with nothing under it: make it a map.
			nm := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			f.inPlace, f.changed = false, true
			m.Content[ki+1] = nm
			m = nm
		default:
			return nil, editErr(v, path, "values path %s: %s is %s, want a map; fix envrepo.values_path", path, strings.Join(keys[:i+1], "."), kindName(v))
		}
	}
	li, lv := lookup(m, leaf)
	switch {
	case li < 0:
		after := -1
		if leaf == "digest" {
			after, _ = lookup(m, "repository")
		}
		f.insertPair(m, after, []string{leaf}, value)
	case lv.Kind != yaml.ScalarNode:
		return nil, editErr(lv, path, "values path %s is %s, want a string", path, kindName(lv))
	default:
		f.setScalar(lv, value)
	}
	if leaf == "digest" && repo != "" {
		if _, rv := lookup(m, "repository"); rv != nil && rv.Kind == yaml.ScalarNode {
			host, rest := splitHost(repo)
			if _, gv := lookup(m, "registry"); gv != nil && gv.Kind == yaml.ScalarNode && host != "" {
				f.setScalar(gv, host)
				f.setScalar(rv, rest)
			} else {
				f.setScalar(rv, repo)
			}
		}
	}
	return helmFinish(f, path, repo, d, leaf)
}

func helmFinish(f *yamlFile, path, repo string, d image.Digest, leaf string) ([]byte, error) {
	out, err := f.bytes()
	if err != nil {
		return nil, err
	}
	// A digest key without a repository beside it pins the digest alone;
	// the chart supplies the repository.
	return out, assertPinned(out, func(g *yamlFile) (Ref, error) { return readHelm(g, path) }, repo, d, leaf == "digest")
}

// helmRoot returns the top-level map of a values file, creating it in an
// empty file.
func helmRoot(f *yamlFile) (*yaml.Node, error) {
	docs := nonEmpty(f.docs)
	if len(docs) > 1 {
		return nil, &EditError{Msg: fmt.Sprintf("want one YAML document in a values file, found %d", len(docs))}
	}
	if len(docs) == 0 {
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		if len(f.docs) > 0 {
			f.inPlace = false // an empty document exists; re-encode rather than guess where
			f.docs[0].Content = []*yaml.Node{m}
		} else {
			f.docs = []*yaml.Node{{Kind: yaml.DocumentNode, Content: []*yaml.Node{m}}}
		}
		return m, nil
	}
	root := content(docs[0])
	if isNull(root) {
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		f.inPlace, f.changed = false, true
		docs[0].Content[0] = m
		return m, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, editErr(root, "", "not a values file: the top level is %s, want a map", kindName(root))
	}
	return root, nil
}

// valuesPath splits a dotted values path.
func valuesPath(path string) ([]string, error) {
	keys := strings.Split(path, ".")
	for _, k := range keys {
		if strings.TrimSpace(k) == "" || !utf8.ValidString(k) || strings.ContainsFunc(k, unicode.IsControl) {
			return nil, &EditError{Key: path, Msg: fmt.Sprintf("values path %q: want dotted keys such as image.digest; fix envrepo.values_path", path)}
		}
	}
	return keys, nil
}

// splitHost splits a registry host off a repository, the way image
// references do: the first component is a host when it has a dot or a port,
// or is localhost.
func splitHost(repo string) (host, rest string) {
	first, rest, ok := strings.Cut(repo, "/")
	if ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return first, rest
	}
	return "", repo
}

func readHelm(f *yamlFile, path string) (Ref, error) {
	keys, err := valuesPath(path)
	if err != nil {
		return Ref{}, err
	}
	docs := nonEmpty(f.docs)
	if len(docs) != 1 {
		return Ref{}, &EditError{Key: path, Msg: fmt.Sprintf("values path %s not found: the file has %d YAML documents", path, len(docs))}
	}
	m := content(docs[0])
	for i, k := range keys[:len(keys)-1] {
		_, v := lookup(m, k)
		if v == nil || v.Kind != yaml.MappingNode {
			return Ref{}, editErr(m, path, "values path %s not found: no map at %s", path, strings.Join(keys[:i+1], "."))
		}
		m = v
	}
	leaf := keys[len(keys)-1]
	_, v := lookup(m, leaf)
	if leaf != "digest" {
		if v == nil || v.Kind != yaml.ScalarNode {
			return Ref{}, editErr(m, path, "values path %s not found", path)
		}
		if isNull(v) || v.Value == "" {
			return Ref{}, nil
		}
		return parseRef(v, path, v.Value)
	}
	// A digest key reads with its siblings; without a digest (the key
	// missing or empty) what is left is the tag-only reference.
	var r Ref
	if _, rv := lookup(m, "repository"); rv != nil && rv.Kind == yaml.ScalarNode && !isNull(rv) {
		r.Repository = rv.Value
		if reg, ok := scalarValue(m, "registry"); ok && reg != "" {
			r.Repository = reg + "/" + rv.Value
		}
	}
	if _, tv := lookup(m, "tag"); tv != nil && tv.Kind == yaml.ScalarNode && !isNull(tv) {
		r.Tag = tv.Value
	}
	switch {
	case v == nil || isNull(v) || v.Kind == yaml.ScalarNode && v.Value == "":
		return r, nil
	case v.Kind != yaml.ScalarNode:
		return Ref{}, editErr(v, path, "values path %s is %s, want a string", path, kindName(v))
	}
	d, err := image.ParseDigest(v.Value)
	if err != nil {
		return Ref{}, editErr(v, path, "values path %s: %q is not a digest", path, v.Value)
	}
	r.Digest = d
	return r, nil
}

// --- manifests ---

// containerKeys are the pod spec fields that hold containers.
var containerKeys = map[string]bool{"containers": true, "initContainers": true, "ephemeralContainers": true}

// PinManifest pins repo@d in every container and init container, in every
// document of a Kubernetes manifest, whose image repository (ignoring tag
// and digest) is image or repo. It walks the documents generically, so any
// workload shape (Deployment, StatefulSet, DaemonSet, Job, CronJob, Pod,
// List) is covered.
func PinManifest(data []byte, image, repo string, d image.Digest) ([]byte, error) {
	if err := checkDigest(d); err != nil {
		return nil, err
	}
	if err := checkName("image name", image); err != nil {
		return nil, err
	}
	if err := checkRepo(repo); err != nil {
		return nil, err
	}
	f, err := parseYAML(data)
	if err != nil {
		return nil, err
	}
	images := containerImages(f, image, repo)
	if len(images) == 0 {
		return nil, noContainer(image, repo)
	}
	for _, n := range images {
		f.setScalar(n, repo+"@"+d.String())
	}
	out, err := f.bytes()
	if err != nil {
		return nil, err
	}
	return out, assertPinned(out, func(g *yamlFile) (Ref, error) { return readManifest(g, image, repo) }, repo, d, false)
}

func noContainer(image, repo string) error {
	names := image
	if repo != image {
		names += " or " + repo
	}
	return &EditError{Key: "image", Msg: fmt.Sprintf("no container image named %s; fix envrepo.image", names)}
}

// containerImages returns the image scalars of the containers whose
// repository is image or repo. Aliases are not followed: an edit through
// one would change every place the anchor is used.
func containerImages(f *yamlFile, image, repo string) []*yaml.Node {
	var out []*yaml.Node
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Kind != yaml.ScalarNode || !containerKeys[k.Value] || v.Kind != yaml.SequenceNode {
					continue
				}
				for _, c := range v.Content {
					if _, img := lookup(c, "image"); img != nil && img.Kind == yaml.ScalarNode {
						if r, _, _ := splitRef(img.Value); r == image || r == repo {
							out = append(out, img)
						}
					}
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	for _, doc := range f.docs {
		walk(doc)
	}
	return out
}

func readManifest(f *yamlFile, image, repo string) (Ref, error) {
	images := containerImages(f, image, repo)
	if len(images) == 0 {
		return Ref{}, noContainer(image, repo)
	}
	first, err := parseRef(images[0], "image", images[0].Value)
	if err != nil {
		return Ref{}, err
	}
	for _, n := range images[1:] {
		if n.Value != images[0].Value {
			return first, editErr(n, "image", "containers pin different references: %s (line %d) and %s (line %d)", images[0].Value, images[0].Line, n.Value, n.Line)
		}
	}
	return first, nil
}

// assertPinned reads the edited file back and checks that it pins repo@d
// with no tag: the last guard against ever writing a tag-only reference.
// helmDigestKey relaxes it for a helm digest key, which may have no
// repository beside it (the chart supplies one) and a tag the chart ignores
// once a digest is set.
func assertPinned(out []byte, read func(*yamlFile) (Ref, error), repo string, d image.Digest, helmDigestKey bool) error {
	f, err := parseYAML(out)
	if err != nil {
		return fmt.Errorf("edited file does not parse: %w", err)
	}
	r, err := read(f)
	if err != nil {
		return fmt.Errorf("edited file: %w", err)
	}
	ok := r.Digest == d && r.Tag == "" && r.Repository == repo
	if helmDigestKey {
		ok = r.Digest == d && (repo == "" || r.Repository == "" || r.Repository == repo)
	}
	if !ok {
		return fmt.Errorf("edited file pins %q, not %s@%s; edit it by hand", r.String(), repo, d)
	}
	return nil
}
