package capmoxrender

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// DefaultImageFactoryURL is the chart's talos.imageFactoryURL.
const DefaultImageFactoryURL = "https://factory.talos.dev"

// planTalosSources reads where the pool's Talos comes from:
// talos.imageFactoryURL, whose host serves the installer image
// (<host>/installer) when talos.installerRepository is not given, and
// talos.registryMirrors, the workers' registry mirrors. A Proxmox worker's
// disk is cloned from the Proxmox template, not imported from the
// factory, so the factory reaches the worker through its installer (the
// image an upgrade writes) alone; build the template from the same
// factory (`pxsubstrate template create`, spec.factoryURL).
func planTalosSources(p *nodesPlan, s NodesSpec, _ Options) error {
	if f := s.Talos.ImageFactoryURL; f != "" {
		u, err := url.Parse(f)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(f, " \t") {
			return refuse("talos.imageFactoryURL", "talos.imageFactoryURL %q is not an http(s) URL of an Image Factory, such as https://factory.talos.dev", f)
		}
		if s.Talos.InstallerRepository == "" {
			p.talos.InstallerRepository = u.Host + strings.TrimSuffix(u.Path, "/") + "/installer"
		}
	}
	p.talos.InstallerRepository = strings.TrimSuffix(p.talos.InstallerRepository, "/")
	if len(s.Talos.RegistryMirrors) == 0 {
		return nil
	}
	hosts := make([]string, 0, len(s.Talos.RegistryMirrors))
	for h := range s.Talos.RegistryMirrors {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	for _, h := range hosts {
		if err := checkMirror(h, s.Talos.RegistryMirrors[h]); err != nil {
			return err
		}
	}
	p.mirrors = s.Talos.RegistryMirrors
	return nil
}

// checkMirror holds one mirror to what Talos takes: a registry host (or
// "*" for every registry) and at least one http(s) endpoint.
func checkMirror(host string, m RegistryMirror) error {
	f := "talos.registryMirrors[" + termsafe.Cut(host) + "]"
	if host != "*" && (host == "" || strings.ContainsAny(host, "/ \t@") || strings.Contains(host, "://")) {
		return refuse(f, "%s: %q is not a registry host such as ghcr.io or registry.local:5000 (or * for every registry)", f, host)
	}
	if len(m.Endpoints) == 0 {
		return refuse(f+".endpoints", "%s.endpoints is empty: list the mirror's URLs, such as https://mirror.local/v2 or http://10.0.0.5:5000", f)
	}
	for i, e := range m.Endpoints {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ContainsAny(e, " \t") {
			ef := fmt.Sprintf("%s.endpoints[%d]", f, i)
			return refuse(ef, "%s %q is not an http(s) URL of a registry, such as https://mirror.local", ef, e)
		}
	}
	return nil
}
