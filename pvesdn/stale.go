package pvesdn

import "fmt"

// WithLastKnown completes a report with an earlier one: a node that could
// not be read now but was read before keeps its earlier view and findings,
// marked Stale, and when the cluster itself could not be read every node of
// the earlier report does. Its carryable VLANs are cut to the zone's
// current VLANs. prev may be nil.
func (r *Report) WithLastKnown(prev *Report, z Zone) *Report {
	if prev == nil {
		return r
	}
	out := *r
	out.Findings = append([]Finding{}, r.Findings...)
	known := map[string]NodeView{}
	for _, p := range prev.Nodes {
		if p.Read {
			known[p.Name] = p
		}
	}
	if r.Error != "" {
		out.Nodes = nil
		for _, p := range prev.Nodes {
			if p.Read {
				p = out.stale(prev, p, r.Error, z)
			}
			out.Nodes = append(out.Nodes, p)
		}
		return &out
	}
	out.Nodes = append([]NodeView{}, r.Nodes...)
	for i, n := range r.Nodes {
		if p, ok := known[n.Name]; ok && !n.Read {
			out.Nodes[i] = out.stale(prev, p, n.Error, z)
			out.markStale(n.Name)
		}
	}
	return &out
}

// stale returns a node's earlier view marked stale, cut to the zone's
// VLANs, and adds its earlier findings.
func (r *Report) stale(prev *Report, p NodeView, why string, z Zone) NodeView {
	p.Stale, p.Error = true, why
	p.Carryable = p.Carryable.Intersect(&z.VLANs)
	p.CarryableVLANs = p.Carryable.String()
	for _, f := range prev.Findings {
		if f.Node == p.Name && f.Code != NodeUnreadable {
			r.Findings = append(r.Findings, f)
		}
	}
	return p
}

// markStale rewrites a node's NodeUnreadable finding: its last view is
// used, so the finding takes no VLAN away by itself.
func (r *Report) markStale(node string) {
	for j, f := range r.Findings {
		if f.Code == NodeUnreadable && f.Node == node {
			r.Findings[j].VLANs = ""
			r.Findings[j].Message = fmt.Sprintf("%s; its last known view is used, marked stale", f.Message)
			r.Findings[j].Action = "bring the node back"
		}
	}
}
