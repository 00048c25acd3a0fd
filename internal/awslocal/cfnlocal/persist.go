package cfnlocal

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// The emulator's state persists under Dir as a snapshot (cloudformation.json, the whole
// state, written atomically by statefile) and a journal (cloudformation.journal): JSON
// lines of what changed since the snapshot, appended after every request and every tick.
// What a save appends is what changed: the stacks touched (their header, the resources whose
// events were added, the new events, their operation's progress), change sets, drift
// detections and the small rest. Templates are written once, by content hash, so a 1 MB
// template is not rewritten with every resource operation: a stack of n resources costs
// time linear in n, where rewriting the whole state made it quadratic.
//
// NoEcho values are sealed in both (secrets.go).
//
// When the journal outgrows the snapshot (twice its size, at least journalFloor), the
// state is compacted: a new snapshot of the next generation, then a new journal of that
// generation. The journal's first line names its generation, and a journal of another
// generation than the snapshot's (a crash between the two writes) is ignored. A torn last
// line (a crash while appending) is ignored too.

const journalFloor = 4 << 20

// snapshot is the snapshot file: the persisted state and the generation of journal that
// applies to it.
type snapshot struct {
	Gen int `json:"Gen,omitempty"`
	persisted
}

// stackSaved is what the journal holds of a stack, to know what to append.
type stackSaved struct {
	known                bool
	dirty                bool
	res                  map[string]bool // logical ids changed since the last save
	events               int
	body, original       string // as last written, and their hashes
	bodyRef, originalRef string
	op, undo             opShape
}

// opShape identifies the unchanging part of an operation: written again only when the
// operation, or its steps (a new phase), change.
type opShape struct {
	op    *operation
	steps *step
	n     int
	phase string
}

func shapeOf(op *operation) opShape {
	if op == nil {
		return opShape{}
	}
	sh := opShape{op: op, n: len(op.Steps), phase: op.Kind + "/" + op.Phase}
	if len(op.Steps) > 0 {
		sh.steps = &op.Steps[0]
	}
	return sh
}

// touch marks a stack changed: the next save writes its header and its operation.
func (s *Service) touch(st *stack) {
	if st != nil {
		st.saved.dirty = true
	}
}

// touchResource marks a stack's resource changed.
func (s *Service) touchResource(st *stack, logicalID string) {
	if st == nil {
		return
	}
	st.saved.dirty = true
	if st.saved.res == nil {
		st.saved.res = map[string]bool{}
	}
	st.saved.res[logicalID] = true
}

// journal is the open journal file and what it holds of the shared parts of the state.
type journal struct {
	seal       *sealer
	f          *os.File
	gen        int
	size, snap int64
	templates  map[string]bool // hashes written to this journal
	changeSets map[*changeSet]string
	drifts     map[*driftDetection]string
	executed   int
	meta       []byte
	buf        bytes.Buffer
}

// record is one line of the journal.
type record struct {
	T        string            `json:"t"`
	Gen      int               `json:"gen,omitempty"`
	ID       string            `json:"id,omitempty"` // the stack's (or change set's) id
	Key      string            `json:"k,omitempty"`  // a resource's logical id; "op" or "undo"
	N        int               `json:"n,omitempty"`  // the index the appended items start at
	Refs     map[string]string `json:"refs,omitempty"`
	V        json.RawMessage   `json:"v,omitempty"`
	Template string            `json:"body,omitempty"`
}

func (s *Service) snapshotPath() string { return filepath.Join(s.o.Dir, "cloudformation.json") }
func (s *Service) journalPath() string  { return filepath.Join(s.o.Dir, "cloudformation.journal") }

// load reads the snapshot and applies the journal of its generation, then compacts, so
// the journal starts empty and knows what it holds.
func (s *Service) load() error {
	z, err := newSealer(s.o.Dir)
	if err != nil {
		return fmt.Errorf("cloudformation emulator: %w", err)
	}
	snap, err := readSnapshot(s.snapshotPath(), z)
	if err != nil {
		return fmt.Errorf("cloudformation emulator: %w", err)
	}
	s.st = snap.persisted
	for _, st := range s.st.Stacks {
		s.byID[st.ID] = st
	}
	if err := s.replay(snap.Gen, z); err != nil {
		return fmt.Errorf("cloudformation emulator: %w", err)
	}
	return s.compactWith(snap.Gen+1, z)
}

