package cfnlocal

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// bigTemplate is a template of n topics with tags enough to make it size bytes long.
func bigTemplate(n, size int) string {
	pad := strings.Repeat("x", max(size/n/6-30, 1))
	var b strings.Builder
	b.WriteString("Resources:\n")
	for i := range n {
		fmt.Fprintf(&b, "  Topic%03d:\n    Type: AWS::SNS::Topic\n    Properties:\n      Tags:\n", i)
		for j := range 6 {
			fmt.Fprintf(&b, "        - {Key: k%d, Value: %s}\n", j, pad)
		}
	}
	return b.String()
}

// BenchmarkBigStackPersisted creates a stack of n resources whose template is n*2 KB (499
// resources: the 1 MB limit) in an emulator that keeps its state under a folder, one
// resource operation per virtual second, and reports the time it takes per resource: it
// stays flat as n grows when persisting is linear in the stack (before the journal, the
// whole state was rewritten per operation: 13.8, 16.3 and 33.8 ms per resource for 125, 250
// and 499 resources, 16.9 s for the 1 MB template; now about 0.7 ms, as without a folder).
func BenchmarkBigStackPersisted(b *testing.B) {
	for _, n := range []int{125, 250, 499} {
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			body := bigTemplate(n, n*2000)
			for b.Loop() {
				dir := b.TempDir()
				e := newEnv(b, func(o *Options) { o.Dir = dir })
				start := time.Now()
				e.create("big", body, nil)
				st := e.stepUntilSettled("big", func() {})
				if st.StackStatus != "CREATE_COMPLETE" {
					b.Fatalf("%s: %s", st.StackStatus, *st.StackStatusReason)
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/float64(n), "µs/resource")
			}
			b.Logf("%d resources, template %d KB", n, len(body)/1000)
		})
	}
}
