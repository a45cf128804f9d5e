package controller_test

import (
	"errors"
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/internal/controller"
)

func ExampleParseSecretRef() {
	ref, err := controller.ParseSecretRef("cozy-kubeovn/kube-ovn-tls")
	fmt.Println(ref.Namespace, ref.Name, err)
	_, err = controller.ParseSecretRef("kube-ovn-tls")
	fmt.Println(errors.Is(err, controller.ErrFlags), err)
	// Output:
	// cozy-kubeovn kube-ovn-tls <nil>
	// true secret "kube-ovn-tls": invalid flags: want <namespace>/<name>, e.g. cozy-kubeovn/kube-ovn-tls
}

// The flags are checked all at once, before anything starts.
func ExampleOptions_Validate() {
	o := controller.DefaultOptions()
	o.OVNTLSSecret = ""
	o.SubnetPruneTimeout = 0
	fmt.Println(o.Validate())
	// Output:
	// invalid flags: --ovn-nb-address "ssl:ovn-nb.cozy-kubeovn.svc:6641" has ssl: endpoints, so --ovn-tls-secret must name the Secret holding cacert, cert and key
	// invalid flags: --subnet-prune-timeout 0s must be positive
}