// readSnapshot reads the snapshot at path, unsealing its secrets; a missing file is an
// empty state.
func readSnapshot(path string, z *sealer) (snapshot, error) {
	var snap snapshot
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return snap, nil
	}
	if err != nil {
		return snap, fmt.Errorf("read state %s: %w", path, err)
	}
	if err := json.Unmarshal(z.unseal(b), &snap); err != nil {
		return snap, fmt.Errorf("state %s is corrupt (%v): fix or delete the file", path, err)
	}
	return snap, nil
}

// replay applies the journal of generation gen to the state.
func (s *Service) replay(gen int, z *sealer) error {
	f, err := os.Open(s.journalPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	rd := bufio.NewReaderSize(f, 1<<20)
	templates := map[string]string{}
	for line := 0; ; line++ {
		b, err := rd.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return nil // a line without its newline is torn: ignored
		}
		if err != nil {
			return err
		}
		var rec record
		if err := json.Unmarshal(z.unseal(b), &rec); err != nil {
			return fmt.Errorf("journal %s is corrupt at line %d (%v): fix or delete it", s.journalPath(), line+1, err)
		}
		if line == 0 {
			if rec.T != "gen" || rec.Gen != gen {
				return nil // written for another snapshot
			}
			continue
		}
		if err := s.apply(rec, templates); err != nil {
			return fmt.Errorf("journal %s line %d: %w", s.journalPath(), line+1, err)
		}
	}
}

// apply applies one journal record.
func (s *Service) apply(rec record, templates map[string]string) error {
	tpl := func(ref string) string { return templates[ref] }
	switch rec.T {
	case "tpl":
		templates[rec.Key] = rec.Template
	case "meta":
		var m struct {
			Seq      int
			Faults   []*Fault
			StandIns []*StandIn
			Signals  []*SignalStandIn
		}
		if err := json.Unmarshal(rec.V, &m); err != nil {
			return err
		}
		s.st.Seq, s.st.Faults, s.st.StandIns, s.st.Signals = m.Seq, m.Faults, m.StandIns, m.Signals
	case "executed":
		var l []ExecutedChangeSet
		if err := json.Unmarshal(rec.V, &l); err != nil {
			return err
		}
		s.st.Executed = append(s.st.Executed[:min(rec.N, len(s.st.Executed))], l...)
	case "drift":
		var d driftDetection
		if err := json.Unmarshal(rec.V, &d); err != nil {
			return err
		}
		if rec.N < len(s.st.Drifts) {
			s.st.Drifts[rec.N] = &d
		} else {
			s.st.Drifts = append(s.st.Drifts, &d)
		}
	case "cs", "rmcs":
		i := -1
		for j, cs := range s.st.ChangeSets {
			if cs.ID == rec.ID {
				i = j
			}
		}
		if rec.T == "rmcs" {
			if i >= 0 {
				s.st.ChangeSets = append(s.st.ChangeSets[:i], s.st.ChangeSets[i+1:]...)
			}
			return nil
		}
		cs := &changeSet{}
		if err := json.Unmarshal(rec.V, cs); err != nil {
			return err
		}
		cs.Body, cs.Original = tpl(rec.Refs["body"]), tpl(rec.Refs["original"])
		if i >= 0 {
			s.st.ChangeSets[i] = cs
		} else {
			s.st.ChangeSets = append(s.st.ChangeSets, cs)
		}
	case "stack":
		h := &stack{}
		if err := json.Unmarshal(rec.V, h); err != nil {
			return err
		}
		h.Body, h.Original = tpl(rec.Refs["body"]), tpl(rec.Refs["original"])
		if st := s.byID[rec.ID]; st != nil {
			h.Resources, h.Events, h.Op, h.Undo = st.Resources, st.Events, st.Op, st.Undo
			*st = *h
		} else {
			h.Resources = map[string]*resource{}
			s.st.Stacks = append(s.st.Stacks, h)
			s.byID[h.ID] = h
		}
	case "res", "events", "op", "opstate":
		st := s.byID[rec.ID]
		if st == nil {
			return fmt.Errorf("%s of unknown stack %s", rec.T, rec.ID)
		}
		switch rec.T {
		case "res":
			var r *resource
			if err := json.Unmarshal(rec.V, &r); err != nil {
				return err
			}
			if r == nil {
				delete(st.Resources, rec.Key)
			} else {
				st.Resources[rec.Key] = r
			}
		case "events":
			var l []event
			if err := json.Unmarshal(rec.V, &l); err != nil {
				return err
			}
			st.Events = append(st.Events[:min(rec.N, len(st.Events))], l...)
		case "op":
			var op *operation
			if err := json.Unmarshal(rec.V, &op); err != nil {
				return err
			}
			if op != nil {
				op.Body, op.OldBody = tpl(rec.Refs["body"]), tpl(rec.Refs["oldBody"])
				op.Original, op.OldOriginal = tpl(rec.Refs["original"]), tpl(rec.Refs["oldOriginal"])
			}
			st.setOp(rec.Key, op)
		case "opstate":
			op := st.Op
			if rec.Key == "undo" {
				op = st.Undo
			}
			if op == nil {
				return fmt.Errorf("progress of no operation of stack %s", rec.ID)
			}
			return json.Unmarshal(rec.V, (*opState)(op))
		}
	default:
		return fmt.Errorf("unknown record %q", rec.T)
	}
	return nil
}

