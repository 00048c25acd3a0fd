package verdict

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DecodeOverride decodes the override of rule: {"reason": ..., "by": ..., "at": RFC 3339}.
func DecodeOverride(rule string, body []byte) (Override, error) {
	var doc struct {
		Reason string    `json:"reason"`
		By     string    `json:"by"`
		At     time.Time `json:"at"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return Override{}, fmt.Errorf("not an override (%v): write it with `cairn policy override`", err)
	}
	if strings.TrimSpace(doc.Reason) == "" || strings.TrimSpace(doc.By) == "" {
		return Override{}, errors.New("an override needs a reason and who wrote it (by): write it with `cairn policy override`")
	}
	return Override{Rule: rule, Reason: doc.Reason, By: doc.By, At: doc.At.UTC()}, nil
}
