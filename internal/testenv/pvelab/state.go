package pvelab

import (
	"encoding/json"
	"fmt"
	"os"
)

// State is what a fake running as a program of its own (pvefake) tells
// the processes that use it, in its --state file.
type State struct {
	// URL is the API's address, ending in /api2/json.
	URL string `json:"url"`
	// CAFile holds the PEM certificate the fake serves with.
	CAFile string `json:"caFile"`
	// TokenID is root@pam's token; TokenSecretFile holds its secret
	// (mode 0600), for inspection and for the lab's ACL apply.
	TokenID         string `json:"tokenID"`
	TokenSecretFile string `json:"tokenSecretFile"`
	// Template is the Talos template the fake made.
	Template Template `json:"template"`
	// Pid is the fake's process id.
	Pid int `json:"pid"`
}

// WriteState writes s to path whole or not at all: a reader never sees
// half a file.
func WriteState(path string, s State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadState reads a state file WriteState wrote; a file missing a field
// is refused by that field's name.
func ReadState(path string) (State, error) {
	var s State
	data, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	for name, v := range map[string]string{"url": s.URL, "caFile": s.CAFile, "tokenID": s.TokenID, "tokenSecretFile": s.TokenSecretFile} {
		if v == "" {
			return s, fmt.Errorf("%s: %s is empty", path, name)
		}
	}
	if s.Template.VMID == 0 {
		return s, fmt.Errorf("%s: template.vmid is empty", path)
	}
	return s, nil
}
