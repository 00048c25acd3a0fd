package sqslocal

import (
	"encoding/base64"
	"sort"
	"strings"
	"time"
)

// moveTask is a message move task (StartMessageMoveTask). The emulator moves a task's
// messages when it starts, so a task is COMPLETED as soon as StartMessageMoveTask answers.
type moveTask struct {
	Handle         string    `json:"handle"`
	Status         string    `json:"status"`
	SourceArn      string    `json:"sourceArn"`
	DestinationArn string    `json:"destinationArn,omitempty"`
	MaxPerSecond   *int      `json:"maxPerSecond,omitempty"`
	Moved          int64     `json:"moved"`
	ToMove         int64     `json:"toMove"`
	Started        time.Time `json:"started"`
}

// moveRequest is the union of the message move tasks' inputs.
type moveRequest struct {
	SourceArn, DestinationArn, TaskHandle string
	MaxNumberOfMessagesPerSecond          *int
	MaxResults                            *int
}

type deadLetterSourcesOutput struct {
	QueueUrls []string `json:"queueUrls"`
	NextToken string   `json:",omitempty"`
}

type startMoveOutput struct{ TaskHandle string }

type moveTaskResult struct {
	TaskHandle                        string `json:",omitempty"`
	Status                            string
	SourceArn                         string
	DestinationArn                    string `json:",omitempty"`
	MaxNumberOfMessagesPerSecond      *int   `json:",omitempty"`
	ApproximateNumberOfMessagesMoved  int64
	ApproximateNumberOfMessagesToMove int64
	StartedTimestamp                  int64
}

type listMoveOutput struct {
	Results []moveTaskResult
}

type cancelMoveOutput struct{ ApproximateNumberOfMessagesMoved int64 }

