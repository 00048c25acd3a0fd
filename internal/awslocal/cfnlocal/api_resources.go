package cfnlocal

type xResource struct {
	StackName            string `xml:",omitempty"`
	StackId              string `xml:",omitempty"`
	LogicalResourceId    string
	PhysicalResourceId   string `xml:",omitempty"`
	ResourceType         string
	Timestamp            *xtime `xml:",omitempty"`
	LastUpdatedTimestamp *xtime `xml:",omitempty"`
	ResourceStatus       string
	ResourceStatusReason string `xml:",omitempty"`
	DriftInformation     struct {
		StackResourceDriftStatus string
		LastCheckTimestamp       *xtime `xml:",omitempty"`
	}
}

func (s *Service) xresource(st *stack, r *resource, summary bool) xResource {
	x := xResource{LogicalResourceId: r.LogicalID, PhysicalResourceId: r.PhysicalID, ResourceType: r.Type,
		ResourceStatus: r.Status, ResourceStatusReason: r.Reason}
	if summary {
		x.LastUpdatedTimestamp = tp(r.Updated)
	} else {
		x.StackName, x.StackId, x.Timestamp = st.Name, st.ID, tp(r.Updated)
	}
	x.DriftInformation.StackResourceDriftStatus = orDefault(r.DriftStatus, "NOT_CHECKED")
	x.DriftInformation.LastCheckTimestamp = tp(r.DriftChecked)
	return x
}

func (s *Service) describeStackResources(f form) (any, error) {
	name := f.get("StackName")
	var st *stack
	if name == "" && f.get("PhysicalResourceId") != "" {
		for _, c := range s.st.Stacks {
			for _, r := range c.Resources {
				if r.PhysicalID == f.get("PhysicalResourceId") {
					st = c
				}
			}
		}
		if st == nil {
			return nil, validation("Stack for %s does not exist", f.get("PhysicalResourceId"))
		}
	} else {
		var err error
		if st, err = s.mustStack(name); err != nil {
			return nil, err
		}
	}
	var out []xResource
	for _, n := range sortedKeys(st.Resources) {
		if lid := f.get("LogicalResourceId"); lid != "" && lid != n {
			continue
		}
		out = append(out, s.xresource(st, st.Resources[n], false))
	}
	return struct {
		StackResources []xResource `xml:"StackResources>member"`
	}{out}, nil
}

func (s *Service) describeStackResource(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	r := st.Resources[f.get("LogicalResourceId")]
	if r == nil {
		return nil, validation("Resource %s does not exist for stack %s", f.get("LogicalResourceId"), st.Name)
	}
	x := s.xresource(st, r, false)
	return struct {
		StackResourceDetail struct {
			xResource
			LastUpdatedTimestamp *xtime
		}
	}{struct {
		xResource
		LastUpdatedTimestamp *xtime
	}{x, tp(r.Updated)}}, nil
}

func (s *Service) listStackResources(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	var out []xResource
	for _, n := range sortedKeys(st.Resources) {
		out = append(out, s.xresource(st, st.Resources[n], true))
	}
	pg, next, err := page(out, f.get("NextToken"), s.o.PageSize)
	if err != nil {
		return nil, err
	}
	return struct {
		StackResourceSummaries []xResource `xml:"StackResourceSummaries>member"`
		NextToken              string      `xml:",omitempty"`
	}{pg, next}, nil
}