func (st *stack) setOp(which string, op *operation) {
	if which == "undo" {
		st.Undo = op
	} else {
		st.Op = op
	}
}

// opState is how an operation progresses: the fields a step changes, written with every
// save of its stack (the operation's other fields are written when it or its phase begins).
type opState operation

func (o *opState) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Cur          int
		Started      bool
		Due          time.Time
		Halted       bool
		Fail         string
		CRRequestID  string
		CRResult     *crResult
		CROldProps   map[string]any
		NestedID     string
		NestedResult *nestedResult
		MonitorUntil time.Time
		Signals      *signalWait
		Touched      []string
		Cleanup      []*resource
		Failed       []string
		Skip         map[string]bool
		Rollback     bool
	}{o.Cur, o.Started, o.Due, o.Halted, o.Fail, o.CRRequestID, o.CRResult, o.CROldProps, o.NestedID, o.NestedResult,
		o.MonitorUntil, o.Signals, o.Touched, o.Cleanup, o.Failed, o.Skip, o.Rollback})
}

func (o *opState) UnmarshalJSON(b []byte) error {
	type plain operation // the same field names: decoding sets the ones present
	return json.Unmarshal(b, (*plain)(o))
}

// save appends what changed since the last save to the journal (compacting it when it has
// grown), or does nothing without Dir. Called with mu held.
func (s *Service) save() error {
	if s.o.Dir == "" {
		return nil
	}
	if s.j == nil {
		z, err := newSealer(s.o.Dir)
		if err == nil {
			err = s.compactWith(1, z)
		}
		if err != nil {
			return fmt.Errorf("cloudformation emulator: write state: %w", err)
		}
		return nil
	}
	j := s.j
	j.buf.Reset()
	if err := s.appendChanges(j); err != nil {
		return fmt.Errorf("cloudformation emulator: encode state: %w", err)
	}
	if j.buf.Len() == 0 {
		return nil
	}
	n, err := j.f.Write(j.seal.seal(j.buf.Bytes()))
	j.size += int64(n)
	if err != nil {
		return fmt.Errorf("cloudformation emulator: write state: %w", err)
	}
	if j.size > max(2*j.snap, journalFloor) {
		if err := s.compact(j.gen + 1); err != nil {
			return fmt.Errorf("cloudformation emulator: write state: %w", err)
		}
	}
	return nil
}

