package cfnlocal

import (
	"context"
)

func (s *Service) updateTerminationProtection(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	st.Protected = f.get("EnableTerminationProtection") == "true"
	return struct{ StackId string }{st.ID}, nil
}

func (s *Service) setStackPolicy(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	body := f.get("StackPolicyBody")
	if body == "" && f.get("StackPolicyURL") != "" {
		bucket, key, err := parseS3URL(f.get("StackPolicyURL"))
		if err != nil {
			return nil, err
		}
		if s.o.GetObject == nil {
			return nil, validation("StackPolicyURL cannot be read: the emulator has no S3 attached")
		}
		b, err := s.o.GetObject(context.Background(), bucket, key)
		if err != nil {
			return nil, validation("StackPolicyURL %s cannot be read: %v", f.get("StackPolicyURL"), err)
		}
		body = string(b)
	}
	if _, err := parsePolicy(body); err != nil {
		return nil, err
	}
	st.Policy = body
	return nil, nil
}

func (s *Service) getStackPolicy(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	return struct {
		StackPolicyBody string `xml:",omitempty"`
	}{st.Policy}, nil
}

func (s *Service) continueUpdateRollback(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	if st.Status != "UPDATE_ROLLBACK_FAILED" || st.Op == nil {
		return nil, validation("Stack %s is in %s state and can not continue update rollback (only UPDATE_ROLLBACK_FAILED can)", st.Name, st.Status)
	}
	op := st.Op
	skip := map[string]bool{}
	for _, r := range f.list("ResourcesToSkip") {
		if st.Resources[r] == nil {
			return nil, validation("ResourcesToSkip: %s is not a resource of stack %s", r, st.Name)
		}
		skip[r] = true
	}
	now := s.clk.Now()
	var steps []step
	for _, sp := range op.Steps[op.Cur:] {
		if skip[sp.LogicalID] {
			r := st.Resources[sp.LogicalID]
			s.setResource(st, r, now, "UPDATE_COMPLETE", "Resource update skipped.")
			continue
		}
		steps = append(steps, sp)
	}
	op.Steps, op.Cur, op.Started, op.Halted = steps, 0, false, false
	s.setStatus(st, now, "UPDATE_ROLLBACK_IN_PROGRESS", "User Initiated")
	s.startOp(st, op, now)
	return nil, nil
}

func (s *Service) rollbackStack(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	now := s.clk.Now()
	switch {
	case st.Status == "UPDATE_FAILED" && st.Op != nil:
		st.Op.Halted = false
		s.startUpdateRollback(st, "User Initiated", now)
		s.startOp(st, st.Op, now)
	case st.Status == "CREATE_FAILED":
		var names []string
		if tpl, err := st.template(); err == nil {
			names, _ = tpl.order()
		}
		st.Op = &operation{Touched: names}
		for i := 0; i < len(names); {
			if st.Resources[names[i]] == nil {
				names = append(names[:i], names[i+1:]...)
				continue
			}
			i++
		}
		st.Op.Touched = names
		s.startCreateRollback(st, "User Initiated", now)
		s.startOp(st, st.Op, now)
	default:
		return nil, validation("Stack %s is in %s state and can not be rolled back (only UPDATE_FAILED or CREATE_FAILED can)", st.Name, st.Status)
	}
	return struct{ StackId string }{st.ID}, nil
}

func (s *Service) cancelUpdateStack(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	if st.Status != "UPDATE_IN_PROGRESS" || st.Op == nil {
		return nil, validation("CancelUpdateStack cannot be called from current stack status %s", st.Status)
	}
	now := s.clk.Now()
	if st.Op.Started {
		st.Op.Started = false
	}
	s.startUpdateRollback(st, "Stack cancel requested", now)
	s.startOp(st, st.Op, now)
	return nil, nil
}
