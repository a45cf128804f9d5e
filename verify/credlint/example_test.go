package credlint_test

import (
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/verify/credlint"
)

func ExampleLint() {
	s := credlint.Secret{Namespace: "cozy-capi", Name: "capmox-config", Data: map[string]string{
		"PROXMOX_URL":    "https://pve.example:8006/api2/json",
		"PROXMOX_TOKEN":  "capmox@pve!capi",
		"PROXMOX_SECRET": "5f1c1e9a-8d8b-4a5e-9c1b-2f0e6b7a9d31",
	}}
	for _, f := range credlint.Lint([]credlint.Secret{s}) {
		fmt.Println(f.Severity, f.Code, "->", f.Fix)
	}
	// Output: error DoubledAPIPath -> set PROXMOX_URL to https://pve.example:8006
}
