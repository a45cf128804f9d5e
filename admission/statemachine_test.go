package admission

import (
	"sort"
	"testing"

	"pgregory.net/rapid"
)

// podLife plays a pod's annotations through CREATE and a run of UPDATEs
// against a trivial model: a vocabulary of values whose foreignness is
// known. The model says an UPDATE is refused exactly when a new or changed
// Multus annotation holds a foreign value (switch pins are judged on CREATE
// only), and a CREATE when any annotation is foreign or a pin is not the
// namespace's default switch. A refused request leaves the pod as it was.
type podLife struct {
	v       *Validator
	current map[string]string // the pod as stored
}

var (
	networkValues = map[string]bool{ // value -> foreign in tenant-a
		"": false, "net": false, "tenant-a/net@eth1": false, " net , tenant-a/x ": false,
		`[{"name":"x"}]`: false, `[{"name":"x","namespace":"tenant-a"}]`: false,
		"tenant-b/net": true, "net,tenant-b/x": true, `[{"name":"x","namespace":"tenant-b"}]`: true,
		"a / b": true, `[{"name":"x","n\u0061mespace":"tenant-a"}]`: true, ",": true,
	}
	defaultValues = map[string]bool{"tenant-a/net": false, "tenant-a/net@eth0": false, "net": true, "tenant-b/net": true, `{"name":"net"}`: true}
	pinValues     = map[string]bool{"ovn-default": false, "subnet-a": true, "": true}
	pinKeys       = []string{AnnotationLogicalSwitch, "net1.tenant-a.ovn.kubernetes.io/logical_switch"}
)

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// foreignInModel is the model's verdict on one annotation.
func foreignInModel(k, val string, create bool) bool {
	switch k {
	case AnnotationNetworks:
		return networkValues[val]
	case AnnotationDefaultNetwork:
		return defaultValues[val]
	case pinKeys[0]:
		return create && pinValues[val]
	case pinKeys[1]:
		return create
	}
	return false
}

func (p *podLife) submit(t *rapid.T, next map[string]string, op string) {
	var old m
	if op == OperationUpdate {
		old = pod(p.current)
	}
	req := input{op: op, kind: gvkPod, ns: owning(), obj: pod(next), old: old}
	d, err := p.v.Review(req.request(t), req.ns)
	if err != nil {
		t.Fatal(err)
	}
	want := false
	for k, val := range next {
		if prev, ok := p.current[k]; op == OperationUpdate && ok && prev == val {
			continue
		}
		want = want || foreignInModel(k, val, op == OperationCreate)
	}
	if d.Allowed == want {
		t.Fatalf("%s %v over %v: model refuses=%v, validator %+v", op, next, p.current, want, d)
	}
	if d.Allowed {
		p.current = next
	}
}

func (p *podLife) edit(t *rapid.T, key, value string) {
	next := map[string]string{}
	for k, v := range p.current {
		next[k] = v
	}
	next[key] = value
	p.submit(t, next, OperationUpdate)
}

func TestPodAnnotationLife(t *testing.T) {
	v := mustValidator(t, testConfig())
	rapid.Check(t, func(t *rapid.T) {
		p := &podLife{v: v, current: map[string]string{}}
		t.Repeat(map[string]func(*rapid.T){
			"networks": func(t *rapid.T) {
				p.edit(t, AnnotationNetworks, rapid.SampledFrom(sortedKeys(networkValues)).Draw(t, "value"))
			},
			"default": func(t *rapid.T) {
				p.edit(t, AnnotationDefaultNetwork, rapid.SampledFrom(sortedKeys(defaultValues)).Draw(t, "value"))
			},
			"pin": func(t *rapid.T) {
				p.edit(t, rapid.SampledFrom(pinKeys).Draw(t, "key"), rapid.SampledFrom(sortedKeys(pinValues)).Draw(t, "value"))
			},
			"unrelated": func(t *rapid.T) {
				p.edit(t, "example.com/note", rapid.StringMatching(`[a-z/,]{0,8}`).Draw(t, "value"))
			},
			"remove": func(t *rapid.T) {
				keys := make([]string, 0, len(p.current))
				for k := range p.current {
					keys = append(keys, k)
				}
				if len(keys) == 0 {
					return
				}
				sort.Strings(keys)
				next := map[string]string{}
				drop := rapid.SampledFrom(keys).Draw(t, "key")
				for k, v := range p.current {
					if k != drop {
						next[k] = v
					}
				}
				p.submit(t, next, OperationUpdate) // removing never reaches further
			},
			"recreate": func(t *rapid.T) {
				keep := p.current
				p.submit(t, keep, OperationCreate)
				p.current = keep // a copy is a new pod; the stored one stays
			},
		})
	})
}