// listDeadLetterSources lists the queues whose RedrivePolicy names the queue name as their
// dead-letter queue, by URL, in name order, paged by MaxResults (1 to 1000) and NextToken.
func (s *Service) listDeadLetterSources(name string, maxResults *int, token string) (*deadLetterSourcesOutput, error) {
	if maxResults != nil && (*maxResults < 1 || *maxResults > 1000) {
		return nil, errInvalidParameter("Value %d for parameter MaxResults is invalid. Reason: must be between 1 and 1000.", *maxResults)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.queueLocked(name); err != nil {
		return nil, err
	}
	arn := s.QueueARN(name)
	var names []string
	for n, q := range s.queues {
		if p, err := parseRedrive(q.Attributes["RedrivePolicy"]); err == nil && p.target == arn {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := &deadLetterSourcesOutput{QueueUrls: []string{}}
	for _, n := range names {
		if token != "" && n <= token {
			continue
		}
		if maxResults != nil && len(out.QueueUrls) == *maxResults {
			out.NextToken = out.QueueUrls[len(out.QueueUrls)-1][strings.LastIndex(out.QueueUrls[len(out.QueueUrls)-1], "/")+1:]
			break
		}
		out.QueueUrls = append(out.QueueUrls, s.QueueURL(n))
	}
	return out, nil
}

// queueOfARN returns the name of a queue of this emulator's account and region by ARN.
func (s *Service) queueOfARN(arn, param string) (*queue, error) {
	prefix := "arn:aws:sqs:" + s.opts.Region + ":" + s.opts.AccountID + ":"
	q, ok := s.queues[strings.TrimPrefix(arn, prefix)]
	if !strings.HasPrefix(arn, prefix) || !ok {
		return nil, senderError("ResourceNotFoundException", "ResourceNotFoundException",
			"The resource that you specified for the %s parameter doesn't exist: %s (create the queue first)", param, arn)
	}
	return q, nil
}

// startMove serves StartMessageMoveTask: the source must be a dead-letter queue of another
// queue; its messages go to DestinationArn, or back to the queue each came from.
func (s *Service) startMove(in *moveRequest) (*startMoveOutput, error) {
	if in.SourceArn == "" {
		return nil, errMissingParameter("SourceArn")
	}
	if p := in.MaxNumberOfMessagesPerSecond; p != nil && (*p < 1 || *p > 500) {
		return nil, errInvalidParameter("Value %d for parameter MaxNumberOfMessagesPerSecond is invalid. Reason: must be between 1 and 500.", *p)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	src, err := s.queueOfARN(in.SourceArn, "SourceArn")
	if err != nil {
		return nil, err
	}
	isDLQ := false
	for _, q := range s.queues {
		if p, err := parseRedrive(q.Attributes["RedrivePolicy"]); err == nil && p.target == in.SourceArn {
			isDLQ = true
		}
	}
	if !isDLQ {
		return nil, errInvalidParameter("Source queue must be configured as a Dead Letter Queue.")
	}
	var dst *queue
	if in.DestinationArn != "" {
		if dst, err = s.queueOfARN(in.DestinationArn, "DestinationArn"); err != nil {
			return nil, err
		}
	}
	now := s.clock.Now()
	task := &moveTask{Handle: base64.RawURLEncoding.EncodeToString([]byte(newID() + ":" + in.SourceArn)), Status: "COMPLETED",
		SourceArn: in.SourceArn, DestinationArn: in.DestinationArn, MaxPerSecond: in.MaxNumberOfMessagesPerSecond, Started: now}
	kept := src.Messages[:0]
	for _, m := range src.Messages {
		to := dst
		if to == nil {
			to = s.queues[strings.TrimPrefix(m.DeadLetterSource, "arn:aws:sqs:"+s.opts.Region+":"+s.opts.AccountID+":")]
		}
		if to == nil || to == src || m.Receipt != "" && m.VisibleAt.After(now) {
			kept = append(kept, m)
			continue
		}
		m.Receipt, m.ReceiveCount, m.FirstReceived, m.VisibleAt, m.DeadLetterSource = "", 0, time.Time{}, now, ""
		to.Messages = append(to.Messages, m)
		to.signalLocked()
		task.Moved++
	}
	src.Messages = kept
	task.ToMove = task.Moved
	s.tasks = append(s.tasks, task)
	s.persistLocked()
	return &startMoveOutput{TaskHandle: task.Handle}, nil
}

// listMoves serves ListMessageMoveTasks: the source's tasks, newest first, at most
// MaxResults (1 to 10, default 1).
func (s *Service) listMoves(in *moveRequest) (*listMoveOutput, error) {
	if in.SourceArn == "" {
		return nil, errMissingParameter("SourceArn")
	}
	n := intOr(in.MaxResults, 1)
	if n < 1 || n > 10 {
		return nil, errInvalidParameter("Value %d for parameter MaxResults is invalid. Reason: must be between 1 and 10.", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.queueOfARN(in.SourceArn, "SourceArn"); err != nil {
		return nil, err
	}
	out := &listMoveOutput{Results: []moveTaskResult{}}
	for i := len(s.tasks) - 1; i >= 0 && len(out.Results) < n; i-- {
		t := s.tasks[i]
		if t.SourceArn != in.SourceArn {
			continue
		}
		r := moveTaskResult{Status: t.Status, SourceArn: t.SourceArn, DestinationArn: t.DestinationArn, MaxNumberOfMessagesPerSecond: t.MaxPerSecond,
			ApproximateNumberOfMessagesMoved: t.Moved, ApproximateNumberOfMessagesToMove: t.ToMove, StartedTimestamp: t.Started.UnixMilli()}
		if t.Status == "RUNNING" {
			r.TaskHandle = t.Handle
		}
		out.Results = append(out.Results, r)
	}
	return out, nil
}

// cancelMove serves CancelMessageMoveTask: only a RUNNING task can be cancelled, and the
// emulator's tasks complete when they start.
func (s *Service) cancelMove(in *moveRequest) (*cancelMoveOutput, error) {
	if in.TaskHandle == "" {
		return nil, errMissingParameter("TaskHandle")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tasks {
		if t.Handle != in.TaskHandle {
			continue
		}
		if t.Status != "RUNNING" {
			return nil, senderError("ResourceNotFoundException", "ResourceNotFoundException",
				"The message move task %s is %s, not RUNNING, so it cannot be cancelled (the local emulator moves the messages when the task starts)", in.TaskHandle, t.Status)
		}
		t.Status = "CANCELLED"
		s.persistLocked()
		return &cancelMoveOutput{ApproximateNumberOfMessagesMoved: t.Moved}, nil
	}
	return nil, senderError("ResourceNotFoundException", "ResourceNotFoundException",
		"No message move task has the handle %s: pass a TaskHandle StartMessageMoveTask returned", in.TaskHandle)
}
