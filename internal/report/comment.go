package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/plan"
)

// CommentMarker is the hidden line that starts every plan comment of a deployment: CI
// finds the comment it posted on a pull request by it, and updates that comment instead
// of adding another. It names the deployment, so a pull request that changes several
// deployments has one comment for each.
func CommentMarker(deployment string) string {
	// Only "-->" ends the comment, and deployment names hold no '>' nor line breaks
	// (bucket.CheckDeployment); they are dropped should another kind of name come here.
	return "<!-- cairn:plan deployment=" + strings.NewReplacer(">", "", "\n", "").Replace(deployment) + " -->"
}

// CommentLimit is the most characters GitHub takes in a pull-request comment.
const CommentLimit = 65536

// PlanComment writes the plan as PlanMarkdown does, but in at most limit bytes (and so
// characters; CommentLimit when limit <= 0): when the whole plan is longer, it keeps the
// head (the marker, what is deleted and replaced, the capabilities, the diagram and the
// table of stacks) and as many stacks' sections as fit in deploy order, and ends with
// where the whole plan is: its Markdown in S3, next to the plan document.
func PlanComment(w io.Writer, p *plan.Document, limit int) error {
	if limit <= 0 {
		limit = CommentLimit
	}
	head, stacks := planMarkdown(p)
	whole := head + strings.Join(stacks, "")
	if len(whole) <= limit {
		_, err := io.WriteString(w, whole)
		return err
	}
	where := Code(bucket.URI(p.Bundle.Bucket, bucket.PlanMarkdownKey(p.Deployment, p.ID)))
	note := func(omitted string) string {
		return fmt.Sprintf("\n---\n\n**This plan is too long for a comment** (%d characters; GitHub takes %d): %s are left out. The whole plan is at %s (%s).\n",
			len(whole), CommentLimit, omitted, where, Code("cairn plans "+p.Deployment+" "+p.ID+" --format md"))
	}
	// The longest note this can end with: its numbers at their widest.
	budget := limit - max(len(note(fmt.Sprintf("the sections of %d of %d stacks", len(stacks), len(stacks)))),
		len(note(fmt.Sprintf("the rest of the summary and the sections of all %d stacks", len(stacks)))))
	var b strings.Builder
	if len(head) > budget {
		// Even the head is too long (thousands of stacks): cut it at a line.
		cut := strings.LastIndexByte(head[:max(0, budget-len("```\n"))], '\n') + 1
		b.WriteString(closeFence(head[:cut]))
		b.WriteString(note(fmt.Sprintf("the rest of the summary and the sections of all %d stacks", len(stacks))))
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString(head)
	kept := 0
	for _, s := range stacks {
		if b.Len()+len(s) > budget {
			break
		}
		b.WriteString(s)
		kept++
	}
	b.WriteString(note(fmt.Sprintf("the sections of %d of %d stacks", len(stacks)-kept, len(stacks))))
	_, err := io.WriteString(w, b.String())
	return err
}

// closeFence closes a code block left open by a cut, so the note after it renders.
func closeFence(s string) string {
	if strings.Count(s, "```")%2 == 1 {
		return s + "```\n"
	}
	return s
}
