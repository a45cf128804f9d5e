package vpcrender

import (
	"encoding/json"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/cozyid"
)

// kubeovnAPIVersion is the API version of every Kube-OVN kind rendered.
var kubeovnAPIVersion = kubeovnv1.GroupVersion.String()

// Render checks s and returns the VPC's objects. Every refusal found is
// returned at once, joined; each is a *RefusalError (see Refusals).
func Render(s Spec) (Rendering, error) {
	var rf refusals
	checkIdentity(s, &rf)
	vpcID := cozyid.VPC(s.Namespace, cozyid.VPCName(s.Name))
	plans := planSubnets(s, vpcID, &rf)
	peerings := planPeerings(s, vpcID, &rf)
	routes := checkRoutes(s, plans, &rf)
	checkReleasable(s, vpcID, plans, &rf)
	egress := planEgress(s, vpcID, plans, &rf)
	if err := rf.err(); err != nil {
		return Rendering{}, err
	}
	b := builder{ns: s.Namespace, vpcID: string(vpcID), release: cozyid.Release(cozyid.VPCName(s.Name))}
	vpc := b.vpc(peerings, routes)
	if egress != nil {
		vpc.Spec.PolicyRoutes = egressPolicyRoutes(routes)
	}
	objs := []any{vpc}
	for _, p := range plans {
		objs = append(objs, b.nad(p), b.subnet(p))
		if p.proxmox != nil {
			objs = append(objs, b.pool(p), b.network(p))
		}
	}
	if egress != nil {
		if egress.internalCIDR != "" {
			objs = append(objs, b.egressSubnet(egress))
		}
		objs = append(objs, b.egressGateway(egress))
	}
	return Rendering{VPCID: string(vpcID), Objects: objs}, nil
}

type builder struct {
	ns, vpcID, release string
}

func (b builder) labels(subnet string) map[string]string {
	l := map[string]string{LabelVPCID: b.vpcID, LabelVPCName: b.release, LabelTenantName: b.ns}
	if subnet != "" {
		l[LabelSubnetName] = subnet
	}
	return l
}

func (b builder) vpc(peerings []VpcPeering, routes []parsedRoute) *Vpc {
	v := &Vpc{
		TypeMeta: typeMeta(kubeovnAPIVersion, "Vpc"),
		ObjectMeta: metav1.ObjectMeta{Name: b.vpcID, Labels: map[string]string{
			LabelVPCName: b.release, LabelTenantName: b.ns,
		}},
		Spec: VpcSpec{Namespaces: []string{b.ns}, VpcPeerings: peerings},
	}
	for _, r := range routes {
		v.Spec.StaticRoutes = append(v.Spec.StaticRoutes, StaticRoute{CIDR: r.route.CIDR, NextHopIP: r.route.NextHopIP})
	}
	return v
}

func (b builder) provider(id string) string { return id + "." + b.ns + ".ovn" }

func (b builder) nad(p subnetPlan) *NetworkAttachmentDefinition {
	cfg, err := json.Marshal(struct {
		CNIVersion   string `json:"cniVersion"`
		Type         string `json:"type"`
		ServerSocket string `json:"server_socket"`
		Provider     string `json:"provider"`
	}{nadCNIVersion, "kube-ovn", kubeOVNServerSock, b.provider(p.id)})
	if err != nil {
		panic(fmt.Sprintf("vpcrender: a struct of strings failed to marshal: %v", err))
	}
	return &NetworkAttachmentDefinition{
		TypeMeta:   typeMeta(NADAPIVersion, "NetworkAttachmentDefinition"),
		ObjectMeta: metav1.ObjectMeta{Name: p.id, Namespace: b.ns, Labels: b.labels(p.spec.Name)},
		Spec:       NADSpec{Config: string(cfg)},
	}
}

