package state

import (
	"encoding/json"
	"fmt"
	"time"
)

// Decode parses a state document, refusing one written by a newer schema.
func Decode(body []byte) (*Graph, error) {
	var g Graph
	if err := json.Unmarshal(body, &g); err != nil {
		return nil, fmt.Errorf("not a cairn state document: %w", err)
	}
	if g.SchemaVersion < 1 || g.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("state document has schema version %d, this cairn reads 1..%d: upgrade cairn", g.SchemaVersion, SchemaVersion)
	}
	if g.Stacks == nil {
		g.Stacks = map[string]*Stack{}
	}
	for name, st := range g.Stacks {
		if st == nil {
			return nil, fmt.Errorf("state document: stack %q is null: restore an earlier version (cairn state history)", name)
		}
	}
	g.Normalize()
	return &g, nil
}

// Version is one stored version of a state object.
type Version struct {
	VersionID    string    `json:"version_id"`
	LastModified time.Time `json:"last_modified"`
	Size         int64     `json:"size"`
	ETag         string    `json:"etag,omitempty"`
	IsLatest     bool      `json:"is_latest"`
	// DeleteMarker: the object was deleted at this point.
	DeleteMarker bool `json:"delete_marker,omitempty"`
}