func (j *journal) put(rec record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	j.buf.Write(b)
	j.buf.WriteByte('\n')
	return nil
}

func (j *journal) putValue(rec record, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	rec.V = b
	return j.put(rec)
}

// ref writes a template once and returns its hash; saved and savedRef are the string last
// referenced and its hash, so an unchanged template is not hashed again.
func (j *journal) ref(body string, saved, savedRef *string) (string, error) {
	if body == "" {
		return "", nil
	}
	if *savedRef != "" && body == *saved && j.templates[*savedRef] {
		return *savedRef, nil
	}
	sum := sha256.Sum256([]byte(body))
	h := hex.EncodeToString(sum[:16])
	if !j.templates[h] {
		if err := j.put(record{T: "tpl", Key: h, Template: body}); err != nil {
			return "", err
		}
		j.templates[h] = true
	}
	*saved, *savedRef = body, h
	return h, nil
}

// refOnce is ref for templates of operations and change sets, written once per journal.
func (j *journal) refOnce(body string) (string, error) {
	var saved, savedRef string
	return j.ref(body, &saved, &savedRef)
}

func (s *Service) appendChanges(j *journal) error {
	meta, err := json.Marshal(struct {
		Seq      int
		Faults   []*Fault
		StandIns []*StandIn
		Signals  []*SignalStandIn
	}{s.st.Seq, s.st.Faults, s.st.StandIns, s.st.Signals})
	if err != nil {
		return err
	}
	if !bytes.Equal(meta, j.meta) {
		if err := j.put(record{T: "meta", V: meta}); err != nil {
			return err
		}
		j.meta = meta
	}
	if len(s.st.Executed) > j.executed {
		if err := j.putValue(record{T: "executed", N: j.executed}, s.st.Executed[j.executed:]); err != nil {
			return err
		}
		j.executed = len(s.st.Executed)
	}
	for i, d := range s.st.Drifts {
		if j.drifts[d] != d.Status {
			if err := j.putValue(record{T: "drift", N: i}, d); err != nil {
				return err
			}
			j.drifts[d] = d.Status
		}
	}
	for _, st := range s.st.Stacks {
		if !st.saved.known || st.saved.dirty {
			j.seal.add(s.secretsOf(st))
			if err := s.appendStack(j, st); err != nil {
				return err
			}
		}
	}
	seen := make(map[*changeSet]bool, len(s.st.ChangeSets))
	for _, cs := range s.st.ChangeSets {
		seen[cs] = true
		fp := fmt.Sprint(cs.Status, "|", cs.ExecutionStatus, "|", cs.StatusReason, "|", cs.ExecToken, "|", len(cs.Changes), "|", len(cs.Nested), "|", cs.Failure)
		if f, ok := j.changeSets[cs]; ok && f == fp {
			continue
		}
		secrets := map[string]bool{}
		if tpl, err := s.parse(cs.Body); err == nil {
			noEchoValues(secrets, tpl, cs.Params)
		}
		j.seal.add(secrets)
		body, err := j.refOnce(cs.Body)
		if err != nil {
			return err
		}
		original, err := j.refOnce(cs.Original)
		if err != nil {
			return err
		}
		c := *cs
		c.Body, c.Original = "", ""
		if err := j.putValue(record{T: "cs", ID: cs.ID, Refs: map[string]string{"body": body, "original": original}}, &c); err != nil {
			return err
		}
		j.changeSets[cs] = fp
	}
	for cs := range j.changeSets {
		if !seen[cs] {
			if err := j.put(record{T: "rmcs", ID: cs.ID}); err != nil {
				return err
			}
			delete(j.changeSets, cs)
		}
	}
	return nil
}

