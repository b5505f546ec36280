package terraform

import (
	"bufio"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/relcap/relcap/workflow/setup"
)

var _ setup.TerraformFinder = RootFinder{}

// RootFinder finds Terraform root modules by reading .tf files (relcap
// init): a directory of .tf files is a root unless it sits under a
// modules directory or another directory's module block uses it as a
// local source. Reading the blocks' first lines is enough here: a wrong
// guess is shown to the captain, who corrects it.
type RootFinder struct{}

// maxRootDepth bounds the walk: roots sit a few levels down
// (infra/envs/prod), and a release repository may hold much else.
const maxRootDepth = 6

// skipDirs are never roots nor hold any: tool caches and vendored trees.
var skipDirs = []string{"node_modules", "vendor", "modules"}

var (
	backendLine  = regexp.MustCompile(`^\s*(backend\s+"|cloud\s*\{)`)
	providerLine = regexp.MustCompile(`^\s*(provider\s+"|required_providers\s*\{)`)
	moduleSource = regexp.MustCompile(`^\s*source\s*=\s*"(\.\.?/[^"]*)"`)
)

// TerraformRoots lists the root modules under dir, in path order.
func (RootFinder) TerraformRoots(ctx context.Context, dir string) ([]setup.TerraformRoot, error) {
	found := map[string]*setup.TerraformRoot{}
	used := map[string]bool{} // local module sources
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // an unreadable corner is not worth failing init for
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if e.IsDir() {
			r, _ := filepath.Rel(dir, p)
			if p != dir && (strings.HasPrefix(e.Name(), ".") || slices.Contains(skipDirs, e.Name()) || strings.Count(r, string(filepath.Separator)) >= maxRootDepth) {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(p) != ".tf" || !e.Type().IsRegular() {
			return nil
		}
		d := filepath.Dir(p)
		root := found[d]
		if root == nil {
			root = &setup.TerraformRoot{Dir: d}
			found[d] = root
		}
		return scanTF(p, root, used)
	})
	if err != nil {
		return nil, err
	}
	var roots []setup.TerraformRoot
	for d, r := range found {
		if !used[d] {
			roots = append(roots, *r)
		}
	}
	slices.SortFunc(roots, func(a, b setup.TerraformRoot) int { return strings.Compare(a.Dir, b.Dir) })
	return roots, nil
}

// scanTF notes what one .tf file configures and the local modules it uses.
func scanTF(p string, root *setup.TerraformRoot, used map[string]bool) error {
	f, err := os.Open(p)
	if err != nil {
		return nil // unreadable: not evidence either way
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case backendLine.MatchString(line):
			root.Backend = true
		case providerLine.MatchString(line):
			root.Providers = true
		}
		if m := moduleSource.FindStringSubmatch(line); m != nil {
			used[filepath.Clean(filepath.Join(filepath.Dir(p), m[1]))] = true
		}
	}
	return nil
}
