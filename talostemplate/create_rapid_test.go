package talostemplate_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

// createModel is what the cluster should hold after a sequence of Create
// runs, failures and removals.
type createModel struct {
	// templates maps VMIDs of finished templates to their tag string.
	templates map[int]string
	// broken are VMIDs of VMs a failed run left, not templates.
	broken map[int]bool
	// image is true while the image volume is on local.
	image bool
	// left are the leftovers the last failed runs reported, not yet removed.
	left []talostemplate.Leftover
}

var (
	rapidTagSets = []string{"talos", "talos,pool-a", "pool-a,talos,x", "cozystack"}
	rapidFaults  = []string{"", "download", "qmcreate", "resize", "qmtemplate", "imgdel"}
)

// TestCreateStateMachine runs Create with random VMIDs, tag sets, reuse
// flags and task failures against the fake, removes what failed runs
// report as left by following their API calls, and checks after every step
// that the fake holds exactly what the model says: the templates, the
// broken VMs and the image that the errors named, and never two templates
// with one tag set.
func TestCreateStateMachine(t *testing.T) {
	factory := newFactory(t)
	fewerChecks(t, 30)
	rapid.Check(t, func(rt *rapid.T) {
		fake, err := pvefake.New()
		if err != nil {
			rt.Fatal(err)
		}
		defer fake.Close()
		srv := fake
		c := srv.Client()
		m := &createModel{templates: map[int]string{}, broken: map[int]bool{}}
		rt.Repeat(map[string]func(*rapid.T){
			"create": func(rt *rapid.T) {
				vmid := rapid.IntRange(9000, 9004).Draw(rt, "vmid")
				tags := rapid.SampledFrom(rapidTagSets).Draw(rt, "tags")
				fault := rapid.SampledFrom(rapidFaults).Draw(rt, "fault")
				reuse := rapid.Bool().Draw(rt, "reuse")
				if fault != "" {
					fake.FailNextTask(fault, "injected failure of "+fault)
				}
				opts := fastOpts()
				opts.ReuseImage = reuse
				res, err := talostemplate.Create(context.Background(), c, testSpec(rt, factory.URL, vmid, tags), opts)
				fake.ClearFaults()
				m.expectCreate(rt, vmid, tags, fault, reuse, res, err)
			},
			"remove": func(rt *rapid.T) {
				if len(m.left) == 0 {
					return // nothing left over
				}
				i := rapid.IntRange(0, len(m.left)-1).Draw(rt, "leftover")
				l := m.left[i]
				if err := removeLeftover(context.Background(), c, l); err != nil {
					rt.Fatalf("following %q: %v", l.API, err)
				}
				m.left = slices.Delete(m.left, i, i+1)
				switch l.Kind {
				case talostemplate.LeftVM:
					delete(m.broken, l.VMID)
				case talostemplate.LeftImage:
					m.image = false
				}
			},
			"": func(rt *rapid.T) { m.check(rt, fake) },
		})
	})
}

