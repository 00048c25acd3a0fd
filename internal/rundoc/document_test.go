package rundoc_test

import (
	"testing"

	"github.com/cairn-dev/cairn/internal/rundoc"
)

// TestDecodeDocumentCarriesOlderProtection reads a run document written before the run's
// stacks carried the termination protection wanted and seen: the document's maps move
// into the stacks, so a run in flight across an upgrade still sets what its config wants.
func TestDecodeDocumentCarriesOlderProtection(t *testing.T) {
	doc, err := rundoc.DecodeDocument([]byte(`{"run": {"id": "R1", "deployment": "shop", "status": "running", "stacks": {
		"db": {"name": "db", "phase": "executing"}, "app": {"name": "app", "phase": "pending"}}},
		"protection": {"db": true, "app": false, "disabled": true}, "live_protection": {"app": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	db, app := doc.Run.Stacks["db"], doc.Run.Stacks["app"]
	if !db.Protect || db.Protected || app.Protect || !app.Protected {
		t.Errorf("db %v/%v, app %v/%v: want db wanted and not seen, app seen and not wanted", db.Protect, db.Protected, app.Protect, app.Protected)
	}
	if doc.Protection != nil || doc.LiveProtection != nil {
		t.Error("the older maps are kept beside the stacks: two owners of one fact")
	}
	for _, bad := range []string{`{}`, `not json`} {
		if _, err := rundoc.DecodeDocument([]byte(bad)); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}