func (b builder) subnet(p subnetPlan) *kubeovnv1.Subnet {
	s := &kubeovnv1.Subnet{
		TypeMeta:   typeMeta(kubeovnAPIVersion, "Subnet"),
		ObjectMeta: metav1.ObjectMeta{Name: p.id, Labels: b.labels(p.spec.Name)},
		Spec: kubeovnv1.SubnetSpec{
			Vpc:       b.vpcID,
			CIDRBlock: p.spec.CIDR,
			Provider:  b.provider(p.id),
			Protocol:  protocol(p),
			EnableLb:  ptr.To(false),
			Private:   ptr.To(true),
		},
	}
	if px := p.proxmox; px != nil {
		s.Labels[LabelZone] = px.zone.Name
		s.Spec.Private = ptr.To(false)
		s.Spec.Gateway = px.gateway.String()
		s.Spec.ExcludeIps = []string{px.from.String() + ".." + px.to.String()}
		s.Spec.Vlan = p.id
		s.Spec.LogicalGateway = true
		s.Spec.MTU = px.zone.MTU
	} else {
		s.Spec.AllowSubnets = p.spec.AllowSubnets
	}
	return s
}

func protocol(p subnetPlan) string {
	if len(p.prefixes) == 2 {
		return "Dual"
	}
	if p.prefixes[0].Addr().Is4() {
		return "IPv4"
	}
	return "IPv6"
}

func (b builder) pool(p subnetPlan) *ipamv1alpha2.InClusterIPPool {
	px := p.proxmox
	return &ipamv1alpha2.InClusterIPPool{
		TypeMeta: typeMeta(ipamv1alpha2.GroupVersion.String(), "InClusterIPPool"),
		ObjectMeta: metav1.ObjectMeta{
			Name: p.id, Namespace: b.ns, Labels: b.labels(p.spec.Name),
			Annotations: map[string]string{
				AnnotationMetric:            strconv.Itoa(routeMetricBase + p.index),
				AnnotationSkipDeleteWebhook: "",
			},
		},
		Spec: ipamv1alpha2.InClusterIPPoolSpec{
			Addresses: []string{px.from.String() + "-" + px.to.String()},
			Prefix:    px.prefix.Bits(),
			Gateway:   px.gateway.String(),
		},
	}
}

func (b builder) network(p subnetPlan) *v1alpha1.ProxmoxNetwork {
	return &v1alpha1.ProxmoxNetwork{
		TypeMeta:   typeMeta(v1alpha1.GroupVersion.String(), "ProxmoxNetwork"),
		ObjectMeta: metav1.ObjectMeta{Name: p.id, Namespace: b.ns, Labels: b.labels(p.spec.Name)},
		Spec:       v1alpha1.ProxmoxNetworkSpec{Zone: p.proxmox.zone.Name, Subnet: p.id, IPPool: p.id},
	}
}

func (b builder) egressSubnet(e *egressPlan) *kubeovnv1.Subnet {
	l := b.labels("")
	l[LabelEgressSubnet] = "true"
	return &kubeovnv1.Subnet{
		TypeMeta:   typeMeta(kubeovnAPIVersion, "Subnet"),
		ObjectMeta: metav1.ObjectMeta{Name: e.internalID, Labels: l},
		Spec: kubeovnv1.SubnetSpec{Vpc: b.vpcID, CIDRBlock: e.internalCIDR, Protocol: "IPv4",
			EnableLb: ptr.To(false), Private: ptr.To(false)},
	}
}

// egressGateway runs in the zone's platform namespace: its pods need
// privileges a tenant namespace refuses. Its name carries the VPC id, so
// gateways of different tenants never collide there.
func (b builder) egressGateway(e *egressPlan) *VpcEgressGateway {
	g := &VpcEgressGateway{
		TypeMeta:   typeMeta(kubeovnAPIVersion, "VpcEgressGateway"),
		ObjectMeta: metav1.ObjectMeta{Name: b.vpcID + "-egress", Namespace: e.zone.Egress.GatewayNamespace, Labels: b.labels("")},
		Spec: EgressGatewaySpec{
			Vpc:            b.vpcID,
			Replicas:       e.replicas,
			InternalSubnet: e.internalID,
			ExternalSubnet: e.zone.Egress.ExternalSubnet,
			Policies:       []EgressPolicy{{SNAT: true, Subnets: e.ids}},
		},
	}
	if pn := e.zone.ProviderNetwork; pn != "" {
		g.Spec.NodeSelector = []metav1.LabelSelector{{MatchLabels: map[string]string{fmt.Sprintf(providerReadyLabel, pn): "true"}}}
	}
	return g
}