// expectCreate checks one run's outcome against the model and updates it.
func (m *createModel) expectCreate(rt *rapid.T, vmid int, tags, fault string, reuse bool, res talostemplate.CreateResult, err error) {
	norm := strings.Join(sortedTags(tags), ";")
	switch {
	case m.taken(vmid):
		m.expectErr(rt, err, talostemplate.ErrVMIDTaken)
		return
	case slices.Contains(slices.Collect(maps.Values(m.templates)), norm):
		m.expectErr(rt, err, talostemplate.ErrTagSetTaken)
		return
	case m.image && !reuse:
		m.expectErr(rt, err, talostemplate.ErrImageExists)
		return
	}
	if m.image {
		fault = strings.TrimPrefix(fault, "download") // a reused image is not downloaded
	}
	switch fault {
	case "", "imgdel":
		if err != nil {
			rt.Fatalf("create %d with fault %q: %v", vmid, fault, err)
		}
		m.templates[vmid] = norm
		m.image = fault == "imgdel"
		m.left = slices.DeleteFunc(m.left, func(l talostemplate.Leftover) bool { return l.Kind == talostemplate.LeftImage })
		m.left = append(m.left, res.Left...)
		if len(res.Left) != b2n(m.image) {
			rt.Fatalf("a failed cleanup reports the image, a clean one nothing: %+v", res.Left)
		}
		return
	}
	var ce *talostemplate.CreateError
	if !errors.As(err, &ce) || !errors.Is(err, talostemplate.ErrTaskFailed) {
		rt.Fatalf("fault %q: want a task failure, got %v", fault, err)
	}
	m.image = true
	if fault == "download" {
		m.image = false
	}
	if fault == "resize" || fault == "qmtemplate" {
		m.broken[vmid] = true
	}
	var vms, images int
	for _, l := range ce.Left {
		switch {
		case l.Kind == talostemplate.LeftVM && l.VMID == vmid && !l.Template:
			vms++
		case l.Kind == talostemplate.LeftImage && l.VolID == imageVolume:
			images++
		default:
			rt.Fatalf("unexpected leftover %+v", l)
		}
	}
	if vms != b2n(m.broken[vmid]) || images != b2n(m.image && !reuseOf(res)) {
		rt.Fatalf("fault %q: reported %+v; model broken=%v image=%v", fault, ce.Left, m.broken[vmid], m.image)
	}
	m.left = append(m.left, ce.Left...)
	if m.image && reuseOf(res) && !m.hasLeftImage() {
		rt.Fatalf("the reused image stays listed from the run that left it")
	}
}

func reuseOf(res talostemplate.CreateResult) bool { return res.ImageReused }

func (m *createModel) hasLeftImage() bool {
	return slices.ContainsFunc(m.left, func(l talostemplate.Leftover) bool { return l.Kind == talostemplate.LeftImage })
}

func (m *createModel) taken(vmid int) bool {
	_, tmpl := m.templates[vmid]
	return tmpl || m.broken[vmid]
}

func (m *createModel) expectErr(rt *rapid.T, err, want error) {
	if !errors.Is(err, want) || !strings.Contains(err.Error(), "nothing was changed on the hypervisor") {
		rt.Fatalf("want %v and nothing changed, got %v", want, err)
	}
}

// check compares the fake with the model.
func (m *createModel) check(rt *rapid.T, fake *pvefake.Server) {
	got := map[string]string{}
	seen := map[string]int{}
	for id := 9000; id <= 9004; id++ {
		conf, _, ok := fake.VMConfig(id)
		switch {
		case !ok:
		case conf["template"] == "1":
			got[fmt.Sprint(id)] = conf["tags"]
			seen[conf["tags"]]++
		default:
			got[fmt.Sprint(id)] = "broken"
		}
	}
	want := map[string]string{}
	for id, tags := range m.templates {
		want[fmt.Sprint(id)] = tags
	}
	for id := range m.broken {
		want[fmt.Sprint(id)] = "broken"
	}
	if !maps.Equal(want, got) {
		rt.Fatalf("guests: model %v, fake %v", want, got)
	}
	for tags, n := range seen {
		if n > 1 {
			rt.Fatalf("%d templates carry the tags %s", n, tags)
		}
	}
	var image bool
	for _, v := range fake.Volumes() {
		image = image || v.VolID == imageVolume
	}
	if image != m.image {
		rt.Fatalf("image volume: model %v, fake %v", m.image, image)
	}
}

// fewerChecks lowers rapid's number of checks for a property whose every
// action is a dozen HTTP round trips, unless -rapid.checks was given.
func fewerChecks(t *testing.T, n int) {
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "rapid.checks" })
	f := flag.Lookup("rapid.checks")
	if explicit || f == nil {
		return
	}
	old := f.Value.String()
	if err := f.Value.Set(strconv.Itoa(n)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

func sortedTags(list string) []string {
	tags := strings.Split(list, ",")
	slices.Sort(tags)
	return slices.Compact(tags)
}

func b2n(b bool) int {
	if b {
		return 1
	}
	return 0
}