// appendStack writes what changed of a stack: its header, the resources touched, the new
// events, and its operation (whole when it or its phase is new, else its progress).
func (s *Service) appendStack(j *journal, st *stack) error {
	sv := &st.saved
	body, err := j.ref(st.Body, &sv.body, &sv.bodyRef)
	if err != nil {
		return err
	}
	original, err := j.ref(st.Original, &sv.original, &sv.originalRef)
	if err != nil {
		return err
	}
	h := *st
	h.Resources, h.Events, h.Op, h.Undo, h.Body, h.Original = nil, nil, nil, nil, "", ""
	if err := j.putValue(record{T: "stack", ID: st.ID, Refs: map[string]string{"body": body, "original": original}}, &h); err != nil {
		return err
	}
	if !sv.known {
		for id := range st.Resources {
			s.touchResource(st, id)
		}
		sv.known = true
	}
	for _, id := range sortedKeys(sv.res) {
		if err := j.putValue(record{T: "res", ID: st.ID, Key: id}, st.Resources[id]); err != nil {
			return err
		}
	}
	if len(st.Events) > sv.events {
		if err := j.putValue(record{T: "events", ID: st.ID, N: sv.events}, st.Events[sv.events:]); err != nil {
			return err
		}
		sv.events = len(st.Events)
	}
	for _, which := range []string{"op", "undo"} {
		op, shape := st.Op, &sv.op
		if which == "undo" {
			op, shape = st.Undo, &sv.undo
		}
		if sh := shapeOf(op); sh != *shape {
			if err := j.putOp(st.ID, which, op); err != nil {
				return err
			}
			*shape = sh
		}
		if op != nil {
			if err := j.putValue(record{T: "opstate", ID: st.ID, Key: which}, (*opState)(op)); err != nil {
				return err
			}
		}
	}
	sv.dirty, sv.res = false, nil
	return nil
}

func (j *journal) putOp(stackID, which string, op *operation) error {
	rec := record{T: "op", ID: stackID, Key: which}
	if op == nil {
		return j.putValue(rec, nil)
	}
	rec.Refs = map[string]string{}
	for k, body := range map[string]string{"body": op.Body, "oldBody": op.OldBody, "original": op.Original, "oldOriginal": op.OldOriginal} {
		h, err := j.refOnce(body)
		if err != nil {
			return err
		}
		rec.Refs[k] = h
	}
	o := *op
	o.Body, o.OldBody, o.Original, o.OldOriginal = "", "", "", ""
	return j.putValue(rec, &o)
}

// compact writes the whole state as the snapshot of generation gen and starts its
// journal. Called with mu held.
func (s *Service) compact(gen int) error { return s.compactWith(gen, s.j.seal) }

func (s *Service) compactWith(gen int, z *sealer) error {
	for _, st := range s.st.Stacks {
		z.add(s.secretsOf(st))
	}
	for _, cs := range s.st.ChangeSets {
		secrets := map[string]bool{}
		if tpl, err := s.parse(cs.Body); err == nil {
			noEchoValues(secrets, tpl, cs.Params)
		}
		z.add(secrets)
	}
	b, err := json.Marshal(snapshot{Gen: gen, persisted: s.st})
	if err != nil {
		return err
	}
	b = z.seal(b)
	if err := os.MkdirAll(s.o.Dir, 0o755); err != nil {
		return err
	}
	tmp := s.snapshotPath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.snapshotPath()); err != nil {
		return err
	}
	if s.j != nil {
		s.j.f.Close()
	}
	f, err := os.OpenFile(s.journalPath(), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	j := &journal{seal: z, f: f, gen: gen, snap: int64(len(b)), templates: map[string]bool{},
		changeSets: map[*changeSet]string{}, drifts: map[*driftDetection]string{}, executed: len(s.st.Executed)}
	s.j = j
	// everything is in the snapshot: the journal starts from it
	for _, st := range s.st.Stacks {
		st.saved = stackSaved{known: true, events: len(st.Events), op: shapeOf(st.Op), undo: shapeOf(st.Undo)}
	}
	j.buf.Reset()
	if err := s.appendChanges(j); err != nil { // records the change sets, drifts and meta as known
		return err
	}
	j.buf.Reset()
	clear(j.templates) // what that wrote is not in the journal
	if err := j.put(record{T: "gen", Gen: gen}); err != nil {
		return err
	}
	n, err := f.Write(j.buf.Bytes())
	j.size = int64(n)
	return err
}
