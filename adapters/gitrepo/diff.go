package gitrepo

import (
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// unifiedDiff renders the change of one file as git would ("diff --git",
// index line, hunks with three lines of context), through go-git's own
// unified encoder. It needs no objects in a repository, so Preview, a new
// commit and an existing branch all show the change the same way.
func unifiedDiff(path string, mode filemode.FileMode, before, after []byte) (string, error) {
	if string(before) == string(after) {
		return "", nil
	}
	var chunks []fdiff.Chunk
	for _, d := range diff.Do(string(before), string(after)) {
		op := fdiff.Equal
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = fdiff.Delete
		case diffmatchpatch.DiffInsert:
			op = fdiff.Add
		}
		chunks = append(chunks, chunk{d.Text, op})
	}
	p := patch{filePatch{
		from:   file{plumbing.ComputeHash(plumbing.BlobObject, before), mode, path},
		to:     file{plumbing.ComputeHash(plumbing.BlobObject, after), mode, path},
		chunks: chunks,
	}}
	var b strings.Builder
	if err := fdiff.NewUnifiedEncoder(&b, fdiff.DefaultContextLines).Encode(p); err != nil {
		return "", err
	}
	return b.String(), nil
}

type patch []fdiff.FilePatch

func (p patch) FilePatches() []fdiff.FilePatch { return p }
func (p patch) Message() string                { return "" }

type filePatch struct {
	from, to file
	chunks   []fdiff.Chunk
}

func (p filePatch) IsBinary() bool                  { return false }
func (p filePatch) Files() (fdiff.File, fdiff.File) { return p.from, p.to }
func (p filePatch) Chunks() []fdiff.Chunk           { return p.chunks }

type file struct {
	hash plumbing.Hash
	mode filemode.FileMode
	path string
}

func (f file) Hash() plumbing.Hash     { return f.hash }
func (f file) Mode() filemode.FileMode { return f.mode }
func (f file) Path() string            { return f.path }

type chunk struct {
	content string
	op      fdiff.Operation
}

func (c chunk) Content() string       { return c.content }
func (c chunk) Type() fdiff.Operation { return c.op }
