package policy

import (
	"embed"
	"io/fs"
)

//go:embed library
var library embed.FS

// Library is cairn's starter library of policies (internal/policy/library, docs/policy.md),
// with its Rego tests: `cairn policy init DIR` is not there yet; copy the files from the
// repository, or read them with LibrarySet.
func Library() fs.FS {
	sub, err := fs.Sub(library, "library")
	if err != nil {
		panic(err) // the embedded directory is there by construction
	}
	return sub
}

// LibrarySet is the starter library as a policy set of origin.
func LibrarySet(origin string) (Set, error) { return Load(Library(), "library", origin) }
