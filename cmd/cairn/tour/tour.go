// Package tour reads the README's quick tour: the lines a newcomer runs first, which its
// test runs as written (TestQuickTour, in a package of its own so that its real-time waits
// on the emulator run beside the other packages' tests) and which the CLI's tests count
// as running the commands they name.
package tour

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Read returns the lines of the quick tour of the README.md at the repository root.
func Read(root string) ([]string, error) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		return nil, err
	}
	return Lines(string(readme))
}

// Lines returns the lines of the quick tour in readme: the first sh block after the
// heading "## Quick tour".
func Lines(readme string) ([]string, error) {
	_, rest, ok := strings.Cut(readme, "\n## Quick tour\n")
	if !ok {
		return nil, errors.New(`README.md has no "## Quick tour" section`)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	block, _, closed := strings.Cut(rest, "\n```\n")
	if !ok || !closed {
		return nil, errors.New("the quick tour has no ```sh block")
	}
	return strings.Split(block, "\n"), nil
}
