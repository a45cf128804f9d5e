package demo

import (
	"context"
	"fmt"
	"sort"
	"strings"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/pveacl/audit"
	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// tenantsSpec is the hypervisor isolation of the demo's two tenants: one
// pool, user, role set and disk storage each.
const tenantsSpec = `tenants:
- name: alpha
  storage: alpha-disks
- name: beta
  storage: beta-disks
`

// Invariant names the platform acts add.
const (
	CheckAuditClean     = "tenant ACLs on the Proxmox API audit clean, and a second plan is empty"
	CheckTemplateTags   = "no two Talos templates carry the same tag set"
	CheckRenderRefusals = "rendered cluster and pool objects pass capmox's and admission's checks"
	CheckAdmission      = "admission refuses another tenant's VLAN and admits the tenant's own"
)

var actACLs = Act{
	Name: "an admin plans and applies two tenants' ACLs on the Proxmox API, then audits them",
	Play: func(ctx context.Context, s *Stage) error {
		spec, err := tenantplan.LoadTenants([]byte(tenantsSpec))
		if err != nil {
			return fmt.Errorf("cannot load the tenants' specification: %w", err)
		}
		c, err := s.proxmox()
		if err != nil {
			return err
		}
		observed, err := liveacl.Read(ctx, c)
		if err != nil {
			return fmt.Errorf("cannot read the access control of the Proxmox API: %w", err)
		}
		plan, err := tenantplan.Plan(spec, observed)
		if err != nil {
			return fmt.Errorf("cannot plan the tenants' ACLs: %w", err)
		}
		s.Say("plan: %d changes on a fresh cluster", len(plan))
		sink := &memorySink{}
		res, err := liveacl.Apply(ctx, c, spec, liveacl.WithSecretSink(sink),
			liveacl.WithSecretContext(s.PVE.URL, "pve"))
		if err != nil {
			return fmt.Errorf("cannot apply the tenants' ACLs: %w", err)
		}
		s.appliedTable(res)
		return s.audit(ctx, c, spec)
	},
}

// audit reads the live access control back, audits it, plans again and
// records whether both are clean.
func (s *Stage) audit(ctx context.Context, c pveapi.Client, spec *tenantplan.Tenants) error {
	live, err := liveacl.Read(ctx, c)
	if err != nil {
		return fmt.Errorf("cannot read the access control back: %w", err)
	}
	rep, err := audit.Run(live, spec)
	if err != nil {
		return fmt.Errorf("cannot audit the tenants' ACLs: %w", err)
	}
	again, err := tenantplan.Plan(spec, live)
	if err != nil {
		return fmt.Errorf("cannot plan the tenants' ACLs again: %w", err)
	}
	s.Say("audit: %d tenants, %d users and tokens, %d foreign objects checked; %d findings; plan again: %d changes",
		rep.Tenants, rep.Subjects, rep.Objects, len(rep.Findings), len(again))
	var problems []string
	for _, f := range rep.Findings {
		problems = append(problems, fmt.Sprintf("%s %s %s %s", f.Severity, f.Code, f.Subject, f.Path))
	}
	for _, ch := range again {
		problems = append(problems, "still to do: "+tenantplan.PveumCommand(ch))
	}
	s.Check(CheckAuditClean, len(problems) == 0, strings.Join(problems, "; "))
	return nil
}

// appliedTable prints how many changes of each kind the apply made.
func (s *Stage) appliedTable(res liveacl.Result) {
	count := map[string]int{}
	for _, a := range res.Applied {
		count[string(a.Change.Op)+"\t"+string(a.Outcome)]++
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s.Table([]string{"CHANGE", "OUTCOME", "COUNT"}, func(row func(...any)) {
		for _, k := range keys {
			op, outcome, _ := strings.Cut(k, "\t")
			row(op, outcome, count[k])
		}
	})
	s.Table([]string{"NEW TOKEN", "SECRET STORED IN"}, func(row func(...any)) {
		for _, sec := range res.Secrets {
			row(sec.TokenID, sec.Location)
		}
	})
}

// Check adds a row to the final invariants table.
func (s *Stage) Check(name string, holds bool, detail string) {
	if holds {
		detail = ""
	}
	s.Checks = append(s.Checks, sim.Invariant{Name: name, Holds: holds, Detail: detail})
}

// proxmox starts the Proxmox VE API fake on first use, with the tenants'
// disk storages, and returns a client holding the root token.
func (s *Stage) proxmox() (*proxmox.Client, error) {
	if s.PVE == nil {
		srv, err := pvefake.New(pvefake.WithDownloader(factoryImages{}))
		if err != nil {
			return nil, err
		}
		s.PVE = srv
		for _, id := range []string{"alpha-disks", "beta-disks"} {
			if err := srv.AddStorage(pvefake.StorageSpec{ID: id, Type: "lvmthin", Content: []string{"images"}}); err != nil {
				return nil, fmt.Errorf("cannot add storage %s to the Proxmox VE API: %w", id, err)
			}
		}
	}
	// The fake serves plain HTTP inside this process only.
	return pveapi.New(pveapi.Config{URL: s.PVE.URL, TokenID: s.PVE.RootTokenID, Secret: s.PVE.RootSecret,
		AllowPlainHTTP: true, Transport: s.PVE.HTTPClient().Transport})
}

func (s *Stage) closePVE() {
	if s.PVE != nil {
		s.PVE.Close()
		s.PVE = nil
	}
}

// memorySink keeps new token secrets in memory; the demo never prints them.
type memorySink struct{ secrets []liveacl.TokenSecret }

func (m *memorySink) Check([]string) error { return nil }

func (m *memorySink) Store(t liveacl.TokenSecret) (string, error) {
	m.secrets = append(m.secrets, t)
	return "memory (Secret " + liveacl.SecretName(t.TokenID) + ")", nil
}
