package workflow_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// requiredDecisions are the rows docs/ARCHITECTURE.md's "Where is it
// decided" table must have (issue 27): a reader looking for one of these
// rules finds it one hop away.
var requiredDecisions = []string{
	"stale plan", "apply gate", "approval policy", "convergence verdict", "ownership conflict",
	"effort clock", "journal chain", "secret scrubbing", "pull-request gating", "rehearsal drills",
}

// TestArchitectureDocWhereIsItDecided keeps the table honest: every row
// names the packages (or files) where the rule lives and at least one of
// its identifiers, and every path exists and every identifier is declared
// in a package the row names. A rename or a move that forgets the doc
// fails here.
func TestArchitectureDocWhereIsItDecided(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	require.NoError(t, err)
	rows := decisionRows(t, string(doc))
	require.NotEmpty(t, rows, "docs/ARCHITECTURE.md has no \"Where is it decided\" table")

	for _, want := range requiredDecisions {
		found := false
		for _, r := range rows {
			if strings.Contains(strings.ToLower(r.decision), want) {
				found = true
			}
		}
		require.True(t, found, "docs/ARCHITECTURE.md: no \"Where is it decided\" row for %q", want)
	}

	decls := map[string]map[string]bool{} // package dir → declared names
	for _, r := range rows {
		var dirs, idents []string
		for _, m := range backticked.FindAllStringSubmatch(r.where, -1) {
			tok := m[1]
			path := filepath.Join(root, filepath.FromSlash(tok))
			st, statErr := os.Stat(path)
			if statErr == nil || strings.Contains(tok, "/") {
				// A package (the repository's directory) or a file.
				require.NoError(t, statErr, "docs/ARCHITECTURE.md row %q names %s, which does not exist", r.decision, tok)
				if st.IsDir() {
					dirs = append(dirs, path)
				} else {
					dirs = append(dirs, filepath.Dir(path))
				}
				continue
			}
			idents = append(idents, tok)
		}
		require.NotEmpty(t, dirs, "docs/ARCHITECTURE.md row %q names no package", r.decision)
		require.NotEmpty(t, idents, "docs/ARCHITECTURE.md row %q names no identifier: say which function or type decides", r.decision)
		for _, id := range idents {
			found := false
			for _, dir := range dirs {
				if decls[dir] == nil {
					decls[dir] = declaredNames(t, dir)
				}
				if decls[dir][id] {
					found = true
					break
				}
			}
			require.True(t, found, "docs/ARCHITECTURE.md row %q names %s, which none of its packages declares", r.decision, id)
		}
	}
}

// backticked is a `code` span; identifiers are Name or Type.Method.
var backticked = regexp.MustCompile("`([^`]+)`")

type decisionRow struct{ decision, where string }

// decisionRows are the rows of the table under "## Where is it decided":
// the decision and the where cell.
func decisionRows(t *testing.T, doc string) []decisionRow {
	t.Helper()
	_, after, ok := strings.Cut(doc, "## Where is it decided")
	require.True(t, ok, "docs/ARCHITECTURE.md has no \"## Where is it decided\" section")
	if next := strings.Index(after, "\n## "); next >= 0 {
		after = after[:next]
	}
	var rows []decisionRow
	for _, line := range strings.Split(after, "\n") {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| decision") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		require.GreaterOrEqual(t, len(cells), 2, "docs/ARCHITECTURE.md: malformed row %q", line)
		rows = append(rows, decisionRow{decision: strings.TrimSpace(cells[0]), where: cells[1]})
	}
	return rows
}

// declaredNames are the top-level names declared in the Go files of dir
// (tests included: fakes are documented too), and Type.Method for methods.
func declaredNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	pkgs, err := parser.ParseDir(token.NewFileSet(), dir, nil, parser.SkipObjectResolution)
	require.NoError(t, err, dir)
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil || len(d.Recv.List) == 0 {
						names[d.Name.Name] = true
						continue
					}
					recv := d.Recv.List[0].Type
					if s, ok := recv.(*ast.StarExpr); ok {
						recv = s.X
					}
					if g, ok := recv.(*ast.IndexExpr); ok {
						recv = g.X
					}
					if id, ok := recv.(*ast.Ident); ok {
						names[id.Name+"."+d.Name.Name] = true
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							names[s.Name.Name] = true
						case *ast.ValueSpec:
							for _, n := range s.Names {
								names[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return names
}
